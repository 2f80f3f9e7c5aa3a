"""The wire formats: KServe v2 (Open Inference Protocol) and TF-Serving / KServe v1 JSON, and
binary .npy bodies. Each request becomes a feed {input name: np.ndarray} checked against the
model's signature; each client mistake raises ServeError(400) naming the input, what was
expected and what was found."""
from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass

import numpy as np

from rtx.runtime.dtypes import KSERVE_NAMES
from rtx.serving_api import tensors
from rtx.serving_api.errors import ServeError, bad_request

BF16 = tensors.bf16_dtype()
# KServe v2 datatype names <-> NumPy dtypes (rtx.runtime's table; bfloat16 is ml_dtypes', and
# BYTES elements are Python bytes in an object array).
DATATYPES = {kserve: (BF16 if name == "bfloat16" else np.dtype(name)) for name, kserve in KSERVE_NAMES.items()}
DATATYPES["BYTES"] = np.dtype(object)
DATATYPE_OF = {v: k for k, v in DATATYPES.items()}


def datatype_of(dtype) -> str:
    dt = np.dtype(dtype)
    if dt.kind in "SU":  # a model may answer text as NumPy strings
        return "BYTES"
    if dt not in DATATYPE_OF:
        raise ValueError(f"no KServe v2 datatype for NumPy dtype {dt}")
    return DATATYPE_OF[dt]


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == BF16  # ml_dtypes' bfloat16 has kind "V"


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a signature: -1 in `shape` is any size."""
    name: str
    datatype: str
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return DATATYPES[self.datatype]

    def to_json(self) -> dict:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    @classmethod
    def from_dict(cls, sig: dict) -> "Signature":
        def specs(key):
            return tuple(TensorSpec(str(t["name"]), str(t["datatype"]).upper(),
                                    tuple(-1 if d is None else int(d) for d in t.get("shape", ())))
                         for t in sig.get(key, ()))
        return cls(specs("inputs"), specs("outputs"))

    @classmethod
    def from_session(cls, session) -> "Signature":
        """From an InferenceSession's get_inputs()/get_outputs() (onnxruntime's NodeArg shape:
        None or a string for a dynamic dimension)."""
        def specs(args):
            return tuple(TensorSpec(a.name, datatype_of(a.dtype),
                                    tuple(d if isinstance(d, int) and d >= 0 else -1 for d in (a.shape or ())))
                         for a in args)
        return cls(specs(session.get_inputs()), specs(session.get_outputs()))

    def input(self, name: str) -> TensorSpec:
        for s in self.inputs:
            if s.name == name:
                return s
        raise bad_request(f"unknown input {name!r}; the model's inputs are {self.input_names()}")

    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    def output_names(self) -> list[str]:
        return [s.name for s in self.outputs]

    def batchable(self) -> bool:
        """Every input has a dynamic leading dimension: requests can be stacked along dim 0."""
        return bool(self.inputs) and all(s.shape and s.shape[0] == -1 for s in self.inputs)


def shape_matches(expected, found) -> bool:
    return len(expected) == len(found) and all(e == -1 or e == f for e, f in zip(expected, found))


def fmt_shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def check_feed(sig: Signature, feed: dict[str, np.ndarray], *, prefix: str = "") -> None:
    """Every signature input present with its dtype and shape, nothing else."""
    missing = [n for n in sig.input_names() if n not in feed]
    if missing:
        raise bad_request(f"{prefix}missing input(s) {missing}; the model's inputs are {sig.input_names()}")
    for name, arr in feed.items():
        spec = sig.input(name)
        if arr.size == 0:  # rtx.inference plans (like many runtimes) have no empty-batch path
            raise bad_request(f"{prefix}input {name!r} is empty (shape {fmt_shape(arr.shape)}); "
                              "send at least one value")
        if arr.dtype != spec.dtype:
            raise bad_request(f"{prefix}input {name!r}: expected datatype {spec.datatype}, "
                              f"found {DATATYPE_OF.get(arr.dtype, str(arr.dtype))}")
        if not shape_matches(spec.shape, arr.shape):
            raise bad_request(f"{prefix}input {name!r}: expected shape {fmt_shape(spec.shape)} (-1: any size), "
                              f"found {fmt_shape(arr.shape)}")


# ---- JSON bodies --------------------------------------------------------------------------------

def _no_duplicate_keys(pairs):
    """json.loads would keep the last of two equal keys: an ambiguous request, refused instead."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen, dup = set(), None
        for k, _ in pairs:
            if k in seen:
                dup = k
                break
            seen.add(k)
        raise bad_request(f"malformed JSON in the request body: the key {dup!r} appears twice in one object")
    return doc


