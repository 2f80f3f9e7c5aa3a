"""Indexing ops: gather, scatter, scatter_add, scatter_reduce, index_select, index_add,
index_copy, index_fill, masked_fill, masked_select, masked_scatter, take, take_along_dim, nonzero, where."""
from __future__ import annotations

# Functions that are also Tensor methods (methods.py attaches them).
METHODS: list[str] = []
__all__: list[str] = []
