"""Text generation: greedy, sampling (temperature, top-k, top-p), repetition penalty, beam search,
stop sequences, batched left-padded prompts, streaming; a KV cache for every step after the prompt."""
from rtx.nlg.generation.config import GenerationConfig
from rtx.nlg.generation.utils import generate, stream, stream_text

__all__ = ["GenerationConfig", "generate", "stream", "stream_text"]
