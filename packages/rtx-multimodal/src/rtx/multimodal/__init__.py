"""rtx multimodal: transformers-shaped CLIP (models, tokenizer, image processor, zero-shot, retrieval)
and VisionEncoderDecoder captioning.

    from rtx.multimodal import CLIPModel, CLIPProcessor, zero_shot_classify
    model = CLIPModel.from_pretrained("ckpt/")
    processor = CLIPProcessor.from_pretrained("ckpt/")
    probs = zero_shot_classify(model, processor, images, ["cat", "dog"], ["a photo of a {}."])
"""
from rtx.multimodal.configuration_clip import CLIPConfig, CLIPTextConfig, CLIPVisionConfig
from rtx.multimodal.image_processing_clip import CLIPImageProcessor
from rtx.multimodal.modeling_clip import (
                                          CLIPModel,
                                          CLIPOutput,
                                          CLIPTextModel,
                                          CLIPTextModelWithProjection,
                                          CLIPVisionModel,
                                          CLIPVisionModelWithProjection,
                                          clip_loss,
                                          contrastive_loss,
)
from rtx.multimodal.modeling_vision_encoder_decoder import (
                                          Seq2SeqLMOutput,
                                          VisionEncoderDecoderConfig,
                                          VisionEncoderDecoderModel,
)
from rtx.multimodal.modeling_vit import ViTConfig, ViTModel
from rtx.multimodal.processing_clip import CLIPProcessor
from rtx.multimodal.tokenization_clip import CLIPTokenizer
from rtx.multimodal.zero_shot import retrieval_metrics, zero_shot_classifier, zero_shot_classify

# The decoder's cache type (self-attention KV plus the cross-attention K/V projected once), for callers that build
# one or check past_key_values; transformers exports it at its top level.
from rtx.transformers.gpt2 import EncoderDecoderCache

__version__ = "0.1.0"

__all__ = ["CLIPConfig", "CLIPTextConfig", "CLIPVisionConfig", "CLIPModel", "CLIPOutput", "CLIPTextModel",
           "CLIPVisionModel", "CLIPTextModelWithProjection", "CLIPVisionModelWithProjection", "clip_loss",
           "contrastive_loss", "CLIPTokenizer", "CLIPImageProcessor", "CLIPProcessor", "zero_shot_classify",
           "zero_shot_classifier", "retrieval_metrics", "ViTConfig", "ViTModel", "VisionEncoderDecoderConfig",
           "VisionEncoderDecoderModel", "Seq2SeqLMOutput", "EncoderDecoderCache"]
