"""upsampling layers of rtx.nn."""
from __future__ import annotations

__all__: list[str] = []
