"""rtx.save / rtx.load, with PyTorch's semantics.

Who pickles, when:
- A tensor tree (a Tensor, or dicts / OrderedDicts / lists / tuples of tensors and plain values:
  a state_dict, an optimizer's state_dict) is written in rtx's own format, a safetensors file:
  every tensor once, under a readable key (its path in the saved structure, e.g.
  "state.0.exp_avg"), and the nested structure as JSON in the header's __metadata__. Writing and
  reading it runs no pickle. A tensor that appears twice is stored once and comes back shared.
- Anything else PyTorch's torch.save accepts (a whole nn.Module, a NumPy array, a dict holding
  arbitrary picklable objects) is pickled into PyTorch's zip checkpoint, which torch.load reads:
  rtx tensors inside it are written as torch's storage records (_rebuild_tensor_v2 and friends),
  so no rtx name is needed to read the tensors back. format="torch" always writes that zip;
  format="safetensors" always writes rtx's format and refuses what is not a tensor tree.

rtx.load reads rtx files, plain safetensors files (e.g. from Hugging Face) and PyTorch
checkpoints (the zip format and the legacy pickle stream) without PyTorch. weights_only=True,
the default as in PyTorch >= 2.6, unpickles through an allow-list: the globals a tensor
checkpoint needs (resolved to rtx stand-ins) plus what the user marked safe with
rtx.serialization.add_safe_globals / safe_globals; any other global is refused with PyTorch's
message before it can run. weights_only=False trusts the file and lets pickle import what it
names; TORCH_FORCE_WEIGHTS_ONLY_LOAD and TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD act as in PyTorch.
"""
from __future__ import annotations

import _compat_pickle
import io
import os
import pickle
import struct
import warnings
from collections import Counter, OrderedDict

import numpy as np

from rtx._tensor.tensor import Size, Tensor
from rtx.runtime import devices as _devices
from rtx.runtime import dtypes as _dt