def parse_json(body: bytes):
    if not body:
        raise bad_request("the request body is empty; expected a JSON object")
    try:
        return json.loads(body, object_pairs_hook=_no_duplicate_keys)
    except UnicodeDecodeError as e:
        raise bad_request(f"the request body is not UTF-8 text: {e}") from None
    except json.JSONDecodeError as e:
        raise bad_request(f"malformed JSON in the request body: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise bad_request("malformed JSON in the request body: nested too deeply") from None


def _numbers(data, what: str, dtype: np.dtype) -> np.ndarray:
    """JSON data (nested lists of numbers) as an array of `dtype`; refuses strings, nulls, ragged
    lists, and values the dtype cannot hold (1.5 for INT32, 300 for UINT8, true for FP32 is fine)."""
    if dtype.kind == "O":  # BYTES
        return tensors.bytes_from_json(data, what)
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError) as e:  # ragged nesting
        raise bad_request(f"{what}: data is not a regular nested list of numbers ({e})") from None
    if dtype.kind in "iu" and arr.dtype.kind in "fO":
        arr = _exact_ints(data, arr, what, dtype)
    if arr.dtype.kind not in "biuf":
        found = "strings" if arr.dtype.kind in "US" else "nulls, objects or integers beyond 64 bits"
        raise bad_request(f"{what}: data must be numbers, found {found}")
    if arr.dtype == dtype:
        return arr
    if arr.dtype.kind == "b" and dtype.kind != "b":
        raise bad_request(f"{what}: expected numbers for datatype {DATATYPE_OF[dtype]}, found booleans")
    if dtype.kind in "iu":
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
            raise bad_request(f"{what}: expected integers for datatype {DATATYPE_OF[dtype]}, "
                              "found non-integral numbers")
        info = np.iinfo(dtype)
        # Python ints compare exactly; NumPy would compare uint64 with int64 (or 2.0**63 with
        # 2**63 - 1) as float64, and let 2**63 through to wrap around to -2**63.
        if arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
            raise bad_request(f"{what}: values out of range for datatype {DATATYPE_OF[dtype]} "
                              f"[{info.min}, {info.max}]")
    elif dtype.kind == "b" and arr.dtype.kind != "b":
        if not np.all((arr == 0) | (arr == 1)):
            raise bad_request(f"{what}: expected booleans for datatype BOOL")
    elif is_float(dtype):
        with np.errstate(over="ignore"):
            out = arr.astype(dtype)
        if not np.array_equal(np.isfinite(out), np.isfinite(arr)):  # 1e300 would become inf in FP32
            import ml_dtypes
            raise bad_request(f"{what}: values out of range for datatype {DATATYPE_OF[dtype]} "
                              f"(largest magnitude {float(ml_dtypes.finfo(dtype).max):.6g})")
        return out
    return arr.astype(dtype)


def _binary_size(params, what: str):
    """parameters.binary_data_size of an input, or None when its data is in JSON."""
    if params is None:
        return None
    if not isinstance(params, dict):
        raise bad_request(f"{what}: 'parameters' must be an object, found {type(params).__name__}")
    size = params.get("binary_data_size")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise bad_request(f"{what}: parameters.binary_data_size must be an integer >= 0, found {size!r}")
    return size


