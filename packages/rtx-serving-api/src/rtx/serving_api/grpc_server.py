"""gRPC: the Open Inference Protocol's `inference.GRPCInferenceService` (proto/inference.proto),
served by grpcio's asyncio server in the HTTP app's event loop, over the same ModelManager,
concurrency gate, limits and metrics as HTTP.

Requests are checked by the same code as HTTP bodies: a ModelInferRequest becomes the JSON
header + binary part of the binary tensor data extension (raw_input_contents are exactly that
binary part), so datatypes, shapes, sizes and ranges are refused with the same messages. Every
answer carries its tensors in raw_output_contents, as Triton answers. Errors map to status codes:
400/415 -> INVALID_ARGUMENT, 404 -> NOT_FOUND, 413 -> RESOURCE_EXHAUSTED, 503 -> UNAVAILABLE,
408/504 -> DEADLINE_EXCEEDED."""
from __future__ import annotations

import asyncio
import logging
import time

import grpc
import numpy as np

from rtx.serving_api import tensors
from rtx.serving_api.errors import ServeError, bad_request
from rtx.serving_api.generate import parse_generate
from rtx.serving_api.proto import inference_pb2 as pb
from rtx.serving_api.proto import inference_pb2_grpc as pb_grpc
from rtx.serving_api.protocol import Signature, parse_v2_request, v2_response

log = logging.getLogger("rtx.serving_api")

CODES = {400: grpc.StatusCode.INVALID_ARGUMENT, 401: grpc.StatusCode.UNAUTHENTICATED,
         404: grpc.StatusCode.NOT_FOUND, 405: grpc.StatusCode.UNIMPLEMENTED, 408: grpc.StatusCode.DEADLINE_EXCEEDED,
         413: grpc.StatusCode.RESOURCE_EXHAUSTED, 415: grpc.StatusCode.INVALID_ARGUMENT,
         503: grpc.StatusCode.UNAVAILABLE, 504: grpc.StatusCode.DEADLINE_EXCEEDED}

# typed contents field of each datatype (FP16 and BF16 have none: they travel raw only)
CONTENTS = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
            "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
            "UINT32": "uint_contents", "UINT64": "uint64_contents", "FP32": "fp32_contents",
            "FP64": "fp64_contents", "BYTES": "bytes_contents"}

TEXT_INPUT, TEXT_OUTPUT = "text_input", "text_output"  # the names Triton's LLM backends use
# what a text generator's stream request carries: one BYTES prompt
TEXT_SIGNATURE = Signature.from_dict({"inputs": [{"name": TEXT_INPUT, "datatype": "BYTES", "shape": [-1]}]})


def _param(p: pb.InferParameter):
    which = p.WhichOneof("parameter_choice")
    return None if which is None else getattr(p, which)


def request_to_v2(req: pb.ModelInferRequest, sig) -> tuple[dict, list, object, set]:
    """A ModelInferRequest -> parse_v2_request's (feed, output names, id, binary outputs)."""
    raw_parts = list(req.raw_input_contents)
    if raw_parts and len(raw_parts) != len(req.inputs):
        raise bad_request(f"raw_input_contents has {len(raw_parts)} entries for {len(req.inputs)} inputs; "
                          "send one per input, in input order")
    inputs, blobs = [], []
    for i, t in enumerate(req.inputs):
        doc = {"name": t.name, "shape": list(t.shape), "datatype": t.datatype}
        has_contents = t.HasField("contents") and t.contents.ByteSize() > 0
        if raw_parts:
            if has_contents:
                raise bad_request(f"input {t.name!r} has contents while the request uses raw_input_contents; "
                                  "send one or the other")
            blob = raw_parts[i]
        elif t.datatype == "BYTES":
            items = np.empty(len(t.contents.bytes_contents), dtype=object)
            items[:] = list(t.contents.bytes_contents)
            blob = tensors.encode(items, "BYTES")
        elif t.datatype in CONTENTS:
            doc["data"] = list(getattr(t.contents, CONTENTS[t.datatype]))
            inputs.append(doc)
            continue
        else:
            raise bad_request(f"input {t.name!r}: datatype {t.datatype!r} has no typed contents field; "
                              "send it in raw_input_contents")
        doc["parameters"] = {"binary_data_size": len(blob)}
        blobs.append(blob)
        inputs.append(doc)
    doc = {"inputs": inputs, "parameters": {"binary_data_output": True}}
    if req.outputs:
        doc["outputs"] = [{"name": o.name} for o in req.outputs]
    raw = memoryview(b"".join(blobs)) if blobs else None
    feed, names, _, _ = parse_v2_request(doc, sig, raw)
    return feed, names, req.id, None


