"""Raw tensor bytes of the Open Inference Protocol: the binary tensor data extension over HTTP
(`Inference-Header-Content-Length`) and gRPC's `raw_input_contents`/`raw_output_contents` carry
the same encoding, so both protocols share this codec.

Every fixed-size datatype is its elements in row-major order, little-endian (BOOL: one byte,
0 or 1; BF16: the upper two bytes of the float32). BYTES is one element after the other, each a
4-byte little-endian length and then that many bytes. Sizes are checked against the shape before
anything is allocated, so a header that lies about them costs nothing."""
from __future__ import annotations

import math
import struct

import numpy as np

from rtx.serving_api.errors import bad_request


def bf16_dtype():
    import ml_dtypes  # NumPy has no bfloat16; ml_dtypes is the dtype rtx and tritonclient both use
    return np.dtype(ml_dtypes.bfloat16)


def decode(raw, datatype: str, dtype: np.dtype, shape, what: str) -> np.ndarray:
    """`raw` (bytes or memoryview) as an array of `shape`; a size that does not match is a 400."""
    n = math.prod(shape)
    if datatype == "BYTES":
        return _decode_bytes(memoryview(raw), n, what).reshape(shape)
    need = n * dtype.itemsize
    if len(raw) != need:
        raise bad_request(f"{what}: shape {list(shape)} of {datatype} needs {need} bytes of tensor data, "
                          f"found {len(raw)}")
    wire = dtype.newbyteorder("<") if dtype.itemsize > 1 and datatype != "BF16" else dtype
    arr = np.frombuffer(raw, dtype=wire).reshape(shape)
    if datatype == "BOOL":
        as_bytes = arr.view(np.uint8)
        if as_bytes.size and as_bytes.max() > 1:
            raise bad_request(f"{what}: BOOL elements must be the bytes 0 or 1, found {int(as_bytes.max())}")
    # A writable native-order copy: the request's buffer is not kept alive by the feed.
    return np.array(arr, dtype=dtype.newbyteorder("="))


def _decode_bytes(view: memoryview, n: int, what: str) -> np.ndarray:
    if 4 * n > len(view):  # every element has at least its 4-byte length
        raise bad_request(f"{what}: {n} BYTES elements need at least {4 * n} bytes, found {len(view)}")
    out = np.empty(n, dtype=object)
    pos = 0
    for i in range(n):
        if pos + 4 > len(view):
            raise bad_request(f"{what}: BYTES element {i} is truncated (no room for its 4-byte length)")
        (size,) = struct.unpack_from("<I", view, pos)
        pos += 4
        if pos + size > len(view):
            raise bad_request(f"{what}: BYTES element {i} says {size} bytes but only {len(view) - pos} remain")
        out[i] = bytes(view[pos:pos + size])
        pos += size
    if pos != len(view):
        raise bad_request(f"{what}: {len(view) - pos} bytes left after the {n} BYTES elements of the shape")
    return out


def encode(arr: np.ndarray, datatype: str) -> bytes:
    """The wire bytes of one tensor."""
    if datatype == "BYTES":
        parts = []
        for item in arr.ravel():
            b = item if isinstance(item, bytes) else str(item).encode()
            parts.append(struct.pack("<I", len(b)))
            parts.append(b)
        return b"".join(parts)
    if arr.dtype.itemsize > 1 and datatype != "BF16":
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
    return np.ascontiguousarray(arr).tobytes()


def bytes_from_json(data, what: str) -> np.ndarray:
    """JSON data of a BYTES tensor (nested lists of strings) as an object array of UTF-8 bytes."""
    def walk(v):
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str):
            return v.encode()
        raise bad_request(f"{what}: BYTES data must be strings, found {type(v).__name__}")
    flat = []

    def flatten(v):
        if isinstance(v, list):
            for x in v:
                flatten(x)
        else:
            flat.append(v)
    flatten(walk(data))
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out


def bytes_to_json(arr: np.ndarray, what: str) -> list:
    try:
        return [b.decode() if isinstance(b, bytes) else str(b) for b in arr.ravel()]
    except UnicodeDecodeError:
        raise bad_request(f"{what} holds bytes that are not UTF-8 text and cannot be written in JSON; ask for it "
                          "with the binary tensor data extension ('binary_data': true)") from None
