"""Named results of ops that return (values, indices) and the like, as torch.return_types:
`v, i = x.sort()` unpacks, and `x.sort().values` reads by name. One namedtuple per op, so the
type's name (torch.return_types.sort, ...) and fields match PyTorch's. Shared by sort.py and
reduce.py."""
from __future__ import annotations

from collections import namedtuple

sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
kthvalue = namedtuple("kthvalue", ["values", "indices"])
max = namedtuple("max", ["values", "indices"])  # noqa: A001  (torch.return_types.max)
min = namedtuple("min", ["values", "indices"])  # noqa: A001
median = namedtuple("median", ["values", "indices"])
nanmedian = namedtuple("nanmedian", ["values", "indices"])
mode = namedtuple("mode", ["values", "indices"])
cummax = namedtuple("cummax", ["values", "indices"])
cummin = namedtuple("cummin", ["values", "indices"])
aminmax = namedtuple("aminmax", ["min", "max"])

for _t in (sort, topk, kthvalue, max, min, median, nanmedian, mode, cummax, cummin, aminmax):
    _t.__module__ = "rtx.return_types"
del _t
