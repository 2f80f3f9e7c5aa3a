"""Zero-shot classification with prompt ensembling (Radford et al. 2021, sec. 3.1.4) and retrieval
recall@K in both directions.

    probs = zero_shot_classify(model, processor, images, ["cat", "dog"], ["a photo of a {}."])
    probs.argmax(-1)                                   # predicted class per image
    retrieval_metrics(image_embeds, text_embeds)       # {"image_to_text_R@1": ..., "text_to_image_R@5": ...}
"""
from __future__ import annotations

import numpy as np

import rtx

__all__ = ["zero_shot_classifier", "zero_shot_classify", "retrieval_metrics", "DEFAULT_TEMPLATES"]

DEFAULT_TEMPLATES = ("a photo of a {}.", "a picture of a {}.", "an image of a {}.")


def _unit(x):
    return x / (x * x).sum(-1, keepdim=True).sqrt()


def zero_shot_classifier(model, processor, class_names, templates=DEFAULT_TEMPLATES, batch_size=256):
    """(classes, projection_dim) unit class embeddings: each class's prompts ("a photo of a {}.")
    are embedded and normalised, averaged over the templates, and normalised again (CLIP's ensemble)."""
    if not class_names:
        raise ValueError("zero_shot_classifier: class_names is empty")
    templates = [templates] if isinstance(templates, str) else list(templates)
    if not templates or not all("{}" in t for t in templates):
        raise ValueError(f"each template must hold '{{}}' where the class name goes, got {templates!r}")
    prompts = [t.format(c) for c in class_names for t in templates]
    feats = []
    with rtx.no_grad():
        for i in range(0, len(prompts), batch_size):
            enc = processor.tokenizer(prompts[i:i + batch_size], padding=True, truncation=True, return_tensors="rtx")
            feats.append(_unit(model.get_text_features(input_ids=enc["input_ids"],
                                                       attention_mask=enc["attention_mask"])))
        feats = rtx.cat(feats, 0).reshape(len(class_names), len(templates), -1).mean(1)
    return _unit(feats)


def zero_shot_classify(model, processor, images, class_names, templates=DEFAULT_TEMPLATES, batch_size=256):
    """(images, classes) probabilities: softmax over the classes of the scaled cosine similarity
    between each image and each class's ensembled prompt embedding. `images`: anything
    CLIPImageProcessor takes, or ready pixel_values (a 4-D Tensor)."""
    classifier = zero_shot_classifier(model, processor, class_names, templates, batch_size)
    with rtx.no_grad():
        if isinstance(images, rtx.Tensor) and images.ndim == 4 and images.is_floating_point():
            pixel_values = images
        else:
            pixel_values = processor.image_processor(images, return_tensors="rtx")["pixel_values"]
        feats = [_unit(model.get_image_features(pixel_values=pixel_values[i:i + batch_size]))
                 for i in range(0, pixel_values.shape[0], batch_size)]
        logits = rtx.cat(feats, 0) @ classifier.t() * model.logit_scale.exp()
        return logits.softmax(-1)


def retrieval_metrics(image_embeds, text_embeds, ks=(1, 5, 10), text_to_image=None, image_labels=None,
                      text_labels=None):
    """Recall@K both ways for image i paired with text i (or, with several captions per image,
    `text_to_image[j]` = the image of text j). Embeddings need not be normalised (cosine is used).

    image_to_text_R@K: share of images with a matching text among their K nearest texts;
    text_to_image_R@K: share of texts whose image is among their K nearest images.
    image_labels / text_labels: relevance by class instead (a text is a hit for an image when their
    labels are equal), for galleries where many images share a caption's meaning."""
    img = _np_unit(image_embeds)
    txt = _np_unit(text_embeds)
    if image_labels is not None or text_labels is not None:
        if image_labels is None or text_labels is None or text_to_image is not None:
            raise ValueError("retrieval_metrics: give both image_labels and text_labels (and no text_to_image)")
        ilab, tlab = np.asarray(image_labels), np.asarray(text_labels)
    else:
        tlab = np.arange(len(txt)) if text_to_image is None else np.asarray(text_to_image)
        ilab = np.arange(len(img))
        if text_to_image is None and len(img) != len(txt):
            raise ValueError(f"retrieval_metrics: {len(img)} images and {len(txt)} texts; pass text_to_image "
                             f"(one image index per text) when they are not paired one to one")
    if ilab.shape != (len(img),) or tlab.shape != (len(txt),):
        raise ValueError(f"retrieval_metrics: need one label per image ({len(img)}) and per text ({len(txt)}), got "
                         f"shapes {ilab.shape} and {tlab.shape}")
    sim = img @ txt.T                                       # (images, texts)
    out = {}
    # the rank (0 = first) of the first relevant text for each image, of the first relevant image for each text
    order_i2t = np.argsort(-sim, axis=1, kind="stable")
    first_i2t = (tlab[order_i2t] == ilab[:, None]).argmax(1)
    order_t2i = np.argsort(-sim.T, axis=1, kind="stable")
    first_t2i = (ilab[order_t2i] == tlab[:, None]).argmax(1)
    for k in ks:
        out[f"image_to_text_R@{k}"] = float((first_i2t < k).mean())
        out[f"text_to_image_R@{k}"] = float((first_t2i < k).mean())
    return out


def _np_unit(x):
    a = x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
    a = a.astype(np.float64)
    if a.ndim != 2:
        raise ValueError(f"retrieval_metrics: embeddings must be (n, dim), got shape {a.shape}")
    return a / np.linalg.norm(a, axis=1, keepdims=True)
