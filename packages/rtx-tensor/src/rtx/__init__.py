"""rtx: a PyTorch-shaped deep-learning framework on NumPy (CPU) and CuPy (NVIDIA GPUs).

`import rtx` gives the core API (tensors, ops, autograd, devices, dtypes, RNG); every other
installed rtx-* package is reachable as an attribute, imported on first use (rtx.nn, rtx.optim).
"""
# rtx-tensor owns the root package; the other distributions' subpackages are found through
# extend_path (from wheels) and uv's editable installs alike. See docs/architecture.md.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

import builtins as _builtins  # noqa: E402  (rtx.any/all/max/min/sum shadow the builtins here)
import importlib as _importlib  # noqa: E402
import sys as _sys  # noqa: E402

from rtx._tensor import (  # noqa: E402
    cuda,  # noqa: E402
    fft,
    linalg,
    serialization,
)
from rtx._tensor.api import *  # noqa: E402,F403
from rtx._tensor.settings import (  # noqa: E402,F401
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from rtx.autograd import grad as _grad  # noqa: E402,F401
from rtx.runtime.threads import (  # noqa: E402,F401
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)

__version__ = "0.1.0"
_sys.modules.setdefault("rtx.cuda", cuda)
_sys.modules.setdefault("rtx.fft", fft)
_sys.modules.setdefault("rtx.linalg", linalg)
_sys.modules.setdefault("rtx.serialization", serialization)
from rtx._tensor.ops import return_types  # noqa: E402

_sys.modules.setdefault("rtx.return_types", return_types)  # named results pickle by this path

if "multiprocessing.reduction" in _sys.modules:  # e.g. a spawned child: send tensors as its parent does
    import rtx.multiprocessing.shared  # noqa: E402,F401  (registers the shared-memory tensor reducer)


# Every subpackage an rtx distribution installs (tests/test_workspace.py keeps this in step with the
# workspace), so a missing one gets a `pip install` hint that names a package that exists.
KNOWN_PACKAGES = (
    "runtime", "memory", "kernel", "autograd", "config", "nn", "losses", "optim", "data", "preprocessing", "graph",
    "flash_attn", "transformers", "distributed", "distributions", "federated", "compress", "onnx", "inference",
    "edge", "hub", "monitoring", "serving_api", "streaming", "vision", "nlg", "demo", "utils", "amp", "fx",
    "rl", "diffuse", "classical", "geom", "science", "cfd", "etl", "multimodal",
    "feature_store", "auto", "automeasure",
)


# Subpackages shipped by a distribution of another name.
_DIST_OF = {"amp": "rtx-optim", "utils": "rtx-data", "fx": "rtx-graph"}


def _dist(name):
    return _DIST_OF.get(name, "rtx-" + name.replace("_", "-"))


# rtx-tensor's own submodules that PyTorch exposes after `import torch`, loaded on first use.
_OWN_LAZY = ("testing", "multiprocessing", "backends", "accelerator", "special")


# torch exposes these nn.functional ops at the top level too (torch.softmax, torch.conv2d, ...);
# here they live in rtx-nn, one layer up, so they are looked up there on first use.
# (softmax, log_softmax, cosine_similarity, pairwise_distance and pdist are rtx-tensor's own: the
# losses below rtx-nn need them.)
_FROM_NN_FUNCTIONAL = frozenset((
    "dropout", "alpha_dropout", "feature_alpha_dropout", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "layer_norm", "group_norm", "instance_norm",
    "selu", "celu", "rrelu", "prelu", "hardshrink", "threshold",
    "pixel_shuffle", "pixel_unshuffle", "bilinear", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "embedding_bag",
))


def __getattr__(name):
    if name in _FROM_NN_FUNCTIONAL:
        try:
            return getattr(_importlib.import_module("rtx.nn.functional"), name)
        except ModuleNotFoundError as e:
            if e.name not in ("rtx.nn", "rtx.nn.functional"):
                raise
            raise AttributeError(f"rtx.{name} comes with rtx.nn: pip install rtx-nn") from None
    if name in _OWN_LAZY:  # e.g. rtx/testing.py imports dataclasses and inspect, slow to import
        return _importlib.import_module(f"rtx.{name}")
    if name == "autocast":  # torch.autocast is torch.amp.autocast; rtx.amp ships with rtx-optim
        try:
            return _importlib.import_module("rtx.amp").autocast
        except ModuleNotFoundError as e:
            if e.name != "rtx.amp":
                raise
            raise AttributeError("rtx.autocast needs rtx.amp: pip install rtx-optim") from None
    if name.startswith("_"):
        raise AttributeError(f"module 'rtx' has no attribute '{name}'")
    if name in KNOWN_PACKAGES:
        try:
            return _importlib.import_module(f"rtx.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"rtx.{name}":
                raise
            raise AttributeError(f"rtx.{name} is not installed: pip install {_dist(name)}") from None
    raise AttributeError(f"module 'rtx' has no attribute '{name}'")


def _lazy_namespace(ns, dists):
    """Give a namespace package (no __init__.py, e.g. rtx.utils) a PEP 562 __getattr__, so that
    `rtx.utils.data` works after a bare `import rtx`, as `torch.utils.data` does after `import torch`."""
    def __getattr__(name):
        full = f"{ns.__name__}.{name}"
        if name.startswith("_"):
            raise AttributeError(f"module '{ns.__name__}' has no attribute '{name}'")
        try:
            return _importlib.import_module(full)
        except ModuleNotFoundError as e:
            if e.name != full:
                raise
            hint = f": pip install {dists[name]}" if name in dists else ""
            raise AttributeError(f"module '{ns.__name__}' has no attribute '{name}'{hint}") from None
    ns.__getattr__ = __getattr__
    return ns


# rtx-autograd (a dependency of this package) ships rtx/utils/checkpoint.py, so the namespace exists.
utils = _lazy_namespace(_importlib.import_module("rtx.utils"), {"data": "rtx-data", "checkpoint": "rtx-autograd"})


class _MissingPackageHint:
    """A last-resort finder: `import rtx.vision` without rtx-vision says what to install."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        parts = fullname.split(".")
        if len(parts) == 2 and parts[0] == "rtx" and parts[1] in KNOWN_PACKAGES and parts[1] not in ("utils",):
            raise ModuleNotFoundError(f"No module named '{fullname}': pip install {_dist(parts[1])}",
                                      name=fullname)
        return None


if not _builtins.any(isinstance(f, _MissingPackageHint) or getattr(f, "__name__", "") == "_MissingPackageHint"
           for f in _sys.meta_path):
    _sys.meta_path.append(_MissingPackageHint)