__all__ = ["save", "load", "UnpicklingError", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint"]

_FORMAT_VERSION = 1


class UnpicklingError(pickle.UnpicklingError):
    """A checkpoint refers to a global outside the weights-only allow-list: unpickling it could run code."""


class _FormatError(RuntimeError):
    """A file rtx.load cannot read, with a message that already says why."""


def _rebuild_tensor(array, device_str, requires_grad):
    """The unpickling side of Tensor.__reduce_ex__ (pickle, multiprocessing, copy.deepcopy)."""
    t = Tensor._make(np.asarray(array))
    if device_str != "cpu":
        t = _move(t, device_str)
    if requires_grad:
        t.requires_grad = True
    return t


# ==== the user's allow-list (torch.serialization.add_safe_globals & co) ==========================

_marked_safe_globals: set = set()


def add_safe_globals(safe_globals):
    """Mark globals (functions, classes, or (object, "module.qualname") pairs) as safe for
    rtx.load(weights_only=True): they may then be called or instantiated while unpickling."""
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals | set(safe_globals)


def get_safe_globals():
    """The globals the user marked safe (add_safe_globals / an active safe_globals context)."""
    return list(_marked_safe_globals)


def clear_safe_globals():
    """Forget every global add_safe_globals marked safe."""
    global _marked_safe_globals
    _marked_safe_globals = set()


class safe_globals:
    """with rtx.serialization.safe_globals([MyClass]): rtx.load(f) -- MyClass is allowed inside."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        global _marked_safe_globals
        _marked_safe_globals = _marked_safe_globals - set(self.safe_globals)


def _user_allowed():
    out = {}
    for g in _marked_safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple "
                                 f"of length: {len(g)}")
            if type(g[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                                f"{type(g[1])}")
            out[g[1]] = g[0]
        else:
            out[f"{g.__module__}.{g.__qualname__}"] = g
    return out


# ==== save ======================================================================================


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, format="rtx"):
    """Save `obj` to a path or a binary file object, as torch.save does.

    A tensor tree (a Tensor, or nested dicts / lists / tuples of tensors and plain values, such
    as a state_dict) is written in rtx's safetensors format, without pickle. Any other picklable
    object (a whole module, a NumPy array, custom classes) is pickled into PyTorch's zip
    checkpoint (protocol `pickle_protocol`), which torch.load reads; loading it back needs
    weights_only=False or add_safe_globals for its classes, as in PyTorch.
    format="torch" always writes PyTorch's zip (torch.load(weights_only=True) reads a tensor
    tree written so); format="safetensors" refuses what is not a tensor tree. pickle_module is
    accepted for PyTorch compatibility; rtx pickles with the standard pickle."""
    if format not in ("rtx", "safetensors", "torch"):
        raise ValueError(f"rtx.save: format must be 'rtx' (safetensors for tensor trees, else PyTorch's zip), "
                         f"'safetensors' or 'torch', got {format!r}")
    if not isinstance(f, (str, os.PathLike)) and not hasattr(f, "write"):
        raise TypeError(f"rtx.save: f must be a path or a binary file object, got {type(f).__name__}")
    if format == "torch":
        return _save_torch(obj, f, pickle_protocol)
    enc = _Encoder()
    try:
        structure = enc.encode(obj, "")
    except _NotATree as e:
        if format == "safetensors":
            raise TypeError(str(e)) from None
        return _save_torch(obj, f, pickle_protocol)
    import json  # here, not at the top: `import rtx` need not pay for it

    from safetensors.numpy import save as st_save
    from safetensors.numpy import save_file as st_save_file
    meta = {"rtx": json.dumps({"version": _FORMAT_VERSION, "structure": structure, "tensors": enc.info},
                              separators=(",", ":"), allow_nan=False)}
    if isinstance(f, (str, os.PathLike)):
        st_save_file(enc.arrays, os.fspath(f), metadata=meta)
    else:
        f.write(st_save(enc.arrays, metadata=meta))


class _NotATree(TypeError):
    """The object is not a tensor tree: rtx.save pickles it (PyTorch's zip) instead."""


class _Encoder:
    """Walks a tensor tree: tensors go to `arrays` (each object once), the rest to JSON nodes.
    Types are matched exactly (a namedtuple or an IntEnum is not a tensor tree: pickle keeps them)."""

    def __init__(self):
        self.arrays = {}
        self.info = {}
        self.key_of = {}
        self.keep = []      # holds encoded tensors so that their ids stay unique while saving
        self.active = set()  # containers being encoded: a cycle is left to pickle

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
            if t.__dict__.get("_is_param") and "_param_kind" not in t.__dict__:
                entry["param"] = True
            elif t.__dict__.get("_is_param"):
                raise _NotATree(f"rtx.save: a {t.__dict__['_param_kind'].__name__} is not a plain tensor")
            if arr.dtype == np.complex128:  # not a safetensors dtype: real and imaginary parts
                arr = _c_order(np.stack([arr.real, arr.imag], axis=-1))
            self.arrays[key] = arr
            self.info[key] = entry
        return {"T": "tensor", "key": key}

    def encode(self, obj, path):
        t = type(obj)
        if obj is None or t in (bool, str, int):
            return obj
        if t is float:
            return obj if np.isfinite(obj) else {"T": "float", "v": repr(obj)}
        if t is Tensor:
            return self.tensor(obj, path)
        if isinstance(obj, np.generic):  # a NumPy scalar (a loss, a metric) is kept as its Python value
            return self.encode(obj.item(), path)
        if t is complex:
            return {"T": "complex", "v": [self.encode(obj.real, path), self.encode(obj.imag, path)]}
        if t is Size:
            return {"T": "size", "v": list(obj)}
        if isinstance(obj, _dt.dtype):
            return {"T": "dtype", "v": obj.name}
        if isinstance(obj, _devices.device):
            return {"T": "device", "v": str(obj)}
        if t is bytes:
            return {"T": "bytes", "v": obj.hex()}
        if t in (dict, OrderedDict, list, tuple):
            if id(obj) in self.active:
                raise _NotATree(f"rtx.save: the object contains a reference cycle (at {path or 'the top level'})")
            self.active.add(id(obj))
            try:
                return self._container(obj, path)
            finally:
                self.active.discard(id(obj))
        raise _NotATree(f"rtx.save: cannot save an object of type {t.__module__}.{t.__qualname__} (at "
                        f"{path or 'the top level'}) in format='safetensors': rtx's format holds tensors and "
                        "nested dicts, lists and tuples of tensors and plain values (int, float, str, bool, None) "
                        "and loads without pickle; the default format pickles other objects (PyTorch's zip).")

    def _container(self, obj, path):
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not (k is None or type(k) in (bool, int, float, str, tuple)):
                    raise _NotATree(f"rtx.save: dict keys must be str, int, float, bool, None or tuples of these "
                                    f"in format='safetensors'; got {type(k).__name__} at {path or 'the top level'}")
                items.append([self.encode(k, path), self.encode(v, _join(path, k))])
            return {"T": "odict" if type(obj) is OrderedDict else "dict", "v": items}
        tag = "list" if type(obj) is list else "tuple"
        return {"T": tag, "v": [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]}


def _c_order(arr):
    # not np.ascontiguousarray: it turns 0-d arrays into 1-d ones
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _join(path, k):
    return f"{path}.{k}" if path else str(k)


# ==== save in PyTorch's zip format ================================================================
#
# torch.save's zip: archive/data.pkl (a pickle in which each tensor is
# torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())
# and each storage a persistent id ('storage', torch.<Type>Storage, key, location, numel)),
# archive/data/<key> (the storages' raw little-endian bytes, 64-byte aligned like torch's),
# archive/byteorder and archive/version. The torch globals are written as GLOBAL opcodes by
# name (stand-ins below), so torch is never imported; every other object pickles as usual.

class _TorchGlobal:
    """A torch global written by name (module, qualname); callable so that pickle's
    save_reduce accepts it as a reduce function."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        raise TypeError(f"{self.module}.{self.name} is a stand-in for writing checkpoints")


class _TorchStorage:
    __slots__ = ("key", "dtype_name", "numel", "location")

    def __init__(self, key, dtype_name, numel, location):
        self.key, self.dtype_name, self.numel, self.location = key, dtype_name, numel, location


_REBUILD_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _TorchGlobal("torch._utils", "_rebuild_parameter")


class _TorchPickler(pickle._Pickler):
    """The pure-Python pickler (its save of globals can be steered) writing torch's layout."""

    def __init__(self, file, storages, protocol=2):
        super().__init__(file, protocol=protocol)
        self.storages = storages        # key -> bytes
        self.keys = {}                  # id(tensor) -> storage
        self.keep = []
        self._globals = {}

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, _TorchGlobal):
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
            self.memoize(obj)
            return
        if isinstance(obj, _dt.dtype):  # torch pickles a dtype as the global torch.<name>
            return self.save(self._global("torch", obj.name))
        return super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if isinstance(obj, _TorchStorage):
            storage_type = self._global("torch", _STORAGE_NAMES[obj.dtype_name])
            return ("storage", storage_type, obj.key, obj.location, obj.numel)
        return None

    def _global(self, module, name):
        # one stand-in per name, so pickle's memo writes each GLOBAL once (as torch does)
        return self._globals.setdefault((module, name), _TorchGlobal(module, name))

    def reducer_override(self, obj):
        if type(obj) is Tensor:
            return self._reduce_tensor(obj)
        if type(obj) is Size:
            return (self._global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, _devices.device):
            return (self._global("torch", "device"), (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, t):
        storage = self.keys.get(id(t))
        arr = t.detach().__array__()
        name = t.dtype.name
        if name not in _STORAGE_NAMES:
            raise TypeError(f"rtx.save: PyTorch has no storage for dtype {name}")
        if storage is None:
            key = str(len(self.storages))
            if arr.dtype.byteorder == ">":
                arr = arr.astype(arr.dtype.newbyteorder("<"))
            self.storages[key] = _c_order(arr).tobytes()
            location = "cpu" if t.device.type == "cpu" else f"{t.device.type}:{t.device.index or 0}"
            storage = _TorchStorage(key, name, int(arr.size), location)
            self.keys[id(t)] = storage
            self.keep.append(t)
        shape = tuple(int(s) for s in arr.shape)
        stride = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
        hooks = OrderedDict()
        if t.__dict__.get("_is_param"):
            plain = Tensor._make(t._data)
            self.keys[id(plain)] = storage
            self.keep.append(plain)
            return (self._global("torch._utils", "_rebuild_parameter"), (plain, bool(t.requires_grad), hooks))
        return (self._global("torch._utils", "_rebuild_tensor_v2"),
                (storage, 0, shape, stride, bool(t.requires_grad), hooks))


_STORAGE_NAMES = _dt.STORAGE_NAMES  # rtx dtype name -> torch storage class


def _save_torch(obj, f, protocol=2):
    import zipfile
    storages = {}
    buf = io.BytesIO()
    _TorchPickler(buf, storages, protocol).dump(obj)
    records = [("data.pkl", buf.getvalue()), ("byteorder", b"little")]
    records += [(f"data/{k}", v) for k, v in storages.items()]
    records.append(("version", b"3\n"))
    own = isinstance(f, (str, os.PathLike))
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

_TRUE = ("1", "y", "yes", "true")

_UNSAFE_MESSAGE = (
    "rtx.load defaults to `weights_only=True`, as torch.load does since PyTorch 2.6. Re-running `rtx.load` with "
    "`weights_only` set to `False` will likely succeed, but it can result in arbitrary code execution. Do it only "
    "if you got the file from a trusted source.")


_DOCS_MESSAGE = ("\n\nCheck the documentation of rtx.load (rtx-tensor's README, 'Saving and loading') to learn "
                 "more about types accepted by default with weights_only.")


def _wo_message(message):
    """PyTorch's wording around a weights-only refusal (torch.serialization._get_wo_message)."""
    if "was not an allowed global by default" in message:
        message = ("Weights only load failed. This file can still be loaded, to do so you have two options, \033[1mdo "
                   "those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) " + _UNSAFE_MESSAGE +
                   "\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in "
                   "the following error message.\n\tWeightsUnpickler error: " + message)
    elif "is blocked" in message:
        message = f"Weights only load failed. {_UNSAFE_MESSAGE}\n\n\n{message}"
    else:
        message = ("Weights only load failed. " + _UNSAFE_MESSAGE + "\nPlease file an issue with the following so "
                   "that we can make `weights_only=True` compatible with your use case: WeightsUnpickler error: "
                   "\n\n" + message)
    return message + _DOCS_MESSAGE


def _resolve_weights_only(weights_only, pickle_module):
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force_wo = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    force_no_wo = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    if force_wo and force_no_wo:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force_wo:
        weights_only = True
    elif force_no_wo and not_set:  # only overrides a call that did not choose explicitly
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the `weights_only` "
                      "argument was not explicitly passed to `rtx.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        weights_only = False
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    return bool(weights_only)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what rtx.save (or torch.save) wrote, or a safetensors file.

    map_location: None (each tensor where it was saved), a device or device string, a dict
    mapping saved locations to new ones ({'cuda:1': 'cuda:0'}), or a callable
    (tensor_on_cpu, saved_location) -> Tensor or None (None: the default placement).
    weights_only (pickled checkpoints only; rtx and safetensors files never unpickle): None
    means True, as in PyTorch >= 2.6 (False when a pickle_module is given), and the
    TORCH_FORCE_WEIGHTS_ONLY_LOAD / TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD variables apply. True refuses
    every global outside the allow-list (tensor-checkpoint globals plus add_safe_globals); False
    trusts the file and lets pickle import and call anything it names (never for files you did
    not write). pickle_module must offer Unpickler (default: pickle); mmap is accepted and
    ignored (tensors are read into memory)."""
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    data, name = _read(f)
    reader = _TorchReader(name, weights_only, map_location, pickle_module or pickle,
                          pickle_load_args.get("encoding", "utf-8"))
    reader.user_allowed = _user_allowed() if weights_only else {}  # checks the user's entries up front
    try:
        kind = _sniff(data, name)
        if kind == "safetensors":
            return _load_safetensors(data, name, reader)
        if kind == "zip":
            return reader.read_zip(data)
        return reader.read_legacy(data)
    except _WeightsOnlyError as e:
        raise UnpicklingError(_wo_message(str(e))) from None
    except (UnpicklingError, _FormatError, RuntimeError):
        raise
    except Exception as e:  # a truncated or corrupt file can fail anywhere: say so, never crash obscurely
        raise _FormatError(f"rtx.load: {name} is truncated or corrupt ({type(e).__name__}: {e})") from e


def get_unsafe_globals_in_checkpoint(f):
    """The globals a pickled checkpoint names that weights_only=True would refuse, found by reading
    the pickle's opcodes (nothing is imported or called)."""
    import pickletools
    import zipfile
    data, name = _read(f)
    kind = _sniff(data, name)
    if kind == "safetensors":
        return []
    if kind == "zip":
        zf = zipfile.ZipFile(io.BytesIO(data))
        pkls = sorted((n for n in zf.namelist() if n == "data.pkl" or n.endswith("/data.pkl")), key=len)
        streams = [zf.read(pkls[0])] if pkls else []
    else:
        streams = [data]
    found = []
    for stream in streams:
        fh = io.BytesIO(stream)
        while fh.tell() < len(stream):
            strings = []
            for op, arg, _ in pickletools.genops(fh):
                if op.name == "GLOBAL":
                    found.append(_mapped(*arg.split(" ", 1)))
                elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
                    strings.append(arg)
                elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                    found.append(_mapped(strings[-2], strings[-1]))
    allowed = _user_allowed()
    out = []
    for module, nm in found:
        key = f"{module}.{nm}"
        if key not in allowed and _builtin_global(module, nm) is None and key not in out:
            out.append(key)
    return out


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

_ST_DTYPES = {code: name for name, code in _dt.SAFETENSORS_NAMES.items()}  # "F32" -> "float32"


def _load_safetensors(data, name, reader):
    import json  # here, not at the top: `import rtx` need not pay for it

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
        return {key: reader.place(Tensor._make(arr), "cpu", False, False) for key, arr in arrays.items()}
    spec = json.loads(meta["rtx"])
    return _Decoder(arrays, spec.get("tensors", {}), reader, name).decode(spec["structure"])


class _Decoder:
    def __init__(self, arrays, info, reader, name):
        self.arrays, self.info, self.reader, self.name = arrays, info, reader, name
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
            t = self.tensors[key] = self.reader.place(Tensor._make(arr), entry.get("device", "cpu"),
                                                      bool(entry.get("requires_grad", False)),
                                                      bool(entry.get("param", False)))
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


# ---- PyTorch checkpoints ------------------------------------------------------------------------

_TORCH_MAGIC = 0x1950A86A20F9469CFC6C
_TORCH_LEGACY_PROTOCOL = 1001

# torch storage class -> rtx dtype name
_STORAGES = {storage: name for name, storage in _dt.STORAGE_NAMES.items()} | {"UntypedStorage": "uint8"}

# modules whose globals weights_only=True refuses even if allow-listed (PyTorch's blocklist)
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")


class _WeightsOnlyError(pickle.UnpicklingError):
    """Raised inside the unpickler; rtx.load rewraps it with PyTorch's explanation."""


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
    def ready(self):
        return (self.root or self)._array is not None

    @property
    def array(self):
        if self.root is not None:
            return self.root.array[self.offset:self.offset + self.size]
        if self._array is None:
            raise _FormatError("rtx.load: a storage of the checkpoint has no data (truncated file?)")
        return self._array


class _Pending:
    """A tensor whose storage is not read yet (the legacy format stores data after the pickle):
    materialized after unpickling."""

    def __init__(self, storage, offset, size, stride, requires_grad, dtype=None):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.requires_grad, self.dtype, self.param = requires_grad, dtype, False


class _TensorType:
    """torch.Tensor / torch.nn.Parameter as _rebuild_from_type_v2 names them."""

    def __init__(self, name):
        self.name = name


def _check_storage(storage):
    if not isinstance(storage, _Storage):
        raise _FormatError(f"rtx.load: expected a storage, got {type(storage).__name__}")
    return storage


class _Rebuild:
    """torch._utils' rebuild functions for one load: each returns an rtx Tensor, placed where
    map_location says, as soon as its storage has been read (at once in the zip format)."""

    def __init__(self, reader):
        self.reader = reader

    def tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                  metadata=None):
        return self.reader.tensor(_Pending(_check_storage(storage), int(storage_offset), tuple(size),
                                           tuple(stride), bool(requires_grad)))

    def tensor_v3(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                  metadata=None):
        if not isinstance(dtype, _dt.dtype):
            raise _FormatError(f"rtx.load: expected a dtype, got {dtype!r}")
        return self.reader.tensor(_Pending(_check_storage(storage), int(storage_offset), tuple(size),
                                           tuple(stride), bool(requires_grad), dtype.np))

    def tensor_v1(self, storage, storage_offset, size, stride):
        return self.tensor_v2(storage, storage_offset, size, stride)

    def parameter(self, data, requires_grad, backward_hooks, *state):
        if isinstance(data, _Pending):
            data.requires_grad, data.param = bool(requires_grad), True
            return data
        if not isinstance(data, Tensor):
            raise _FormatError(f"rtx.load: a parameter must wrap a tensor, got {type(data).__name__}")
        return _finish(data, bool(requires_grad), True)

    def from_type_v2(self, func, new_type, args, state):
        if func not in (self.tensor_v1, self.tensor_v2, self.tensor_v3, self.parameter) or \
                not isinstance(new_type, _TensorType):
            raise _FormatError("rtx.load: unsupported tensor subclass in the checkpoint")
        return func(*args)


