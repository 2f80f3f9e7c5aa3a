"""rtx.nn layers, one family per file."""