def _exact_ints(data, arr: np.ndarray, what: str, dtype: np.dtype) -> np.ndarray:
    """Python ints past int64 (UINT64's upper half) make NumPy fall back to float64 (rounding them)
    or object: read such data again exactly when every value is an int."""
    exact = np.array(data, dtype=object)
    flat = exact.ravel().tolist()
    if not all(type(v) is int for v in flat):
        return arr  # floats among them: the checks that follow say what is wrong
    info = np.iinfo(dtype)
    if flat and (min(flat) < info.min or max(flat) > info.max):
        raise bad_request(f"{what}: values out of range for datatype {DATATYPE_OF[dtype]} [{info.min}, {info.max}]")
    return np.array(flat, dtype=dtype).reshape(exact.shape)


def parse_v2_request(doc, sig: Signature, raw: memoryview | None = None
                     ) -> tuple[dict[str, np.ndarray], list[str] | None, object, set[str]]:
    """A KServe v2 infer request -> (feed, requested output names or None for all, request id,
    names of the outputs to answer in binary). `raw` is the binary part of a body with the
    binary tensor data extension (the bytes after the JSON header), else None."""
    if not isinstance(doc, dict):
        raise bad_request(f"the request must be a JSON object with an 'inputs' list, found {type(doc).__name__}")
    inputs = doc.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise bad_request("the request needs 'inputs': a non-empty list of {name, shape, datatype, data}")
    feed, offset = {}, 0
    for i, t in enumerate(inputs):
        if not isinstance(t, dict):
            raise bad_request(f"inputs[{i}] must be an object {{name, shape, datatype, data}}, "
                              f"found {type(t).__name__}")
        size = _binary_size(t.get("parameters"), f"inputs[{i}]")
        if size is not None and raw is None:
            raise bad_request(f"inputs[{i}] has parameters.binary_data_size but the request has no binary part "
                              "(no Inference-Header-Content-Length header)")
        required = ("name", "shape", "datatype") if size is not None else ("name", "shape", "datatype", "data")
        missing = [k for k in required if k not in t]
        if missing:
            raise bad_request(f"inputs[{i}] lacks {missing}; each input needs name, shape, datatype and data "
                              "(or parameters.binary_data_size)")
        if size is not None and "data" in t:
            raise bad_request(f"inputs[{i}] has both 'data' and parameters.binary_data_size; send one")
        name, shape, datatype = t["name"], t["shape"], t["datatype"]
        if not isinstance(name, str):
            raise bad_request(f"inputs[{i}].name must be a string, found {name!r}")
        if name in feed:
            raise bad_request(f"input {name!r} is given twice")
        spec = sig.input(name)
        if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                for d in shape)):
            raise bad_request(f"input {name!r}: shape must be a list of non-negative integers, found {shape!r}")
        if not isinstance(datatype, str) or datatype.upper() not in DATATYPES:
            raise bad_request(f"input {name!r}: unsupported datatype {datatype!r}; "
                              f"supported: {', '.join(DATATYPES)}")
        if datatype.upper() != spec.datatype:
            raise bad_request(f"input {name!r}: expected datatype {spec.datatype}, found {datatype}")
        if not shape_matches(spec.shape, shape):
            raise bad_request(f"input {name!r}: expected shape {fmt_shape(spec.shape)} (-1: any size), "
                              f"found {fmt_shape(shape)}")
        if size is not None:
            if size > len(raw) - offset:
                raise bad_request(f"input {name!r}: parameters.binary_data_size is {size} but only "
                                  f"{len(raw) - offset} bytes of tensor data remain in the body")
            feed[name] = tensors.decode(raw[offset:offset + size], spec.datatype, spec.dtype, shape,
                                        f"input {name!r}")
            offset += size
            continue
        arr = _numbers(t["data"], f"input {name!r}", spec.dtype)
        n = math.prod(shape)
        if arr.size != n:
            raise bad_request(f"input {name!r}: shape {fmt_shape(shape)} needs {n} values, found {arr.size}")
        feed[name] = arr.reshape(shape)
    if raw is not None and offset != len(raw):
        raise bad_request(f"the body carries {len(raw) - offset} bytes after the tensors its header describes "
                          "(the binary_data_size of the inputs sum to less than the binary part)")
    check_feed(sig, feed)
    params = doc.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise bad_request(f"'parameters' must be an object, found {type(params).__name__}")
    all_binary = _flag(params, "binary_data_output", "parameters")
    outputs = doc.get("outputs")
    names = None
    binary = set(sig.output_names()) if all_binary else set()
    if outputs is not None:
        if not isinstance(outputs, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str)
                                                    for o in outputs):
            raise bad_request("'outputs' must be a list of objects with a 'name'")
        names = [o["name"] for o in outputs]
        for o in outputs:
            p = o.get("parameters")
            if p is not None and not isinstance(p, dict):
                raise bad_request(f"output {o['name']!r}: 'parameters' must be an object")
            flag = _flag(p, "binary_data", f"output {o['name']!r} parameters")
            if flag:
                binary.add(o["name"])
            elif p is not None and "binary_data" in p:
                binary.discard(o["name"])  # an output's own setting wins over binary_data_output
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise bad_request(f"output(s) {twice} requested more than once")
        unknown = [n for n in names if n not in sig.output_names()]
        if unknown:
            raise bad_request(f"unknown output(s) {unknown}; the model's outputs are {sig.output_names()}")
    return feed, names, doc.get("id"), binary


