"""Linear algebra that is also on Tensor: einsum, tensordot, kron, cross, trace, diag,
det, inverse, cholesky... (rtx.linalg holds the torch.linalg namespace)."""
from __future__ import annotations

# Functions that are also Tensor methods (methods.py attaches them).
METHODS: list[str] = []
__all__: list[str] = []