def _finish(t, requires_grad, param):
    if param:
        t.__dict__["_is_param"] = True
    if requires_grad and t.is_floating_point() and not t.requires_grad:
        t.requires_grad = True
    return t


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


# globals a weights-only load resolves (PyTorch's default allow-list), to rtx stand-ins
_ALLOWED = {
    "torch.Tensor": _TensorType("Tensor"),
    "torch.nn.parameter.Parameter": _TensorType("Parameter"),
    "torch.Size": Size,
    "torch.device": _torch_device,
    "torch.serialization._get_layout": lambda name: str(name),
    "collections.OrderedDict": OrderedDict,
    "collections.Counter": Counter,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.bytearray": bytearray,
    "builtins.complex": complex,
    "_codecs.encode": _codecs_encode,
}

# rebuild functions, bound to the load in progress
_REBUILDERS = {
    "torch._utils._rebuild_tensor_v2": "tensor_v2",
    "torch._utils._rebuild_tensor_v3": "tensor_v3",
    "torch._utils._rebuild_tensor": "tensor_v1",
    "torch._utils._rebuild_parameter": "parameter",
    "torch._utils._rebuild_parameter_with_state": "parameter",
    "torch._tensor._rebuild_from_type_v2": "from_type_v2",
}


def _mapped(module, name):
    # protocol-2 pickles name Python 2 modules (__builtin__, copy_reg): map them as pickle does
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _builtin_global(module, name):
    """The rtx stand-in for a global PyTorch allows by default, or None."""
    key = f"{module}.{name}"
    if key in _ALLOWED or key in _REBUILDERS:
        return _ALLOWED.get(key, key)
    if module in ("torch", "torch.cuda"):
        if name in _STORAGES:
            return _StorageType(name)
        d = _dt.from_torch_name(name)  # torch.<name> dtype globals (torch.float32, torch.long, ...)
        if d is not None:
            return d
    return None


