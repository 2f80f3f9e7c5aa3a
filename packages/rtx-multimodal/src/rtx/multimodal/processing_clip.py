"""CLIPProcessor: the tokenizer and the image processor behind one call, as transformers'.

    processor = CLIPProcessor.from_pretrained("ckpt/")
    inputs = processor(text=["a cat", "a dog"], images=[img1, img2], padding=True)
    model(**inputs)        # input_ids, attention_mask, pixel_values
"""
from __future__ import annotations

from rtx.multimodal.image_processing_clip import CLIPImageProcessor
from rtx.multimodal.tokenization_clip import CLIPTokenizer
from rtx.nlg.tokenizers import BatchEncoding

__all__ = ["CLIPProcessor"]


class CLIPProcessor:
    def __init__(self, image_processor: CLIPImageProcessor, tokenizer: CLIPTokenizer):
        self.image_processor, self.tokenizer = image_processor, tokenizer

    @classmethod
    def from_pretrained(cls, path) -> CLIPProcessor:
        return cls(CLIPImageProcessor.from_pretrained(path), CLIPTokenizer.from_pretrained(path))

    def save_pretrained(self, directory) -> None:
        self.image_processor.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)

    def __call__(self, text=None, images=None, return_tensors: str = "rtx", padding=True, truncation=True,
                 max_length=None) -> BatchEncoding:
        """Texts are padded (to the longest by default) and truncated to 77 tokens; images become
        pixel_values. Either may be left out."""
        if text is None and images is None:
            raise ValueError("CLIPProcessor: give text, images or both")
        out = BatchEncoding()
        if text is not None:
            out.update(self.tokenizer(text, padding=padding, truncation=truncation, max_length=max_length,
                                      return_tensors=return_tensors))
        if images is not None:
            out.update(self.image_processor(images, return_tensors=return_tensors))
        return out

    def batch_decode(self, *args, **kwargs):
        return self.tokenizer.batch_decode(*args, **kwargs)

    def decode(self, *args, **kwargs):
        return self.tokenizer.decode(*args, **kwargs)
