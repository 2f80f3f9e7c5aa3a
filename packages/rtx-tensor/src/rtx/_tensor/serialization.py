"""rtx.save / rtx.load.

rtx's own format is a safetensors file: every tensor once, under a readable key (its path in
the saved structure, e.g. "state.0.exp_avg"), and the nested structure (dicts, lists, tuples,
plain values, references to tensor keys) as JSON in the header's __metadata__. Loading it runs
no pickle. A tensor that appears twice is stored once and comes back as one shared Tensor.

rtx.load also reads PyTorch checkpoints (.pt/.pth: the zip format, and the legacy pickle
stream) without PyTorch, through a restricted unpickler: only the globals a tensor checkpoint
needs (tensor and parameter rebuild functions, storage types, OrderedDict, dtypes, ...) are
resolved, to rtx stand-ins; any other global is refused with UnpicklingError before it can run.
Plain safetensors files (e.g. from Hugging Face) load as a dict of tensors.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import struct
from collections import OrderedDict

import numpy as np

from rtx._tensor.tensor import Size, Tensor
from rtx.runtime import devices as _devices
from rtx.runtime import dtypes as _dt

__all__ = ["save", "load", "UnpicklingError"]

_FORMAT_VERSION = 1


class UnpicklingError(pickle.UnpicklingError):
    """A checkpoint refers to a global outside rtx's allow-list: unpickling it could run code."""


class _FormatError(RuntimeError):
    """A file rtx.load cannot read, with a message that already says why."""


def _rebuild_tensor(array, device_str, requires_grad):
    """The unpickling side of Tensor.__reduce_ex__ (pickle, multiprocessing)."""
    t = Tensor._make(np.asarray(array))
    if device_str != "cpu":
        t = _move(t, device_str)
    if requires_grad:
        t.requires_grad = True
    return t


# ==== save ======================================================================================


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, format="rtx"):
    """Save a Tensor, or nested dicts / lists / tuples of tensors and plain values (a state_dict,
    an optimizer's state_dict), to a path or a binary file object. The pickle arguments are
    accepted for PyTorch compatibility and ignored: nothing is pickled.

    format="torch" writes PyTorch's zip checkpoint instead (what torch.save writes), which
    `torch.load(f, weights_only=True)` reads; it is written without importing torch."""
    if format == "torch":
        return _save_torch(obj, f)
    if format not in ("rtx", "safetensors"):
        raise ValueError(f"rtx.save: format must be 'rtx' (safetensors + JSON) or 'torch', got {format!r}")
    from safetensors.numpy import save as st_save
    from safetensors.numpy import save_file as st_save_file
    enc = _Encoder()
    structure = enc.encode(obj, "")
    meta = {"rtx": json.dumps({"version": _FORMAT_VERSION, "structure": structure, "tensors": enc.info},
                              separators=(",", ":"), allow_nan=False)}
    if isinstance(f, (str, os.PathLike)):
        st_save_file(enc.arrays, os.fspath(f), metadata=meta)
    elif hasattr(f, "write"):
        f.write(st_save(enc.arrays, metadata=meta))
    else:
        raise TypeError(f"rtx.save: f must be a path or a binary file object, got {type(f).__name__}")


