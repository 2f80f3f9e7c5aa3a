"""rtx nlg: tokenizers and text generation.

    from rtx.nlg import ByteLevelBPETokenizer, generate
    tok = ByteLevelBPETokenizer.train(text, vocab_size=512, special_tokens=["<|endoftext|>"])
    out = generate(model, tok(["Once upon", "A"]).input_ids, max_new_tokens=32, do_sample=True, top_p=0.9)
"""
__version__ = "0.1.0"

from rtx.nlg.corpus import load_corpus
from rtx.nlg.generation import GenerationConfig, generate, stream, stream_text
from rtx.nlg.tokenizers import (
    AddedToken,
    BatchEncoding,
    ByteLevelBPETokenizer,
    CharTokenizer,
    Tokenizer,
    bytes_to_unicode,
    load_tokenizer,
)

__all__ = ["Tokenizer", "AddedToken", "BatchEncoding", "ByteLevelBPETokenizer", "CharTokenizer", "bytes_to_unicode",
           "load_tokenizer", "GenerationConfig", "generate", "stream", "stream_text", "load_corpus"]
