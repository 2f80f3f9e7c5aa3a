"""rtx dtypes: PyTorch's names over NumPy dtypes (bfloat16 from ml_dtypes), and PyTorch's
type-promotion rules (which differ from NumPy's: int64 + float16 is float16, a Python
float with an int tensor gives the default dtype, zero-dim tensors count less than sized ones).

The quantized dtypes (qint8, quint8, qint32, quint4x2) name an integer range, as torch.qint8 does,
for rtx.compress (quantize_dynamic(model, {nn.Linear}, dtype=rtx.qint8)). rtx has no quantized
tensors: they have no NumPy dtype, no tensor can be created with them, and they stay out of ALL and
of the NumPy mapping (np.int8 is rtx.int8).
"""
from __future__ import annotations

import functools

import numpy as np


class dtype:
    """A tensor element type, compared by identity like torch.dtype."""

    __slots__ = ("name", "_np", "is_floating_point", "is_complex", "is_signed", "is_quantized", "itemsize",
                 "_category")

    def __init__(self, name: str, np_dtype, category: int, itemsize: int = 0, is_quantized: bool = False):
        self.name = name
        self._np = None if np_dtype is None else np.dtype(np_dtype)
        self._category = category  # 0 bool, 1 integral, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = name not in ("bool", "uint8", "uint16", "uint32", "uint64", "quint8", "quint4x2")
        self.is_quantized = is_quantized
        self.itemsize = self._np.itemsize if self._np is not None else itemsize

    @property
    def np(self):
        """The NumPy dtype. bfloat16's comes from ml_dtypes, whose import costs about a second,
        so it is loaded on first use of bfloat16, not with rtx. A quantized dtype has none:
        every tensor-creating path asks for it, so this is where they all learn that."""
        if self._np is None:
            if self.is_quantized:
                raise TypeError(_no_quantized_tensors(self))
            import ml_dtypes
            self._np = np.dtype(ml_dtypes.bfloat16)
            _BY_NP[self._np] = self
        return self._np

    def __repr__(self):
        return f"rtx.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))

    def to_real(self) -> dtype:
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> dtype:
        return {float64: complex128, complex128: complex128}.get(self, complex64)


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
uint16 = dtype("uint16", np.uint16, 1)
uint32 = dtype("uint32", np.uint32, 1)
uint64 = dtype("uint64", np.uint64, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
bfloat16 = dtype("bfloat16", None, 2, itemsize=2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)

# Quantized dtypes (torch.qint8, ...): names of integer ranges for rtx.compress, not tensor dtypes.
qint8 = dtype("qint8", None, 1, itemsize=1, is_quantized=True)
quint8 = dtype("quint8", None, 1, itemsize=1, is_quantized=True)
qint32 = dtype("qint32", None, 1, itemsize=4, is_quantized=True)
quint4x2 = dtype("quint4x2", None, 1, itemsize=1, is_quantized=True)   # two 4-bit values a byte
QUANTIZED = [qint8, quint8, qint32, quint4x2]


def _no_quantized_tensors(d) -> str:
    storage = {"qint8": "rtx.int8", "quint8": "rtx.uint8", "qint32": "rtx.int32"}.get(d.name, "rtx.uint8")
    return (f"rtx has no quantized tensors, so no tensor can have dtype {d!r}: quantized values are plain "
            f"{storage} tensors kept next to their scale and zero point. Use rtx.compress "
            f"(rtx.compress.quantize_per_tensor(x, scale, zero_point, {d!r}), rtx.compress.dequantize, "
            f"rtx.compress.quantize_dynamic(model, {{nn.Linear}}, dtype=rtx.qint8))")


ALL = [bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
       float16, bfloat16, float32, float64, complex64, complex128]
_BY_NAME = {d.name: d for d in ALL + QUANTIZED}
# PyTorch's aliases.
ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
           "long": int64, "cfloat": complex64, "cdouble": complex128, "bool": bool_}
_BY_NP = {d._np: d for d in ALL if d._np is not None}


# ---- other libraries' names for each dtype ---------------------------------------------------
# The one table of them (issue 24: serialization, hub, serving and inference each had their own).
# torch: PyTorch's ScalarType name (its error messages say "Got: Long"); storage: its legacy storage
# class (pickled checkpoints name torch.FloatStorage); safetensors: the header's code; kserve: the
# KServe v2 / Triton datatype; onnx: TensorProto.DataType's number (fixed by onnx.proto) and the
# type name onnxruntime prints ("tensor(float)"). None: that library has no such type.
#   rtx name       torch            storage                 safetensors  kserve   onnx, type name
_FOREIGN = {
    "bool":       ("Bool",          "BoolStorage",          "BOOL",      "BOOL",   9, "bool"),
    "uint8":      ("Byte",          "ByteStorage",          "U8",        "UINT8",  2, "uint8"),
    "uint16":     ("UInt16",        None,                   "U16",       "UINT16", 4, "uint16"),
    "uint32":     ("UInt32",        None,                   "U32",       "UINT32", 12, "uint32"),
    "uint64":     ("UInt64",        None,                   "U64",       "UINT64", 13, "uint64"),
    "int8":       ("Char",          "CharStorage",          "I8",        "INT8",   3, "int8"),
    "int16":      ("Short",         "ShortStorage",         "I16",       "INT16",  5, "int16"),
    "int32":      ("Int",           "IntStorage",           "I32",       "INT32",  6, "int32"),
    "int64":      ("Long",          "LongStorage",          "I64",       "INT64",  7, "int64"),
    "float16":    ("Half",          "HalfStorage",          "F16",       "FP16",   10, "float16"),
    "bfloat16":   ("BFloat16",      "BFloat16Storage",      "BF16",      "BF16",   16, "bfloat16"),
    "float32":    ("Float",         "FloatStorage",         "F32",       "FP32",   1, "float"),
    "float64":    ("Double",        "DoubleStorage",        "F64",       "FP64",   11, "double"),
    "complex64":  ("ComplexFloat",  "ComplexFloatStorage",  "C64",       None,     14, "complex64"),
    "complex128": ("ComplexDouble", "ComplexDoubleStorage", None,        None,     15, "complex128"),
}