class _Encoder:
    """Walks the object: tensors go to `arrays` (each object once), the rest to JSON nodes."""

    def __init__(self):
        self.arrays = {}
        self.info = {}
        self.key_of = {}
        self.keep = []      # holds encoded tensors so that their ids stay unique while saving
        self.active = set()  # containers being encoded: a cycle cannot be saved

    def tensor(self, t, path):
        key = self.key_of.get(id(t))
        if key is None:
            key = base = path or "tensor"
            i = 1
            while key in self.arrays:
                key, i = f"{base}#{i}", i + 1
            self.key_of[id(t)] = key
            self.keep.append(t)
            arr = _c_order(t.detach().__array__())  # safetensors reads raw memory
            entry = {"dtype": t.dtype.name, "device": str(t.device), "requires_grad": bool(t.requires_grad)}
            if arr.dtype == np.complex128:  # not a safetensors dtype: real and imaginary parts
                arr = _c_order(np.stack([arr.real, arr.imag], axis=-1))
            self.arrays[key] = arr
            self.info[key] = entry
        return {"T": "tensor", "key": key}

    def encode(self, obj, path):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and not isinstance(obj, np.integer):
            return obj
        if isinstance(obj, float):
            return obj if np.isfinite(obj) else {"T": "float", "v": repr(obj)}
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, np.generic):
            return self.encode(obj.item(), path)
        if isinstance(obj, complex):
            return {"T": "complex", "v": [self.encode(obj.real, path), self.encode(obj.imag, path)]}
        if isinstance(obj, Size):
            return {"T": "size", "v": list(obj)}
        if isinstance(obj, _dt.dtype):
            return {"T": "dtype", "v": obj.name}
        if isinstance(obj, _devices.device):
            return {"T": "device", "v": str(obj)}
        if isinstance(obj, bytes):
            return {"T": "bytes", "v": obj.hex()}
        if isinstance(obj, (dict, list, tuple)):
            if id(obj) in self.active:
                raise ValueError(f"rtx.save: the object contains a reference cycle (at {path or 'the top level'})")
            self.active.add(id(obj))
            try:
                return self._container(obj, path)
            finally:
                self.active.discard(id(obj))
        raise TypeError(f"rtx.save: cannot save an object of type {type(obj).__module__}.{type(obj).__qualname__} "
                        f"(at {path or 'the top level'}). rtx files hold tensors and nested dicts, lists and tuples "
                        "of tensors and plain values (int, float, str, bool, None) and load without pickle; save "
                        "a module's state_dict() rather than the module.")

    def _container(self, obj, path):
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not (k is None or isinstance(k, (bool, int, float, str, tuple))):
                    raise TypeError(f"rtx.save: dict keys must be str, int, float, bool, None or tuples of these; "
                                    f"got {type(k).__name__} at {path or 'the top level'}")
                items.append([self.encode(k, path), self.encode(v, _join(path, k))])
            return {"T": "odict" if isinstance(obj, OrderedDict) else "dict", "v": items}
        tag = "list" if isinstance(obj, list) else "tuple"
        return {"T": tag, "v": [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]}


def _c_order(arr):
    # not np.ascontiguousarray: it turns 0-d arrays into 1-d ones
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _join(path, k):
    return f"{path}.{k}" if path else str(k)


# ==== save in PyTorch's zip format ================================================================
#
# torch.save's zip: archive/data.pkl (a protocol-2 pickle in which each tensor is
# torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())
# and each storage a persistent id ('storage', torch.<Type>Storage, key, 'cpu', numel)),
# archive/data/<key> (the storages' raw little-endian bytes, 64-byte aligned like torch's),
# archive/byteorder and archive/version. The torch globals are written as GLOBAL opcodes by
# name (stand-ins below), so torch is never imported.