def response_from(model, names, outs, request_id: str) -> pb.ModelInferResponse:
    doc, blobs = v2_response(model.name, model.version, names, outs, None, set(names))
    return pb.ModelInferResponse(
        model_name=model.name, model_version=model.version, id=request_id,
        outputs=[pb.ModelInferResponse.InferOutputTensor(name=o["name"], datatype=o["datatype"], shape=o["shape"])
                 for o in doc["outputs"]],
        raw_output_contents=blobs)


class Servicer(pb_grpc.GRPCInferenceServiceServicer):
    def __init__(self, state):
        self.manager, self.metrics, self.gate, self.config = state.manager, state.metrics, state.gate, state.config

    # ---- the guard every inference RPC passes (the HTTP app's, in gRPC terms) -----------------------

    async def _guarded(self, context, work):
        """Run `work(label)` under the gate and the timeout, count it in the metrics (with the HTTP
        status the outcome corresponds to), and turn errors into gRPC status codes."""
        start, code, label, entered = time.perf_counter(), 200, ["", ""], False
        try:
            self.gate.enter()
            entered = True
            self.metrics.in_flight.inc()
            async with asyncio.timeout(self.config.request_timeout_s):
                return await work(label)
        except ServeError as e:
            code = e.status
            await context.abort(CODES.get(e.status, grpc.StatusCode.INTERNAL), e.message)
        except TimeoutError:
            code = 504
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                                f"the request took longer than {self.config.request_timeout_s} s (request_timeout_s)")
        except asyncio.CancelledError:  # the client went away or its deadline passed
            code = 408
            raise
        except Exception:
            code = 500
            log.exception("unexpected error in a gRPC inference call")
            await context.abort(grpc.StatusCode.INTERNAL, "internal server error (see the server log)")
        finally:
            if entered:
                self.gate.exit()
                self.metrics.in_flight.dec()
            self.metrics.observe_request(label[0], label[1], "grpc", code, time.perf_counter() - start)

    async def _plain(self, context, fn):
        try:
            return fn()
        except ServeError as e:
            await context.abort(CODES.get(e.status, grpc.StatusCode.INTERNAL), e.message)

    def _resolve(self, name, version, context):
        sticky = dict(context.invocation_metadata() or ()).get(self.config.sticky_header.lower())
        return self.manager.resolve(name, version or None, sticky)

    # ---- health and metadata ----------------------------------------------------------------------------

    async def ServerLive(self, request, context):
        return pb.ServerLiveResponse(live=True)

    async def ServerReady(self, request, context):
        return pb.ServerReadyResponse(ready=self.manager.ready)

    async def ModelReady(self, request, context):
        def ready():
            self.manager.resolve(request.name, request.version or None).release()
            return pb.ModelReadyResponse(ready=True)
        return await self._plain(context, ready)

    async def ServerMetadata(self, request, context):
        from rtx.serving_api import __version__
        from rtx.serving_api.app import EXTENSIONS
        return pb.ServerMetadataResponse(name="rtx", version=__version__, extensions=EXTENSIONS)

    async def ModelMetadata(self, request, context):
        def meta():
            entry = self.manager.entry(request.name)
            m = self.manager.resolve(request.name, request.version or entry.default)
            m.release()
            doc = pb.ModelMetadataResponse(name=request.name, versions=entry.available(), platform="rtx")
            if m.signature is not None:
                for spec, field in ((m.signature.inputs, doc.inputs), (m.signature.outputs, doc.outputs)):
                    field.extend(pb.ModelMetadataResponse.TensorMetadata(name=s.name, datatype=s.datatype,
                                                                         shape=list(s.shape)) for s in spec)
            return doc
        return await self._plain(context, meta)

    async def RepositoryIndex(self, request, context):
        out = pb.RepositoryIndexResponse()
        for m in self.manager.models():
            out.models.add(name=m.name, version=m.version, state="READY")
        if not request.ready:
            for (n, v), why in self.manager.failures.items():
                out.models.add(name=n, version=v, state="UNAVAILABLE", reason=why)
        return out

    async def ModelStatistics(self, request, context):
        def stats():
            out = pb.ModelStatisticsResponse()
            names = [request.name] if request.name else sorted(self.manager.table)
            for name in names:
                entry = self.manager.entry(name)
                versions = [request.version] if request.version else entry.available()
                for v in versions:
                    self.manager.resolve(name, v).release()  # NOT_FOUND for an unknown version
                    m = entry.versions[v]
                    s = m.session.stats() if m.session is not None and hasattr(m.session, "stats") else {}
                    count = int(s.get("count", 0))
                    ms = float(s.get("mean_ms", 0.0)) * count
                    st = out.model_stats.add(name=name, version=v, execution_count=count)
                    st.inference_stats.compute_infer.count = count
                    st.inference_stats.compute_infer.ns = int(ms * 1e6)
                    if m.batcher is not None:
                        for size, n in sorted(m.batcher.stats().get("batch_sizes", {}).items()):
                            b = st.batch_stats.add(batch_size=int(size))
                            b.compute_infer.count = int(n)
                            st.inference_count += int(size) * int(n)
            return out
        return await self._plain(context, stats)

    # ---- inference ----------------------------------------------------------------------------------

    async def _infer(self, request, context, label) -> pb.ModelInferResponse:
        model = self._resolve(request.model_name, request.model_version, context)
        try:
            label[:] = [model.name, model.version]
            if model.kind != "tensor":
                raise bad_request(f"model {model.name}:{model.version} is a text generator; "
                                  "use ModelStreamInfer with a BYTES input 'text_input'")
            feed, names, rid, _ = request_to_v2(request, model.signature)
            names, outs = await model.infer(feed, names)
            return response_from(model, names, outs, rid)
        finally:
            model.release()

    async def ModelInfer(self, request, context):
        return await self._guarded(context, lambda label: self._infer(request, context, label))

    async def ModelStreamInfer(self, request_iterator, context):
        """Each request of the stream gets its answers in order: one response for a tensor model; for a
        text generator (rtx-nlg), one response per piece of text as it is generated (output
        'text_output'), then a last one with the finish reason and triton_final_response=true.
        A failed request sends error_message and the stream goes on."""
        async for request in request_iterator:
            try:
                model = self._resolve(request.model_name, request.model_version, context)
            except ServeError as e:
                yield pb.ModelStreamInferResponse(error_message=e.message)
                continue
            try:
                if model.kind == "tensor":
                    start, entered = time.perf_counter(), False
                    try:
                        self.gate.enter()  # the same concurrency limit as unary calls
                        entered = True
                        async with asyncio.timeout(self.config.request_timeout_s):
                            feed, names, rid, _ = request_to_v2(request, model.signature)
                            names, outs = await model.infer(feed, names)
                        response, code = pb.ModelStreamInferResponse(
                            infer_response=response_from(model, names, outs, rid)), 200
                    except ServeError as e:
                        response, code = pb.ModelStreamInferResponse(error_message=e.message), e.status
                    except TimeoutError:
                        response, code = pb.ModelStreamInferResponse(
                            error_message=f"the request took longer than {self.config.request_timeout_s} s "
                                          "(request_timeout_s)"), 504
                    finally:
                        if entered:
                            self.gate.exit()
                    self.metrics.observe_request(model.name, model.version, "grpc", code, time.perf_counter() - start)
                    yield response
                    continue
                async for piece in self._generate(model, request):
                    yield piece
            finally:
                model.release()

    async def _generate(self, model, request):
        try:
            prompt, params = self._generation_request(model, request)
            source = model.generator.stream_text(prompt, **params)
        except ServeError as e:
            yield pb.ModelStreamInferResponse(error_message=e.message)
            return
        except (ValueError, TypeError) as e:
            yield pb.ModelStreamInferResponse(error_message=f"model {model.name}:{model.version} refused the "
                                                            f"request: {e}")
            return
        it = iter(source)
        done = object()

        def step():
            try:
                return next(it)
            except StopIteration as end:
                return (done, end.value)
        while True:
            piece = await asyncio.to_thread(step)
            if isinstance(piece, tuple) and piece and piece[0] is done:
                reason = piece[1] if piece[1] is not None else getattr(it, "finish_reason", None)
                yield self._text(model, request.id, "", final=True, reason=reason or "stop")
                return
            yield self._text(model, request.id, piece, final=False)

    def _generation_request(self, model, request) -> tuple[str, dict]:
        texts = [t for t in request.inputs if t.name == TEXT_INPUT]
        if len(texts) != 1 or texts[0].datatype != "BYTES":
            raise bad_request(f"model {model.name}:{model.version} is a text generator: send one BYTES input "
                              f"{TEXT_INPUT!r} holding the prompt")
        feed, _, _, _ = request_to_v2(request, TEXT_SIGNATURE)
        (prompt,) = [p.decode() for p in feed[TEXT_INPUT].ravel()] or [""]
        doc = {"prompt": prompt}
        for key, p in request.parameters.items():
            doc[key] = _param(p)
        _, _, params = parse_generate(doc, self.config.max_new_tokens)
        return prompt, params

    @staticmethod
    def _text(model, rid, text: str, *, final: bool, reason: str | None = None):
        blob = tensors.encode(np.array([text.encode()], dtype=object), "BYTES")
        r = pb.ModelInferResponse(model_name=model.name, model_version=model.version, id=rid,
                                  outputs=[pb.ModelInferResponse.InferOutputTensor(name=TEXT_OUTPUT, datatype="BYTES",
                                                                                   shape=[1])],
                                  raw_output_contents=[blob])
        r.parameters["triton_final_response"].bool_param = final
        if reason is not None:
            r.parameters["finish_reason"].string_param = reason
        return pb.ModelStreamInferResponse(infer_response=r)


async def start_grpc(state, host: str, port: int, *, tokens=None):
    """Start the gRPC server on host:port (0: a free port) in the running loop, with TLS when the
    config names a certificate and bearer tokens when given; returns (server, port)."""
    config = state.config
    options = [("grpc.max_receive_message_length", config.max_body_bytes), ("grpc.max_send_message_length", -1),
               ("grpc.so_reuseport", 1)]  # --workers: every worker listens on the same port
    interceptors = []
    if tokens is not None:
        from rtx.serving_api.auth import GrpcBearerAuth
        interceptors.append(GrpcBearerAuth(tokens))
    credentials = None
    if config.ssl_certfile is not None:
        from pathlib import Path
        credentials = grpc.ssl_server_credentials([(Path(config.ssl_keyfile).read_bytes(),
                                                    Path(config.ssl_certfile).read_bytes())])
    server = grpc.aio.server(options=options, interceptors=interceptors)
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(Servicer(state), server)
    address = f"{host}:{port}"
    bound = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"gRPC could not bind {address}")
    await server.start()
    return server, bound
