"""The math of rtx.nn, one family per file; rtx.nn.functional re-exports it."""
