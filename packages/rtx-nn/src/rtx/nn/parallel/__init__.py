"""rtx.nn.parallel: torch.nn.parallel. DataParallel and its pieces (scatter, replicate,
parallel_apply, gather) live here; DistributedDataParallel lives in rtx-distributed (a higher
layer) and is found through the `rtx.nn.parallel` entry-point group it declares."""
from rtx.nn.parallel.data_parallel import DataParallel, data_parallel
from rtx.nn.parallel.parallel_apply import parallel_apply
from rtx.nn.parallel.replicate import replicate
from rtx.nn.parallel.scatter_gather import gather, scatter, scatter_kwargs

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather", "parallel_apply", "replicate",
           "scatter", "scatter_kwargs"]

_HINTS = {"DistributedDataParallel": "rtx-distributed"}


def __getattr__(name):
    from importlib.metadata import entry_points
    for ep in entry_points(group="rtx.nn.parallel", name=name):
        obj = ep.load()
        globals()[name] = obj  # found once, then a plain attribute
        return obj
    if name in _HINTS:
        raise AttributeError(f"rtx.nn.parallel.{name} comes with {_HINTS[name]}: pip install {_HINTS[name]}")
    raise AttributeError(f"module 'rtx.nn.parallel' has no attribute '{name}'")