def _unsupported(key):
    # PyTorch names builtins without their module in this message
    shown = key[len("builtins."):] if key.startswith("builtins.") else key
    return (f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
            f"`rtx.serialization.add_safe_globals([{shown}])` or the `rtx.serialization.safe_globals([{shown}])` "
            "context manager to allowlist this global if you trust this class/function.")


def _unpickler_class(base):
    class _CheckpointUnpickler(base):
        """Unpickles a checkpoint: torch's globals become rtx stand-ins; with weights_only, every
        other global must be allow-listed or the load stops before anything is called."""

        def __init__(self, file, reader, persistent=None):
            super().__init__(file, encoding=reader.encoding)
            self._reader = reader
            self._persistent = persistent

        def find_class(self, module, name):
            module, name = _mapped(module, name)
            key = f"{module}.{name}"
            reader = self._reader
            if key in _REBUILDERS:
                return getattr(reader.rebuild, _REBUILDERS[key])
            found = _builtin_global(module, name)
            if found is not None:
                return found
            if module in ("torch", "torch.cuda") and name.endswith("Storage"):
                raise _FormatError(f"rtx.load: {reader.name} holds {key} storages, which rtx does not support")
            if reader.weights_only:
                if module in _BLOCKED_MODULES:
                    raise _WeightsOnlyError(f"Trying to load unsupported GLOBAL {key} whose module {module} is "
                                            "blocked.")
                if key in reader.user_allowed:
                    return reader.user_allowed[key]
                raise _WeightsOnlyError(_unsupported(key))
            try:
                return super().find_class(module, name)
            except (ImportError, AttributeError) as e:
                raise _FormatError(f"rtx.load: {reader.name} needs {key}, which cannot be imported here ({e}); a "
                                   "pickled object is rebuilt from its classes, so they must be importable (to "
                                   "exchange weights, save a state_dict)") from None

        def persistent_load(self, pid):
            if self._persistent is None:
                raise _FormatError(f"rtx.load: unexpected persistent id {pid!r} in {self._reader.name}")
            return self._persistent(pid)

    return _CheckpointUnpickler


