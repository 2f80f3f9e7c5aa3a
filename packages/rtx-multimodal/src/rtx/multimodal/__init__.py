"""rtx multimodal: transformers-shaped CLIP (models, tokenizer, image processor, zero-shot, retrieval) and VisionEncoderDecoder captioning."""
__version__ = "0.1.0"
