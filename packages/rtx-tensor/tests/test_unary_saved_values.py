"""The unary ops declare what their derivative reads (x: the input, y: the output); nothing is
inferred from bytecode, which changes between CPython versions (3.14 compiles loads to
LOAD_FAST_BORROW). These tests check each declaration is sufficient and minimal by calling the
derivative with only the declared values, and with each declared value taken away."""
import ast
from pathlib import Path

import numpy as np
import pytest

import rtx
from rtx._tensor.ops.unary import UNARY

# Inputs inside every op's domain (acosh needs x > 1, atanh |x| < 1, ...).
_X = {"acosh": 1.5, "asin": 0.3, "acos": 0.3, "atanh": 0.3, "erfinv": 0.3}


def _xy(name):
    fwd = UNARY[name][0]
    x = np.array([_X.get(name, 0.7)], dtype=np.float64)
    if name == "sgn":  # its derivative reads x and y only for complex inputs
        x = x + 0.4j
    return rtx.tensor(x), rtx.tensor(fwd(x))


@pytest.mark.parametrize("name", [n for n, row in UNARY.items() if row[1] is not None])
def test_declared_values_suffice_and_are_needed(name):
    _, deriv, needs, _ = UNARY[name]
    x, y = _xy(name)
    g = rtx.ones_like(x)
    full = deriv(g, x, y)
    given = deriv(g, x if "x" in needs else None, y if "y" in needs else None)
    np.testing.assert_allclose(given.numpy(), full.numpy())
    for v in needs:
        with pytest.raises((TypeError, AttributeError)):
            deriv(g, None if v == "x" else x, None if v == "y" else y)


@pytest.mark.parametrize("name", ["exp", "log", "sgn", "tanh", "sin"])
def test_backward_after_forward_uses_the_saved_values(name):
    x = rtx.tensor([_X.get(name, 0.7)], dtype=rtx.float64, requires_grad=True)
    assert rtx.autograd.gradcheck(getattr(rtx, name), (x,))
    assert rtx.autograd.gradgradcheck(getattr(rtx, name), (x,))


_INTERPRETER_INTERNALS = ("dis", "opcode")


def test_no_source_reads_bytecode():
    root = Path(__file__).resolve().parents[3] / "packages"
    # rtx-etl hashes code objects as an opaque cache key: a new interpreter only misses the cache,
    # it never changes a result (nothing reads what the bytecode means).
    opaque_keys = {root / "rtx-etl" / "src" / "rtx" / "etl" / "fingerprint.py"}
    found = []
    for path in root.glob("*/src/**/*.py"):
        if path in opaque_keys:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name in _INTERPRETER_INTERNALS for a in node.names):
                found.append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and node.module in _INTERPRETER_INTERNALS:
                found.append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.Attribute) and node.attr in ("co_code", "co_consts", "co_varnames", "f_locals",
                                                                    "f_back", "_getframe"):
                found.append(f"{path}:{node.lineno}")
    assert not found, "code that depends on CPython internals:\n" + "\n".join(found)