def _ascii(x):
    return x.decode("ascii") if isinstance(x, bytes) else x


class _TorchReader:
    def __init__(self, name, weights_only, map_location, pickle_module=pickle, encoding="utf-8"):
        self.name, self.weights_only, self.map_location = name, weights_only, map_location
        self.encoding = encoding
        self.user_allowed = {}
        self.rebuild = _Rebuild(self)
        self.unpickler = _unpickler_class(getattr(pickle_module, "Unpickler", pickle.Unpickler))
        self.done = {}

    def unpickle(self, stream, persistent=None):
        return self.unpickler(stream, self, persistent).load()

    def place(self, t, location, requires_grad, param):
        return _finish(_target(t, location, self.map_location), requires_grad, param)

    def tensor(self, p):
        """The rtx Tensor of a pending tensor, or the pending tensor itself while its storage is unread."""
        if not p.storage.ready:
            return p
        t = self.done.get(id(p))
        if t is None:
            arr = p.storage.array
            if p.dtype is not None:  # _rebuild_tensor_v3: an untyped (byte) storage viewed as dtype
                arr = arr[:arr.size - arr.size % p.dtype.itemsize].view(p.dtype)
            t = Tensor._make(_strided_copy(arr, p.offset, p.size, p.stride, self.name))
            t = self.done[id(p)] = self.place(t, p.storage.location, p.requires_grad, p.param)
            self.done[id(p), "keep"] = p
        return t

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

    # -- pending tensors (legacy format) -> rtx Tensors, in containers and, when the file is
    # trusted, in objects' attributes; shared objects stay shared
    def materialize(self, obj):
        seen = {}

        def walk(o):
            if isinstance(o, _Pending):
                return self.tensor(o)
            if isinstance(o, (_Storage, _StorageType, _TensorType)):
                raise _FormatError(f"rtx.load: {self.name} holds a bare {type(o).__name__.strip('_')}, which rtx "
                                   "cannot load")
            if isinstance(o, (str, bytes, int, float, Tensor)) or o is None or id(o) in seen:
                return seen.get(id(o), o)
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
                new = tuple(walk(v) for v in o)
                out = o if all(a is b for a, b in zip(new, o)) else \
                    (type(o)(*new) if hasattr(o, "_fields") else type(o)(new))
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
