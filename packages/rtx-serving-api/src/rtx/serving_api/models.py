"""A served model version: an InferenceSession (with a DynamicBatcher when the model takes a
dynamic batch dimension) or a text generator, its signature, and a count of the requests using
it, so that a version replaced by a hot promotion is closed only after they finish."""
from __future__ import annotations

import asyncio
import logging
import time

import numpy as np

from rtx.serving_api.errors import ServeError
from rtx.serving_api.protocol import DATATYPES, Signature

log = logging.getLogger("rtx.serving_api")

MODULE_FORMAT = "rtx-module/1"  # rtx.hub's checkpoint of an in-memory nn.Module (not a text generator)


class ServedModel:
    """One loaded version. `session` (rtx.inference.InferenceSession, onnxruntime's API) answers
    tensor requests, through `batcher` when there is one; `generator` (rtx.streaming's
    TextGenerator) answers :generate. `signature` is what clients see (rtx.hub's)."""

    def __init__(self, name: str, version: str, stage: str, sha256: str, *, signature: Signature | None,
                 session=None, batcher=None, generator=None, load_seconds: float = 0.0, metadata=None,
                 backend: str = "rtx"):
        self.name, self.version, self.stage, self.sha256 = name, version, stage, sha256
        self.signature = signature
        self.session, self.batcher, self.generator = session, batcher, generator
        self.load_seconds = load_seconds
        self.backend = backend  # what runs the model: "rtx" (rtx.inference / rtx.streaming) or "onnxruntime"
        self.metadata = dict(metadata or {})
        self.in_flight = 0
        self.retired = False
        self.closed = False
        self._batch_sizes_seen: dict = {}
        # The session may name its inputs differently from the registry's signature (a traced
        # module's graph inputs): clients use the signature's names, mapped by position.
        self._session_names = {}
        if session is not None:
            names = [a.name for a in session.get_inputs()]
            if len(names) != len(signature.inputs):
                raise ValueError(f"{name}:{version}: the signature lists inputs {signature.input_names()} "
                                 f"but the model takes {names}")
            self._session_names = dict(zip(signature.input_names(), names))

    def batch_sizes_since_last_look(self, sizes: dict) -> dict:
        """{batch size: batches} added to the batcher's cumulative counts since the previous call."""
        seen, self._batch_sizes_seen = self._batch_sizes_seen, dict(sizes)
        return {k: n - seen.get(k, 0) for k, n in sizes.items() if n > seen.get(k, 0)}

    @property
    def kind(self) -> str:
        return "text-generator" if self.generator is not None else "tensor"

    # ---- lifetime: requests hold a reference; a retired model closes when the last one ends -------

    def acquire(self) -> "ServedModel":
        self.in_flight += 1
        return self

    def release(self) -> None:
        self.in_flight -= 1
        if self.retired and self.in_flight == 0:
            self.close()

    def retire(self) -> None:
        """No new requests will reach this model; close it once the running ones are done."""
        self.retired = True
        if self.in_flight == 0:
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.batcher is not None:
            self.batcher.close()
        log.info("unloaded %s:%s", self.name, self.version)

    # ---- inference -----------------------------------------------------------------------------------

    async def infer(self, feed: dict[str, np.ndarray], output_names: list[str] | None) -> tuple[list[str], list]:
        if self.session is None:
            raise ServeError(400, f"model {self.name}:{self.version} is a text generator; "
                                  f"use POST /v1/models/{self.name}:generate")
        all_names = self.signature.output_names()
        names = output_names or all_names
        feed = {self._session_names[k]: v for k, v in feed.items()}
        batchable = self.batcher is not None and all(a.ndim and a.shape[0] > 0 for a in feed.values())
        try:
            if batchable:
                outs = await self.batcher.infer(feed)
            else:
                outs = await asyncio.to_thread(self.session.run, None, feed)
        except ValueError as e:
            # The session validates too (a shape the signature allows but the graph does not): a client error.
            raise ServeError(400, f"model {self.name}:{self.version} refused the input: {e}") from None
        return names, [np.asarray(outs[all_names.index(n)]) for n in names]


def _example_inputs(sig: Signature):
    """Arrays of the signature's dtypes and shapes (-1 -> 1), for tracing an rtx module."""
    arrays = [np.zeros([1 if d == -1 else d for d in s.shape], dtype=s.dtype) for s in sig.inputs]
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def load_version(mv, batching, backend: str = "auto") -> ServedModel:
    """Load one registry ModelVersion (rtx.hub) into a ServedModel. Blocking: call it in a thread.
    `backend` (auto | onnxruntime | rtx) says what runs ONNX artifacts (rtx.serving_api.backends)."""
    from rtx.inference import DynamicBatcher, InferenceSession
    from rtx.serving_api.backends import OrtSession, choose
    start = time.perf_counter()
    sig = Signature.from_dict(mv.signature) if mv.signature else None
    if sig is not None:
        bad = [t.datatype for t in sig.inputs + sig.outputs if t.datatype not in DATATYPES]
        if bad:
            raise ValueError(f"{mv.name}:{mv.version}: signature datatypes {bad} are not servable "
                             f"(supported: {', '.join(DATATYPES)})")
    session = generator = None
    used = "rtx"
    ckpt_format = getattr(mv, "checkpoint_format", None)
    if mv.format == "onnx":
        used = choose(backend)
        session = OrtSession(mv.verify()) if used == "onnxruntime" else InferenceSession(mv.load())
    elif isinstance(ckpt_format, str) and ckpt_format != MODULE_FORMAT:
        # A checkpoint that names its own format: a text generator (rtx-nlg's "rtx-nlg-gpt/1", ...).
        from rtx.streaming import load_text_generator
        generator = load_text_generator(mv.verify())
    else:
        obj = mv.load()
        if not callable(getattr(obj, "forward", None)):  # an nn.Module (rtx.nn is not a dependency here)
            raise ValueError(f"{mv.name}:{mv.version}: the artifact holds a {type(obj).__name__}, not a model "
                             "(register the nn.Module itself, or an ONNX file, not a state_dict)")
        if sig is None:
            raise ValueError(f"{mv.name}:{mv.version} is an rtx module registered without a signature: "
                             "the server needs one to trace it (register it with example_inputs=...)")
        session = InferenceSession(obj, _example_inputs(sig))
    if session is not None and sig is None:
        sig = Signature.from_session(session)
    batcher = None
    if session is not None and batching.enabled and sig.batchable():
        batcher = DynamicBatcher(session, max_batch_size=batching.max_batch_size, max_wait_ms=batching.max_wait_ms)
    return ServedModel(mv.name, mv.version, mv.stage, mv.sha256, signature=sig, session=session, batcher=batcher,
                       generator=generator, load_seconds=time.perf_counter() - start, metadata=mv.metadata,
                       backend=used)
