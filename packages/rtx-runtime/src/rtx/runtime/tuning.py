"""The tuning cache: configurations that rtx-automeasure measured fastest on this machine, read
by the kernels that have tunable parameters (a convolution's chunk size, attention tiles, thread
counts, CUDA block sizes). The reader lives here, at the bottom of the layer table, so that
rtx-kernel, rtx-nn and rtx-flash-attn can consult it without importing rtx-automeasure (the
writer, in the specialized layer).

The file is JSON at `$RTX_TUNING_CACHE`, else `<user cache dir>/rtx/tuning.json`. An entry is keyed by
(op, shape bucket, dtype, device name, machine fingerprint); the fingerprint is a hash of the
CPU model, core count, BLAS library and its version (and NumPy's), so a cache copied to another
machine, or kept across a BLAS upgrade, is simply not consulted there. A corrupt or unreadable
file is ignored with a warning (the kernels then use their defaults); writes replace the file
in one step (a temporary file renamed over it), so a reader never sees half a file.

    lookup("conv2d", (8, 64, 32, 32), "float32")   # -> {"chunk_bytes": ..., ...} or None

The kernels that read it (each falls back to its built-in default when lookup returns None, so
without a cache file they behave exactly as before): rtx-nn's convolutions ("conv1d|2d|3d":
chunk_bytes, workers), rtx-nn's small-GEMM policy of Linear ("gemm_small": single_threaded),
rtx-flash-attn's CPU tiles ("flash_attn": block_q, block_k), rtx-kernel's one-block-per-row CUDA
kernels ("cuda_rows.<kernel>": threads). The tuner (`rtx automeasure tune`) measures candidates
under `forced(op, config)` and finds the keys a workload asks for with `record()`.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
import os
import platform
import sys
import threading
import time
import warnings
from pathlib import Path

from rtx.config.files import write_atomic

__all__ = ["cache_path", "clear_memo", "discard", "entries", "forced", "lookup", "machine_fingerprint", "make_key",
           "record", "shape_bucket", "store"]

FORMAT = 1
_memo = {"path": None, "stamp": None, "data": None, "checked": 0.0}
# lookup() re-checks the file (its path from the environment, its stamp) at most this often: kernels
# call it on every call, and a stat plus building the path cost 10-70 us (measured), as much as a
# small convolution. store() and clear_memo() make the next lookup re-read at once.
_RECHECK_S = 1.0
_memo_lock = threading.Lock()


def cache_path() -> Path:
    """$RTX_TUNING_CACHE, else the user cache directory's rtx/tuning.json (XDG_CACHE_HOME or
    ~/.cache on Linux, ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows)."""
    env = os.environ.get("RTX_TUNING_CACHE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "rtx" / "tuning.json"


# ---- keys ------------------------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _blas() -> str:
    """The BLAS NumPy calls, with its version (threadpoolctl reports the library actually
    loaded; NumPy's build config names the one it was built against)."""
    try:
        from threadpoolctl import threadpool_info
        libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if libs:
            return ",".join(f"{i.get('internal_api')}-{i.get('version')}-{i.get('architecture') or ''}" for i in libs)
    except Exception:
        pass
    try:
        import numpy
        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')}-{blas.get('version')}"
    except Exception:
        return "unknown"


_fp = {}


def machine_fingerprint() -> dict:
    """{"cpu", "cores", "blas", "numpy", "id"}: what a tuned configuration depends on; "id" is a
    short hash of the rest, the part of every key. Computed once per process."""
    if not _fp:
        import numpy
        desc = {"cpu": _cpu_model(), "cores": os.cpu_count() or 1, "blas": _blas(), "numpy": numpy.__version__}
        desc["id"] = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:12]
        _fp.update(desc)
    return dict(_fp)


def shape_bucket(shape) -> str:
    """Each dimension rounded up to a power of two ("8x64x32x32"): shapes that tune alike share
    an entry, so a kernel called on 30x30 and on 32x32 images reads one configuration."""
    dims = []
    for d in shape:
        d = int(d)
        if d < 0:
            raise ValueError(f"shape_bucket expects non-negative dimensions, got {tuple(shape)}")
        dims.append(1 if d <= 1 else 1 << (d - 1).bit_length())
    return "x".join(map(str, dims)) or "scalar"


def _device_name(device) -> str:
    name = str(getattr(device, "type", device) if not isinstance(device, str) else device)
    if name.startswith("cuda"):
        index = getattr(device, "index", None)
        if index is None and ":" in name:
            index = int(name.split(":")[1])
        return _cuda_name(index or 0, name)
    return name


@functools.lru_cache(maxsize=None)
def _cuda_name(index, fallback):
    """"cuda:<GPU model>", asked once per device (CUDA kernels look keys up on every launch)."""
    from rtx.runtime import cuda
    try:
        return "cuda:" + cuda.get_device_name(index)
    except Exception:
        return fallback


def _dtype_name(dtype) -> str:
    if dtype is None:
        return "any"
    import numpy
    try:
        return numpy.dtype(dtype).name
    except TypeError:
        return str(dtype).removeprefix("rtx.")


def make_key(op: str, shape=(), dtype=None, device="cpu") -> str:
    """The cache key "op|bucket|dtype|device name|fingerprint id"."""
    if not isinstance(op, str) or not op or "|" in op:
        raise ValueError(f"make_key expects an op name without '|', got {op!r}")
    return "|".join([op, shape_bucket(shape), _dtype_name(dtype), _device_name(device), machine_fingerprint()["id"]])


# ---- reading ---------------------------------------------------------------------------------------

