"""rtx streaming: token streaming over Server-Sent Events with cancellation and backpressure.

    from rtx.streaming import sse_stream, load_text_generator
    gen = load_text_generator("nlg_gpt.rtx")               # any checkpoint with a registered format
    async def generate(request):                           # a Starlette route
        body = await request.json()
        return sse_stream(request, lambda: gen.stream_text(body["prompt"], max_new_tokens=32))
"""
__version__ = "0.1.0"

from rtx.streaming.generators import (
    ENTRY_POINT_GROUP,
    TextGenerator,
    collect_text,
    load_text_generator,
    text_generator_formats,
)
from rtx.streaming.sse import FINISH_REASONS, SSEResponse, sse_stream

__all__ = ["sse_stream", "SSEResponse", "FINISH_REASONS", "TextGenerator", "load_text_generator", "collect_text",
           "text_generator_formats", "ENTRY_POINT_GROUP"]