def _flag(params, key: str, what: str) -> bool:
    if not params or key not in params:
        return False
    v = params[key]
    if not isinstance(v, bool):
        raise bad_request(f"{what}.{key} must be true or false, found {v!r}")
    return v


def v2_response(model: str, version: str, names: list[str], arrays: list[np.ndarray], request_id,
                binary: set[str] = frozenset()) -> tuple[dict, list[bytes]]:
    """(the JSON document, the binary parts in output order): the outputs named in `binary` carry
    parameters.binary_data_size instead of data."""
    outputs, blobs = [], []
    for n, a in zip(names, arrays):
        datatype = datatype_of(a.dtype)
        t = {"name": n, "datatype": datatype, "shape": list(a.shape)}
        if n in binary:
            blob = tensors.encode(a, datatype)
            t["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        elif datatype == "BYTES":
            t["data"] = tensors.bytes_to_json(a, f"output {n!r}")
        elif datatype == "BF16":
            t["data"] = a.astype(np.float32).ravel().tolist()
        else:
            t["data"] = a.ravel().tolist()
        outputs.append(t)
    out = {"model_name": model, "model_version": version, "outputs": outputs}
    if request_id is not None:
        out["id"] = request_id
    return out, blobs


def parse_v1_request(doc, sig: Signature) -> tuple[dict[str, np.ndarray], str]:
    """A TF-Serving predict request -> (feed, "row" | "columnar").

    Row format {"instances": [...]}: one entry per example; for a single-input model an entry is
    the example itself, otherwise an object {input name: value}. Columnar format {"inputs": ...}:
    a value (single input) or an object of batched values."""
    if not isinstance(doc, dict):
        raise bad_request(f"the request must be a JSON object with 'instances' or 'inputs', found {type(doc).__name__}")
    if ("instances" in doc) == ("inputs" in doc):
        raise bad_request("the request needs exactly one of 'instances' (row format) or 'inputs' (columnar format)")
    if "instances" in doc:
        rows = doc["instances"]
        if not isinstance(rows, list) or not rows:
            raise bad_request("'instances' must be a non-empty list with one entry per example")
        if all(isinstance(r, dict) for r in rows):
            if any(set(r) != set(rows[0]) for r in rows):
                raise bad_request("every instance must name the same inputs")
            columns = {k: [r[k] for r in rows] for k in rows[0]}
        elif len(sig.inputs) == 1 and not any(isinstance(r, dict) for r in rows):
            columns = {sig.inputs[0].name: rows}
        else:
            raise bad_request(f"the model has inputs {sig.input_names()}: each instance must be an object "
                              "{input name: value}")
        fmt = "row"
    else:
        cols = doc["inputs"]
        if isinstance(cols, dict):
            columns = cols
        elif len(sig.inputs) == 1:
            columns = {sig.inputs[0].name: cols}
        else:
            raise bad_request(f"the model has inputs {sig.input_names()}: 'inputs' must be an object "
                              "{input name: batched value}")
        fmt = "columnar"
    feed = {}
    for name, value in columns.items():
        spec = sig.input(name)
        feed[name] = _numbers(value, f"input {name!r}", spec.dtype)
    check_feed(sig, feed)
    return feed, fmt


def v1_response(names: list[str], arrays: list[np.ndarray], fmt: str) -> dict:
    if fmt == "row":
        if len(names) == 1:
            return {"predictions": arrays[0].tolist()}
        n = len(arrays[0])
        return {"predictions": [{k: a[i].tolist() for k, a in zip(names, arrays)} for i in range(n)]}
    if len(names) == 1:
        return {"outputs": arrays[0].tolist()}
    return {"outputs": {k: a.tolist() for k, a in zip(names, arrays)}}


# ---- binary .npy bodies ---------------------------------------------------------------------------

NPY = "application/x-npy"
NPZ = "application/x-npz"


def parse_npy(body: bytes, sig: Signature) -> dict[str, np.ndarray]:
    if len(sig.inputs) != 1:
        raise ServeError(415, f"an {NPY} body carries one tensor, but the model has inputs {sig.input_names()}; "
                              "send JSON instead")
    arr = _load_npy(body)
    feed = {sig.inputs[0].name: arr}
    check_feed(sig, feed)
    return feed


def _load_npy(body: bytes) -> np.ndarray:
    """One .npy array, its header checked before anything is allocated: the data must be exactly
    shape x itemsize bytes (a header claiming 10**12 elements over 256 bytes is refused, not
    allocated), of a plain numeric dtype, in native byte order."""
    fmt = np.lib.format
    f = io.BytesIO(body)
    if body[:2] == b"PK":
        raise bad_request("the body is an .npz archive; send one .npy array")
    try:
        major, minor = fmt.read_magic(f)
        header = fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0
        shape, fortran, dtype = header(f, max_header_size=10000)
    except Exception as e:  # ValueError/EOFError/SyntaxError and more on corrupt headers
        raise bad_request(f"the body is not a valid .npy array ({type(e).__name__}: {e})") from None
    if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biuf":
        raise bad_request(f"the .npy array has dtype {dtype.str}; send one of the numeric datatypes "
                          f"{', '.join(DATATYPES)} (object arrays are never unpickled)")
    need = math.prod(shape) * dtype.itemsize
    have = len(body) - f.tell()
    if need != have:
        raise bad_request(f"the .npy header says shape {fmt_shape(shape)} of {dtype.str} ({need} bytes of data), "
                          f"but the body carries {have} bytes of data")
    arr = np.frombuffer(body, dtype=dtype, offset=f.tell()).reshape(shape, order="F" if fortran else "C")
    # a writable, C-ordered, native-endian copy (np.ascontiguousarray would turn 0-d into 1-d)
    return np.array(arr, dtype=dtype.newbyteorder("="), order="C")


def npy_bytes(names: list[str], arrays: list[np.ndarray]) -> tuple[bytes, str]:
    """One output: an .npy file; several: an .npz archive keyed by output name."""
    buf = io.BytesIO()
    if len(arrays) == 1:
        np.save(buf, arrays[0], allow_pickle=False)
        return buf.getvalue(), NPY
    np.savez(buf, **dict(zip(names, arrays)))
    return buf.getvalue(), NPZ