def _read(path: Path) -> dict:
    """The file's entries, re-read only when it changed (kernels call lookup on every call)."""
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    with _memo_lock:
        if _memo["path"] == path and _memo["stamp"] == stamp and _memo["data"] is not None:
            return _memo["data"]
    data = {}
    if stamp is not None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(doc, dict) or not isinstance(doc.get("entries"), dict):
                raise ValueError("expected an object with an 'entries' object")
            data = {k: v for k, v in doc["entries"].items()
                    if isinstance(v, dict) and isinstance(v.get("config"), dict)}
        except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
            warnings.warn(f"rtx tuning cache {path} ignored ({e}); kernels use their defaults. "
                          "Delete it or run `rtx automeasure tune` to rebuild it.", RuntimeWarning, stacklevel=3)
    with _memo_lock:
        _memo.update(path=path, stamp=stamp, data=data)
    return data


def clear_memo() -> None:
    """Forget the in-memory copy (the next lookup re-reads the file)."""
    with _memo_lock:
        _memo.update(path=None, stamp=None, data=None, checked=0.0)


def _entries_for_lookup() -> dict:
    """The file's entries as _read gives them, re-validated (its path from the environment, its
    stamp) at most every _RECHECK_S seconds."""
    now = time.monotonic()
    data = _memo["data"]
    if data is not None and now - _memo["checked"] < _RECHECK_S:
        return data
    data = _read(cache_path())
    with _memo_lock:
        _memo["checked"] = now
    return data


@functools.lru_cache(maxsize=4096)
def _key(op, shape, dtype, device):
    return make_key(op, shape, dtype, device)


# What this thread's kernels are told instead of the file (the tuner's candidates), and who is
# listening for the keys they ask for. Context variables: a new thread starts with neither.
_forced = contextvars.ContextVar("rtx_tuning_forced", default=None)
_recorders = contextvars.ContextVar("rtx_tuning_recorders", default=())


def lookup(op: str, shape=(), dtype=None, device="cpu"):
    """The tuned configuration (a dict) for this op, shape bucket, dtype and device on this
    machine, or None: then the caller uses its default. Never raises on a bad file. Inside
    `forced(op, config)` the forced config (None: the default) comes back whatever the shape."""
    for rec in _recorders.get():
        rec.append((op, tuple(int(d) for d in shape), _dtype_name(dtype), str(device)))
    f = _forced.get()
    if f is not None and op in f:
        return None if f[op] is None else dict(f[op])
    if f is not None and "*" in f:   # forced(None, None): every op on its default
        return None
    data = _entries_for_lookup()
    if not data:   # no cache file: nothing more to compute
        return None
    try:
        key = _key(op, tuple(shape), dtype, device)
    except TypeError:   # an unhashable dtype or device description
        key = make_key(op, shape, dtype, device)
    entry = data.get(key)
    return dict(entry["config"]) if entry else None


@contextlib.contextmanager
def forced(op, config):
    """Within the block (this thread only), lookup(op, ...) returns `config` for every shape, or
    None (the kernel's default) when config is None; op=None, config=None ignores the cache for
    every op. How the tuner times a candidate, and how it times the defaults."""
    if config is not None and not isinstance(config, dict):
        raise TypeError(f"forced expects config as a dict or None, got {type(config).__name__}")
    if op is None and config is not None:
        raise ValueError("forced(None, config): a config needs an op name; forced(None, None) means all defaults")
    table = dict(_forced.get() or {})
    table[op if op is not None else "*"] = config
    token = _forced.set(table)
    try:
        yield
    finally:
        _forced.reset(token)


@contextlib.contextmanager
def record():
    """Within the block (this thread), collect every lookup as (op, shape, dtype name, device):
    the keys a workload's kernels ask for, which the tuner then stores its choice under."""
    seen = []
    token = _recorders.set(_recorders.get() + (seen,))
    try:
        yield seen
    finally:
        _recorders.reset(token)


def entries() -> dict:
    """Every entry of the cache file, {key: {"config", "op", ...}}, this machine's or not."""
    return {k: dict(v) for k, v in _read(cache_path()).items()}


# ---- writing ---------------------------------------------------------------------------------------

def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)


def store(op: str, shape, dtype, device, config: dict, **info) -> str:
    """Record `config` (a JSON-able dict) as the tuned configuration for this key; `info` (e.g.
    the measured times) is kept beside it for `rtx automeasure report`. Returns the key.
    Read-modify-write: two processes storing at the same instant may lose one entry, never the
    file."""
    if not isinstance(config, dict):
        raise TypeError(f"store expects config as a dict, got {type(config).__name__}")
    path = cache_path()
    key = make_key(op, shape, dtype, device)
    with warnings.catch_warnings():  # a corrupt file is being replaced: no need to warn about it
        warnings.simplefilter("ignore", RuntimeWarning)
        data = dict(_read(path))
    fp = machine_fingerprint()
    data[key] = {"op": op, "bucket": shape_bucket(shape), "dtype": _dtype_name(dtype), "device": _device_name(device),
                 "machine": {k: fp[k] for k in ("cpu", "cores", "blas")}, "config": config, **info}
    doc = {"format": FORMAT, "entries": data}
    _write_atomic(path, json.dumps(doc, indent=1, sort_keys=True, default=float))
    clear_memo()
    return key


def discard(keys) -> int:
    """Remove these keys (as store() returned them) from the cache file; returns how many were there.
    The tuner's undo when a workload ran slower with its choices than without."""
    path = cache_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        data = dict(_read(path))
    gone = [k for k in keys if data.pop(k, None) is not None]
    if gone:
        _write_atomic(path, json.dumps({"format": FORMAT, "entries": data}, indent=1, sort_keys=True, default=float))
        clear_memo()
    return len(gone)