class _TorchGlobal:
    """A torch global written by name (module, qualname); callable so that pickle's
    save_reduce accepts it as a reduce function."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        raise TypeError(f"{self.module}.{self.name} is a stand-in for writing checkpoints")


class _TorchStorage:
    __slots__ = ("key", "dtype_name", "numel")

    def __init__(self, key, dtype_name, numel):
        self.key, self.dtype_name, self.numel = key, dtype_name, numel


_REBUILD_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _TorchGlobal("torch._utils", "_rebuild_parameter")


class _TorchPickler(pickle._Pickler):
    """The pure-Python pickler (its save_global can be steered) writing torch's layout."""

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self.storages = storages        # key -> bytes
        self.keys = {}                  # id(tensor) -> storage
        self.keep = []

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, _TorchGlobal):
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
            self.memoize(obj)
            return
        return super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if isinstance(obj, _TorchStorage):
            storage_type = _TorchGlobal("torch", _STORAGE_NAMES[obj.dtype_name])
            return ("storage", self._global(storage_type), obj.key, "cpu", obj.numel)
        return None

    def _global(self, g):
        # one stand-in per name, so pickle's memo writes each GLOBAL once (as torch does)
        cache = self.__dict__.setdefault("_globals", {})
        return cache.setdefault((g.module, g.name), g)

    def reducer_override(self, obj):
        if type(obj) is Tensor:
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return (self._global(_TorchGlobal("torch", "Size")), (tuple(obj),))
        if isinstance(obj, _dt.dtype):
            raise TypeError("rtx.save(format='torch'): dtype objects cannot be written without torch; save "
                            "the name (str(dtype)) instead")
        if isinstance(obj, _devices.device):
            return (self._global(_TorchGlobal("torch", "device")), (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, t):
        storage = self.keys.get(id(t))
        arr = t.detach().__array__()
        name = t.dtype.name
        if name not in _STORAGE_NAMES:
            raise TypeError(f"rtx.save(format='torch'): PyTorch has no storage for dtype {name}")
        if storage is None:
            key = str(len(self.storages))
            if arr.dtype.byteorder == ">":
                arr = arr.astype(arr.dtype.newbyteorder("<"))
            self.storages[key] = _c_order(arr).tobytes()
            storage = _TorchStorage(key, name, int(arr.size))
            self.keys[id(t)] = storage
            self.keep.append(t)
        shape = tuple(int(s) for s in arr.shape)
        stride = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
        hooks = OrderedDict()
        if t.__dict__.get("_is_param"):
            plain = Tensor._make(t._data)
            self.keys[id(plain)] = storage
            self.keep.append(plain)
            return (self._global(_REBUILD_PARAMETER), (plain, bool(t.requires_grad), hooks))
        return (self._global(_REBUILD_TENSOR), (storage, 0, shape, stride, bool(t.requires_grad), hooks))


_STORAGE_NAMES = {"float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
                  "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
                  "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                  "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}


def _save_torch(obj, f):
    import zipfile
    storages = {}
    buf = io.BytesIO()
    _TorchPickler(buf, storages).dump(obj)
    records = [("data.pkl", buf.getvalue()), ("byteorder", b"little")]
    records += [(f"data/{k}", v) for k, v in storages.items()]
    records.append(("version", b"3\n"))
    own = isinstance(f, (str, os.PathLike))
    if not own and not hasattr(f, "write"):
        raise TypeError(f"rtx.save: f must be a path or a binary file object, got {type(f).__name__}")
    fh = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as z:
            for name, data in records:
                info = zipfile.ZipInfo(f"archive/{name}", date_time=(1980, 1, 1, 0, 0, 0))
                # pad the local header so the data starts on a 64-byte boundary (torch's mmap needs it)
                start = z.fp.tell() + 30 + len(info.filename.encode("utf-8"))
                pad = (-(start + 4)) % 64
                info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
                z.writestr(info, data)
    finally:
        if own:
            fh.close()


# ==== load ======================================================================================


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load what rtx.save wrote, a safetensors file, or a PyTorch checkpoint.

    map_location: None (each tensor where it was saved), a device or device string, a dict
    mapping saved locations to new ones ({'cuda:1': 'cuda:0'}), or a callable
    (tensor_on_cpu, saved_location) -> Tensor or None (None: the default placement).
    weights_only (PyTorch checkpoints only): True refuses every global outside the allow-list;
    False trusts the file and lets pickle import anything it names (never for files you did not
    write)."""
    data, name = _read(f)
    locations = {}
    try:
        kind = _sniff(data, name)
        if kind == "safetensors":
            obj = _load_safetensors(data, name, locations)
        elif kind == "zip":
            obj = _TorchReader(name, weights_only, locations).read_zip(data)
        else:
            obj = _TorchReader(name, weights_only, locations).read_legacy(data)
    except (UnpicklingError, _FormatError):
        raise
    except Exception as e:  # a truncated or corrupt file can fail anywhere: say so, never crash obscurely
        raise _FormatError(f"rtx.load: {name} is truncated or corrupt ({type(e).__name__}: {e})") from e
    return _place_all(obj, locations, map_location)


def _read(f):
    if isinstance(f, (str, os.PathLike)):
        name = os.fspath(f)
        with open(name, "rb") as fh:
            return fh.read(), repr(name)
    if hasattr(f, "read"):
        data = f.read()
        if isinstance(data, str):
            raise TypeError("rtx.load: the file object was opened in text mode; open it with 'rb'")
        name = getattr(f, "name", None)
        return bytes(data), (repr(name) if isinstance(name, str) else "the file object")
    raise TypeError(f"rtx.load: f must be a path or a binary file object, got {type(f).__name__}")


def _sniff(data, name):
    if len(data) == 0:
        raise _FormatError(f"rtx.load: {name} is empty")
    # safetensors first: its 8-byte header length may well start with 0x80, a pickle's first byte
    st = len(data) >= 9 and data[8:9] == b"{"
    n = struct.unpack("<Q", data[:8])[0] if st else 0
    if st and 8 + n <= len(data):
        return "safetensors"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if data[:1] == b"\x80":
        return "pickle"
    if st:
        raise _FormatError(f"rtx.load: {name} is a truncated safetensors file (its header says {n} bytes, the "
                           f"file has {len(data) - 8} after the length)")
    raise _FormatError(f"rtx.load: {name} is not an rtx (safetensors) file or a PyTorch checkpoint (it starts with "
                       f"{data[:8]!r})")


# ---- safetensors ---------------------------------------------------------------------------------

_ST_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
              "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "U16": "uint16", "U32": "uint32",
              "U64": "uint64", "BOOL": "bool", "C64": "complex64"}


def _load_safetensors(data, name, locations):
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    if not isinstance(header, dict):
        raise ValueError("the safetensors header is not a JSON object")
    meta = header.pop("__metadata__", None) or {}
    body = memoryview(data)[8 + n:]
    arrays = {}
    for key, spec in header.items():
        code = spec["dtype"]
        if code not in _ST_DTYPES:
            raise _FormatError(f"rtx.load: tensor {key!r} in {name} has dtype {code}, which rtx does not support")
        dtype = _dt.from_name(_ST_DTYPES[code]).np
        shape = tuple(int(s) for s in spec["shape"])
        start, end = (int(x) for x in spec["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= start <= end <= len(body)) or end - start != count * dtype.itemsize:
            raise _FormatError(f"rtx.load: {name} is truncated or corrupt (tensor {key!r}: offsets {start}..{end} "
                               f"for shape {list(shape)} of {_ST_DTYPES[code]} in a {len(body)}-byte body)")
        arrays[key] = np.frombuffer(body[start:end], dtype=dtype, count=count).reshape(shape).copy()
    if "rtx" not in meta:  # a plain safetensors file: its tensors by name
        out = {}
        for key, arr in arrays.items():
            out[key] = t = Tensor._make(arr)
            locations[id(t)] = (t, "cpu", False)
        return out
    spec = json.loads(meta["rtx"])
    return _Decoder(arrays, spec.get("tensors", {}), locations, name).decode(spec["structure"])


class _Decoder:
    def __init__(self, arrays, info, locations, name):
        self.arrays, self.info, self.locations, self.name = arrays, info, locations, name
        self.tensors = {}

    def tensor(self, key):
        t = self.tensors.get(key)
        if t is None:
            if key not in self.arrays:
                raise _FormatError(f"rtx.load: {self.name} refers to a tensor {key!r} that it does not contain")
            arr = self.arrays[key]
            entry = self.info.get(key, {})
            if entry.get("dtype") == "complex128":
                arr = arr[..., 0] + 1j * arr[..., 1]
            t = self.tensors[key] = Tensor._make(arr)
            self.locations[id(t)] = (t, entry.get("device", "cpu"), bool(entry.get("requires_grad", False)))
        return t

    def decode(self, node):
        if not isinstance(node, dict):
            return node
        tag, v = node.get("T"), node.get("v")
        if tag == "tensor":
            return self.tensor(node["key"])
        if tag in ("dict", "odict"):
            items = ((self._key(self.decode(k)), self.decode(x)) for k, x in v)
            return OrderedDict(items) if tag == "odict" else dict(items)
        if tag == "list":
            return [self.decode(x) for x in v]
        if tag == "tuple":
            return tuple(self.decode(x) for x in v)
        if tag == "float":
            return float(v)
        if tag == "complex":
            return complex(self.decode(v[0]), self.decode(v[1]))
        if tag == "size":
            return Size(v)
        if tag == "dtype":
            return _dt.from_name(v)
        if tag == "device":
            return _devices.device(v)
        if tag == "bytes":
            return bytes.fromhex(v)
        raise _FormatError(f"rtx.load: {self.name} holds an unknown node {tag!r} (written by a newer rtx?)")

    @staticmethod
    def _key(k):
        return tuple(_Decoder._key(x) for x in k) if isinstance(k, list) else k


# ---- placement -----------------------------------------------------------------------------------


def _move(t, target):
    dev = _devices.as_device(target)
    if dev.type == "cpu":
        return t if t.is_cpu else t.cpu()
    from rtx.runtime import cuda
    if not cuda.is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but rtx.cuda.is_available() is False. "
                           "If you are running on a CPU-only machine, please use rtx.load with "
                           "map_location='cpu' to map your storages to the CPU.")
    return t.to(dev)


def _target(t, location, map_location):
    if map_location is None:
        return _move(t, location)
    if isinstance(map_location, (str, _devices.device)):
        return _move(t, map_location)
    if isinstance(map_location, dict):
        return _move(t, map_location.get(location, location))
    if callable(map_location):
        res = map_location(t, location)
        if res is None:
            return _move(t, location)
        return res if isinstance(res, Tensor) else _move(t, res)
    raise TypeError(f"rtx.load: map_location must be None, a device, a str, a dict or a callable; got "
                    f"{type(map_location).__name__}")


def _place_all(obj, locations, map_location):
    """Move every loaded tensor where map_location (or its saved location) says, keeping shared
    tensors shared, then set requires_grad as saved."""
    moved = {}
    for key, (t, location, requires_grad) in locations.items():
        p = _target(t, location, map_location)
        if requires_grad and p.is_floating_point() and not p.requires_grad:
            p.requires_grad = True
        moved[key] = p
    if all(moved[k] is t for k, (t, _, _) in locations.items()):
        return obj
    return _replace(obj, moved, {})


def _replace(obj, moved, seen):
    if type(obj) is Tensor:
        return moved.get(id(obj), obj)
    if id(obj) in seen:
        return seen[id(obj)]
    if isinstance(obj, dict):
        seen[id(obj)] = obj
        for k, v in list(obj.items()):
            obj[k] = _replace(v, moved, seen)
        return obj
    if isinstance(obj, list):
        seen[id(obj)] = obj
        obj[:] = [_replace(v, moved, seen) for v in obj]
        return obj
    if isinstance(obj, tuple) and not isinstance(obj, Size):
        new = tuple(_replace(v, moved, seen) for v in obj)
        out = type(obj)(*new) if hasattr(obj, "_fields") else new
        seen[id(obj)] = out
        return out
    if isinstance(obj, (set, frozenset)):
        out = type(obj)(_replace(v, moved, seen) for v in obj)
        seen[id(obj)] = out
        return out
    return obj


# ---- PyTorch checkpoints ------------------------------------------------------------------------

_TORCH_MAGIC = 0x1950A86A20F9469CFC6C
_TORCH_LEGACY_PROTOCOL = 1001

# torch storage class -> rtx dtype name
_STORAGES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
             "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
             "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
             "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128", "UntypedStorage": "uint8"}

# torch.<name> dtype globals -> rtx dtype name
_TORCH_DTYPES = {"float64": "float64", "double": "float64", "float32": "float32", "float": "float32",
                 "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64", "long": "int64",
                 "int32": "int32", "int": "int32", "int16": "int16", "short": "int16", "int8": "int8",
                 "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
                 "complex64": "complex64", "cfloat": "complex64", "complex128": "complex128",
                 "cdouble": "complex128"}


class _StorageType:
    """What torch.FloatStorage & co resolve to: a dtype tag, not callable."""

    def __init__(self, name):
        self.name = name
        self.untyped = name == "UntypedStorage"
        self.dtype = _dt.from_name(_STORAGES[name]).np

    def __repr__(self):
        return f"torch.{self.name}"


class _Storage:
    """One storage of a checkpoint: a flat array (filled later in the legacy format), or a view
    into another storage (legacy storage views)."""

    def __init__(self, dtype, location, array=None, root=None, offset=0, size=0):
        self.dtype, self.location, self._array = dtype, location, array
        self.root, self.offset, self.size = root, offset, size

    @property
    def array(self):
        if self.root is not None:
            return self.root.array[self.offset:self.offset + self.size]
        if self._array is None:
            raise _FormatError("rtx.load: a storage of the checkpoint has no data (truncated file?)")
        return self._array


class _Pending:
    """A tensor whose storage may not be read yet: materialized after unpickling."""

    def __init__(self, storage, offset, size, stride, requires_grad, dtype=None):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.requires_grad, self.dtype = requires_grad, dtype


class _TensorType:
    """torch.Tensor / torch.nn.Parameter as _rebuild_from_type_v2 names them."""

    def __init__(self, name):
        self.name = name


def _check_storage(storage):
    if not isinstance(storage, _Storage):
        raise _FormatError(f"rtx.load: expected a storage, got {type(storage).__name__}")
    return storage


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    return _Pending(_check_storage(storage), int(storage_offset), tuple(size), tuple(stride), bool(requires_grad))


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if not isinstance(dtype, _dt.dtype):
        raise _FormatError(f"rtx.load: expected a dtype, got {dtype!r}")
    return _Pending(_check_storage(storage), int(storage_offset), tuple(size), tuple(stride), bool(requires_grad),
                    dtype.np)


def _torch_rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks, *state):
    if not isinstance(data, _Pending):
        raise _FormatError(f"rtx.load: a parameter must wrap a tensor, got {type(data).__name__}")
    data.requires_grad = bool(requires_grad)  # Parameters come back as plain tensors
    return data


def _rebuild_from_type_v2(func, new_type, args, state):
    if func not in (_rebuild_tensor_v2, _rebuild_tensor_v3, _torch_rebuild_tensor, _rebuild_parameter) or \
            not isinstance(new_type, _TensorType):
        raise _FormatError("rtx.load: unsupported tensor subclass in the checkpoint")
    return func(*args)


def _torch_device(*args):
    try:
        return _devices.device(*args)
    except (RuntimeError, ValueError, TypeError):
        return str(args[0]) if args else "cpu"


def _codecs_encode(obj, encoding="utf-8", errors="strict"):
    # Protocol-2 pickles write bytes as _codecs.encode(str, 'latin1').
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise _FormatError("rtx.load: unexpected use of _codecs.encode in the checkpoint")
    return obj.encode(encoding, errors)


_ALLOWED = {
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_tensor": _torch_rebuild_tensor,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    "torch.Tensor": _TensorType("Tensor"),
    "torch.nn.parameter.Parameter": _TensorType("Parameter"),
    "torch.Size": Size,
    "torch.device": _torch_device,
    "torch.serialization._get_layout": lambda name: str(name),
    "collections.OrderedDict": OrderedDict,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.bytearray": bytearray,
    "_codecs.encode": _codecs_encode,
}


def _ascii(x):
    return x.decode("ascii") if isinstance(x, bytes) else x


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file, reader, persistent=None):
        super().__init__(file, encoding="utf-8")
        self._reader = reader
        self._persistent = persistent

    def find_class(self, module, name):
        key = f"{module}.{name}"
        if key in _ALLOWED:
            return _ALLOWED[key]
        if module in ("torch", "torch.cuda"):
            if name in _STORAGES:
                return _StorageType(name)
            if name in _TORCH_DTYPES:
                return _dt.from_name(_TORCH_DTYPES[name])
            if name.endswith("Storage"):
                raise _FormatError(f"rtx.load: {self._reader.name} holds {key} storages, which rtx does not support")
        if not self._reader.weights_only:
            try:
                return super().find_class(module, name)
            except (ImportError, AttributeError) as e:
                raise _FormatError(f"rtx.load: {self._reader.name} needs {key}, which cannot be imported ({e}); "
                                   "rtx reads tensors and containers of tensors from PyTorch checkpoints, not "
                                   "pickled modules or other objects: save a state_dict instead") from None
        raise UnpicklingError(
            f"rtx.load: refusing to load {self._reader.name}: it refers to the global '{key}', which is not on "
            f"rtx's allow-list of tensor-checkpoint globals. Unpickling it could run arbitrary code. If (and only "
            f"if) you trust the file, pass weights_only=False.")

    def persistent_load(self, pid):
        if self._persistent is None:
            raise _FormatError(f"rtx.load: unexpected persistent id {pid!r} in {self._reader.name}")
        return self._persistent(pid)


class _TorchReader:
    def __init__(self, name, weights_only, locations):
        self.name, self.weights_only, self.locations = name, weights_only, locations

    def unpickle(self, stream, persistent=None):
        return _RestrictedUnpickler(stream, self, persistent).load()

    # -- the zip format: <prefix>/data.pkl, <prefix>/data/<key>, <prefix>/byteorder, ...
    def read_zip(self, data):
        import zipfile
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = zf.namelist()
        pkls = sorted((n for n in names if n == "data.pkl" or (n.endswith("/data.pkl") and n.count("/") == 1)),
                      key=len)
        if not pkls:
            raise _FormatError(f"rtx.load: {self.name} is a zip archive but not a PyTorch checkpoint (no data.pkl)")
        prefix = pkls[0][:-len("data.pkl")]
        big = prefix + "byteorder" in names and zf.read(prefix + "byteorder").strip() == b"big"
        storages = {}

        def persistent(pid):
            if not isinstance(pid, tuple) or _ascii(pid[0]) != "storage" or len(pid) < 5:
                raise _FormatError(f"rtx.load: unexpected persistent id {pid!r} in {self.name}")
            stype, key, location, numel = pid[1:5]
            if not isinstance(stype, _StorageType):
                raise _FormatError(f"rtx.load: {stype!r} is not a storage type")
            key = str(_ascii(key))
            if key not in storages:
                raw = zf.read(f"{prefix}data/{key}")
                dtype = stype.dtype.newbyteorder(">") if big and stype.dtype.itemsize > 1 else stype.dtype
                n = int(numel)
                if len(raw) < n * dtype.itemsize:
                    raise _FormatError(f"rtx.load: {self.name} is truncated or corrupt (storage {key} has "
                                       f"{len(raw)} bytes, expected {n * dtype.itemsize})")
                arr = np.frombuffer(raw, dtype=dtype, count=n)
                if big:
                    arr = arr.astype(stype.dtype)
                storages[key] = _Storage(stype.dtype, str(_ascii(location)), arr)
            return storages[key]

        result = self.unpickle(io.BytesIO(zf.read(prefix + "data.pkl")), persistent)
        return self.materialize(result)

    # -- the legacy format: magic, protocol, sys_info, the object, the storage keys, raw storages
    def read_legacy(self, data):
        f = io.BytesIO(data)
        magic = self.unpickle(f)
        if magic != _TORCH_MAGIC:
            raise _FormatError(f"rtx.load: {self.name} is a pickle but not a PyTorch checkpoint (invalid magic "
                               "number); rtx.load does not unpickle arbitrary files")
        if self.unpickle(f) != _TORCH_LEGACY_PROTOCOL:
            raise _FormatError(f"rtx.load: {self.name}: unsupported PyTorch legacy protocol version")
        sys_info = self.unpickle(f)
        big = isinstance(sys_info, dict) and sys_info.get("little_endian", True) is False
        roots, views = {}, {}

        def persistent(pid):
            if not isinstance(pid, tuple) or _ascii(pid[0]) != "storage" or len(pid) < 6:
                raise _FormatError(f"rtx.load: unsupported persistent id {pid!r} in {self.name}")
            stype, root_key, location, numel, view = pid[1:6]
            if not isinstance(stype, _StorageType):
                raise _FormatError(f"rtx.load: {stype!r} is not a storage type")
            root_key = str(_ascii(root_key))
            root = roots.get(root_key)
            if root is None:
                root = roots[root_key] = _Storage(stype.dtype, str(_ascii(location)))
            if view is None:
                return root
            view_key, offset, size = view
            return views.setdefault(str(_ascii(view_key)), _Storage(stype.dtype, root.location, root=root,
                                                                    offset=int(offset), size=int(size)))

        result = self.unpickle(f, persistent)
        keys = self.unpickle(f)
        for key in keys:
            st = roots.get(str(_ascii(key)))
            if st is None:
                raise _FormatError(f"rtx.load: {self.name} lists storage {key!r} that no tensor uses")
            (n,) = struct.unpack("<q", f.read(8))
            dtype = st.dtype.newbyteorder(">") if big and st.dtype.itemsize > 1 else st.dtype
            raw = f.read(n * dtype.itemsize)
            if len(raw) != n * dtype.itemsize:
                raise _FormatError(f"rtx.load: {self.name} is truncated (storage {key} is cut short)")
            arr = np.frombuffer(raw, dtype=dtype)
            st._array = arr.astype(st.dtype) if big else arr
        return self.materialize(result)

    # -- pending tensors -> rtx Tensors (shared objects stay shared)
    def materialize(self, obj):
        done = {}

        def tensor(p):
            t = done.get(id(p))
            if t is None:
                arr = p.storage.array
                if p.dtype is not None:  # _rebuild_tensor_v3: an untyped (byte) storage viewed as dtype
                    arr = arr[:arr.size - arr.size % p.dtype.itemsize].view(p.dtype)
                t = done[id(p)] = Tensor._make(_strided_copy(arr, p.offset, p.size, p.stride, self.name))
                self.locations[id(t)] = (t, p.storage.location, p.requires_grad)
            return t

        seen = {}

        def walk(o):
            if isinstance(o, _Pending):
                return tensor(o)
            if isinstance(o, (_Storage, _StorageType, _TensorType)):
                raise _FormatError(f"rtx.load: {self.name} holds a bare {type(o).__name__.strip('_')}, which rtx "
                                   "cannot load")
            if id(o) in seen:
                return seen[id(o)]
            if isinstance(o, dict):
                seen[id(o)] = o
                for k, v in list(o.items()):
                    o[k] = walk(v)
                return o
            if isinstance(o, list):
                seen[id(o)] = o
                o[:] = [walk(v) for v in o]
                return o
            if isinstance(o, tuple) and not isinstance(o, Size):
                out = tuple(walk(v) for v in o)
                seen[id(o)] = out
                return out
            if isinstance(o, (set, frozenset)):
                out = type(o)(walk(v) for v in o)
                seen[id(o)] = out
                return out
            if not self.weights_only and hasattr(o, "__dict__") and not isinstance(o, type):
                seen[id(o)] = o
                for k, v in list(vars(o).items()):
                    setattr(o, k, walk(v))
            return o

        return walk(obj)


def _strided_copy(arr, offset, size, stride, name):
    """The tensor (offset, size, stride) over a flat storage, as a fresh C-contiguous array."""
    if len(size) != len(stride):
        raise _FormatError(f"rtx.load: {name} has a tensor with size {size} but stride {stride}")
    count = int(np.prod(size, dtype=np.int64))
    if count == 0:
        return np.empty(size, dtype=arr.dtype)
    extent = offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
    if offset < 0 or any(st < 0 for st in stride) or extent > arr.size:
        raise _FormatError(f"rtx.load: {name} is corrupt: a tensor of size {list(size)}, stride {list(stride)} at "
                           f"offset {offset} reaches past its storage of {arr.size} elements")
    view = np.lib.stride_tricks.as_strided(arr[offset:], shape=size, strides=[st * arr.itemsize for st in stride])
    return np.array(view, copy=True, order="C")
