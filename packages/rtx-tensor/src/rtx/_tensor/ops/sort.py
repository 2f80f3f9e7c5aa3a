"""Sorting and selection: sort, argsort, topk, kthvalue, unique, unique_consecutive,
searchsorted, bucketize, msort."""
from __future__ import annotations

# Functions that are also Tensor methods (methods.py attaches them).
METHODS: list[str] = []
__all__: list[str] = []