def _column(i):
    return {name: row[i] for name, row in _FOREIGN.items() if row[i] is not None}


TORCH_NAMES = _column(0)          # "float32" -> "Float"
STORAGE_NAMES = _column(1)        # "float32" -> "FloatStorage"
SAFETENSORS_NAMES = _column(2)    # "float32" -> "F32"
KSERVE_NAMES = _column(3)         # "float32" -> "FP32"
ONNX_TYPES = _column(4)           # "float32" -> 1 (TensorProto.FLOAT)
ONNX_TYPE_NAMES = _column(5)      # "float32" -> "float"


def torch_name(d) -> str:
    """PyTorch's ScalarType name of the dtype `d` ("Float" for rtx.float32), as its errors print it."""
    return TORCH_NAMES.get(d.name, d.name)


def from_torch_name(name: str) -> dtype | None:
    """The dtype that torch.<name> is (torch.float32, torch.long, ...); None if it is no tensor dtype."""
    d = _BY_NAME.get(name) or ALIASES.get(name)
    return None if d is None or d.is_quantized else d


def is_bfloat16(np_dtype) -> bool:
    """Without importing ml_dtypes: its bfloat16 is a NumPy dtype of kind 'V' named bfloat16."""
    return np_dtype.kind == "V" and np_dtype.name == "bfloat16"


def is_float(np_dtype) -> bool:
    """Floating point or complex, bfloat16 included."""
    return np_dtype.kind in "fc" or is_bfloat16(np_dtype)


def from_name(name: str) -> dtype:
    """The dtype named `name` ("float32", "qint8"); KeyError for an unknown name."""
    return _BY_NAME[name]


def from_numpy(np_dtype) -> dtype:
    """The rtx dtype of a NumPy (or CuPy) dtype; raises TypeError for unsupported ones."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        pass
    try:
        npd = np.dtype(np_dtype)
        if is_bfloat16(npd):
            return bfloat16 if bfloat16.np == npd else _BY_NP[npd]
        return _BY_NP[npd]
    except (KeyError, TypeError):
        raise TypeError(f"rtx has no dtype for NumPy dtype {np_dtype!r}; "
                        f"supported: {', '.join(d.name for d in ALL)}") from None


def as_dtype(d) -> dtype:
    """Accept an rtx dtype, a NumPy dtype, a Python type (float, int, bool, complex) or a name."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return complex128
    if isinstance(d, str):
        got = _BY_NAME.get(d) or ALIASES.get(d)
        if got is None:
            raise TypeError(f"unknown dtype name {d!r}")
        return got
    return from_numpy(d)


# ---- default dtype -------------------------------------------------------------------------

_default = [float32]


def get_default_dtype() -> dtype:
    return _default[0]


def set_default_dtype(d) -> None:
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype expects a floating point dtype, got {d}")
    _default[0] = d


def default_complex() -> dtype:
    return complex128 if _default[0] is float64 else complex64


# ---- promotion -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both values fit, by PyTorch's table."""
    if a.is_quantized or b.is_quantized:
        raise TypeError(f"promote_types: quantized dtypes do not promote (rtx has no quantized tensors), got {a!r} "
                        f"and {b!r}")
    if a is b:
        return a
    ca, cb = a._category, b._category
    if ca != cb:
        hi, lo = (a, b) if ca > cb else (b, a)
        if hi.is_complex and lo.is_floating_point:
            return complex128 if lo is float64 or hi is complex128 else hi
        return hi
    if ca == 0:
        return bool_
    if ca == 2:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    return from_numpy(np.promote_types(a.np, b.np))


def _combine(higher, lower):
    # torch's combine_categories: the higher-priority group wins unless the lower one is of a
    # higher category (a float scalar with an int tensor gives a float).
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type_of(dim_dtypes, zero_dim_dtypes, scalars) -> dtype:
    """PyTorch's result_type over operands split into sized tensors, zero-dim tensors and
    Python scalars (which count as the default dtype of their kind)."""
    dim = zero = wrapped = None
    for d in dim_dtypes:
        dim = d if dim is None else promote_types(dim, d)
    for d in zero_dim_dtypes:
        zero = d if zero is None else promote_types(zero, d)
    for s in scalars:
        d = scalar_dtype(s)
        wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))


def scalar_dtype(s) -> dtype:
    """The dtype a Python scalar takes when it is promoted with tensors."""
    if isinstance(s, bool):
        return bool_
    if isinstance(s, int):
        return int64
    if isinstance(s, float):
        return get_default_dtype()
    if isinstance(s, complex):
        return default_complex()
    if isinstance(s, np.generic):
        return from_numpy(s.dtype)
    raise TypeError(f"expected a Python number, got {type(s).__name__}")


def can_cast(from_: dtype, to: dtype) -> bool:
    """torch.can_cast: whether in-place ops may write `from_` results into `to` tensors."""
    if from_.is_quantized or to.is_quantized:
        raise TypeError(f"can_cast: quantized dtypes have no tensors to cast, got {from_!r} and {to!r}")
    return from_._category <= to._category


# PyTorch's alias names as module attributes (rtx.half, rtx.long, ...).
half, double, short, long = float16, float64, int16, int64
cfloat, cdouble = complex64, complex128
