"""Passes over a Program (in place): constant folding, removal of identities, and folding of
the ops that follow a Linear or Conv into it: a per-channel scale (an eval BatchNorm's Mul)
into the weights, a per-channel shift or bias into the bias, and one activation, so each
layer runs as one GEMM plus two in-place passes over its output."""
from __future__ import annotations

import numpy as np

from rtx.inference.kernels import ACTIVATIONS, BUILDERS, Ctx


def fold_constants(program, xp):
    """Run every foldable op whose inputs are all constants now; its outputs become constants.
    Returns the number of ops folded."""
    kept, folded = [], 0
    for op in program.ops:
        ins = [v for v in op.inputs if v is not None]
        if not op.foldable or not all(v in program.consts for v in ins):
            kept.append(op)
            continue
        slots = [{}]
        step = BUILDERS[op.kind](op, Ctx(xp, slots, False, None))
        vals = dict(program.consts)
        step(vals, slots)
        for o in op.outputs:
            program.consts[o] = vals[o]
        folded += 1
    program.ops = kept
    return folded


def remove_identities(program):
    outputs = {p.value for p in program.outputs}
    kept = []
    for op in program.ops:
        if op.kind == "Identity" and op.outputs[0] not in outputs:
            program.replace_uses(op.outputs[0], op.inputs[0])
        else:
            kept.append(op)
    program.ops = kept


def _per_channel(c, n, ndim_before, ndim_after):
    """c as an (n,) vector when broadcasting it against a layer's output only scales/shifts
    channels (channel axis = ndim_before from the left, ndim_after spatial dims after it)."""
    if c.ndim == 0 or c.size == 1 and c.ndim <= 1:
        return np.full(n, c.reshape(()).item(), dtype=c.dtype)
    if c.size != n:
        return None
    if ndim_after == 0 and c.ndim == 1:
        return c.reshape(n)
    if ndim_after > 0 and c.ndim in (1 + ndim_after, 2 + ndim_after) and c.shape[-1 - ndim_after] == n:
        return c.reshape(n)
    return None


def fuse_layers(program):
    """Fold Mul/Add by per-channel constants and one activation into the Linear/Conv before
    them. Returns the number of ops folded away."""
    fused = 0
    changed = True
    while changed:
        changed = False
        readers = program.readers()
        outputs = {p.value for p in program.outputs}
        consumers = {}
        for op in program.ops:
            for v in op.inputs:
                consumers.setdefault(v, []).append(op)
        for op in program.ops:
            if op.kind not in ("Linear", "Conv"):
                continue
            y = op.outputs[0]
            if y in outputs or readers.get(y) != 1:
                continue
            nxt = consumers[y][0]
            if not _absorb(program, op, nxt, y):
                continue
            op.outputs = nxt.outputs
            program.ops.remove(nxt)
            fused += 1
            changed = True
            break
    return fused


def _absorb(program, op, nxt, y):
    a = op.attrs
    if nxt.kind == "Unary":
        if a.get("act") is None and nxt.attrs["act"] in ACTIVATIONS:
            a["act"] = nxt.attrs["act"]
            return True
        return False
    if nxt.kind != "Binary" or a.get("act") is not None or len(nxt.inputs) != 2:
        return False
    fn = nxt.attrs["fn"]
    other = [v for v in nxt.inputs if v != y]
    if len(other) != 1 or other[0] not in program.consts:
        return False
    if fn in ("subtract", "divide") and nxt.inputs[0] != y:
        return False
    c = program.consts[other[0]]
    if not isinstance(c, np.ndarray) and hasattr(c, "get"):   # a CuPy constant: decide on the host
        c = c.get()
    if op.kind == "Linear":
        w = a["wt"]
        n, before, after = w.shape[1], None, 0
    else:
        w = a["w"]
        n, before, after = w.shape[0], 1, w.ndim - 2
    if not hasattr(c, "dtype") or c.dtype != w.dtype:
        return False
    c = _per_channel(np.asarray(c), n, before, after)
    if c is None:
        return False
    xp = _xp(w)
    c = xp.asarray(c)
    b = a.get("b")
    if fn in ("multiply", "divide"):
        s = c if fn == "multiply" else (1 / c).astype(c.dtype)
        if op.kind == "Linear":
            a["wt"] = xp.ascontiguousarray(w * s)
        else:
            a["w"] = xp.ascontiguousarray(w * s.reshape((n,) + (1,) * (w.ndim - 1)))
        if b is not None:
            a["b"] = b * s
        return True
    if fn in ("add", "subtract"):
        d = c if fn == "add" else -c
        a["b"] = d.copy() if b is None else b + d
        return True
    return False


def _xp(a):
    if type(a).__module__.startswith("cupy"):
        import cupy
        return cupy
    return np


def fuse_quantized(program):
    """Two rewrites of quantized graphs, both exact:
    - Dequantize -> MaxPool/Reshape/Permute -> Quantize with the same scale, zero point and type
      becomes the MaxPool/Reshape/Permute on the integers (max commutes with the monotone
      quantization, and Quantize(Dequantize(q)) is q);
    - IntLinear/IntConv with a float output -> Quantize: the quantization runs in the integer
      op's epilogue on the same float values (out="requant"), skipping a buffer and a pass.
    Returns the number of ops removed."""
    removed = 0
    changed = True
    while changed:
        changed = False
        readers = program.readers()
        outputs = {p.value for p in program.outputs}
        prod = program.producers()
        for q in program.ops:
            if q.kind != "Quantize" or q.inputs[0] in outputs or readers.get(q.inputs[0]) != 1:
                continue
            mid = prod.get(q.inputs[0])
            if mid is None:
                continue
            if mid.kind in ("MaxPool", "Reshape", "Permute"):
                dq = prod.get(mid.inputs[0])
                if dq is None or dq.kind != "Dequantize" or readers.get(dq.outputs[0]) != 1 \
                        or dq.outputs[0] in outputs or not _same_q(dq.attrs, q.attrs):
                    continue
                mid.inputs = [dq.inputs[0]]
                program.replace_uses(q.outputs[0], mid.outputs[0])
                program.ops.remove(q)
                removed += 1
            elif mid.kind in ("IntLinear", "IntConv") and mid.attrs["out"] == "float":
                mid.attrs.update(out="requant", y_scale=q.attrs["scale"], zp=q.attrs["zp"], dtype=q.attrs["dtype"])
                mid.outputs = q.outputs
                program.ops.remove(q)
                removed += 1
            else:
                continue
            changed = True
            break
    program.eliminate_dead_code()
    return removed


def _same_q(a, b):
    return (float(a["scale"]) == float(b["scale"]) and a["zp"] == b["zp"]
            and np.dtype(b["dtype"]).name in ("int8", "uint8"))


def optimize(program, xp):
    remove_identities(program)
    fold_constants(program, xp)
    fuse_layers(program)
    fuse_quantized(program)
    program.eliminate_dead_code()
    return program
