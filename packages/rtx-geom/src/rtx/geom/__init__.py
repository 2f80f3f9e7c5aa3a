"""Graph neural networks with PyTorch Geometric's API.

rtx.geom.data (Data, Batch, InMemoryDataset), rtx.geom.loader (DataLoader, NeighborLoader,
LinkNeighborLoader), rtx.geom.utils, rtx.geom.nn (MessagePassing, convolutions, pools, models) and
rtx.geom.datasets; each is imported on first use.
"""
import importlib

__version__ = "0.1.0"

_SUBMODULES = ("data", "datasets", "loader", "nn", "utils")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
