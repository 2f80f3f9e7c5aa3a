"""POST /v1/models/{name}:generate: text generation, streamed over Server-Sent Events
(rtx.streaming.sse_stream) or returned whole as JSON."""
from __future__ import annotations

import math

from rtx.serving_api.errors import bad_request

# name -> (accepted Python types, check, what the message says is expected)
_PARAMS = {
    "max_new_tokens": ((int,), lambda v: v >= 1, "an integer >= 1"),
    "temperature": ((int, float), lambda v: math.isfinite(v) and v >= 0, "a number >= 0"),
    "top_k": ((int,), lambda v: v >= 0, "an integer >= 0"),
    "top_p": ((int, float), lambda v: 0 < v <= 1, "a number in (0, 1]"),
    "seed": ((int,), lambda v: 0 <= v < 2 ** 63, "an integer >= 0"),
}


def parse_generate(doc, max_new_tokens_limit: int) -> tuple[str, bool, dict]:
    """A :generate body -> (prompt, stream, params for TextGenerator.stream_text)."""
    if not isinstance(doc, dict):
        raise bad_request(f"the request must be a JSON object with a 'prompt', found {type(doc).__name__}")
    allowed = {"prompt", "stream", "stop", *_PARAMS}
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise bad_request(f"unknown field(s) {unknown}; accepted: {sorted(allowed)}")
    prompt = doc.get("prompt")
    if not isinstance(prompt, str):
        raise bad_request(f"'prompt' must be a string, found {type(prompt).__name__}")
    stream = doc.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request(f"'stream' must be true or false, found {stream!r}")
    params = {}
    for name, (types, ok, expected) in _PARAMS.items():
        if name in doc:
            v = doc[name]
            if isinstance(v, bool) or not isinstance(v, types) or not ok(v):
                raise bad_request(f"{name!r} must be {expected}, found {v!r}")
            params[name] = v
    if params.get("max_new_tokens", 0) > max_new_tokens_limit:
        raise bad_request(f"'max_new_tokens' must be at most {max_new_tokens_limit} (max_new_tokens), "
                          f"found {params['max_new_tokens']}")
    if "stop" in doc:
        stop = doc["stop"]
        if isinstance(stop, str):
            stop = [stop]
        if not (isinstance(stop, list) and all(isinstance(s, str) and s for s in stop)):
            raise bad_request(f"'stop' must be a non-empty string or a list of them, found {doc['stop']!r}")
        params["stop"] = stop
    return prompt, stream, params
