"""Sequences (Python lists of tensors) and optionals (None = empty)."""
from __future__ import annotations

import numpy as np

from rtx.onnx._ops import arr, const, ints, op, scalar, wrap_axis
from rtx.onnx._ops.shape import concat, reshape, slice_axis


@op("SequenceConstruct")
def sequence_construct(inputs, attrs, opset):
    return list(inputs)


@op("SequenceEmpty")
def sequence_empty(inputs, attrs, opset):
    return []


@op("SequenceLength")
def sequence_length(inputs, attrs, opset):
    return const(np.array(len(inputs[0]), np.int64))


def _pos(seq, p, insert=False):
    n = len(seq)
    p = int(scalar(p))
    lim = n + 1 if insert else n
    if not -n <= p < lim:
        raise IndexError(f"sequence position {p} out of range for a sequence of length {n}")
    return p + n if p < 0 else p


@op("SequenceAt")
def sequence_at(inputs, attrs, opset):
    seq, p = inputs
    return seq[_pos(seq, p)]


@op("SequenceInsert")
def sequence_insert(inputs, attrs, opset):
    seq = list(inputs[0])
    t = inputs[1]
    p = inputs[2] if len(inputs) > 2 else None
    if p is None:
        seq.append(t)
    else:
        seq.insert(_pos(seq, p, insert=True), t)
    return seq


@op("SequenceErase")
def sequence_erase(inputs, attrs, opset):
    seq = list(inputs[0])
    p = inputs[1] if len(inputs) > 1 else None
    del seq[-1 if p is None else _pos(seq, p)]
    return seq


@op("SplitToSequence")
def split_to_sequence(inputs, attrs, opset):
    x = inputs[0]
    shp = arr(x).shape
    axis = wrap_axis(attrs.get("axis", 0), len(shp), "SplitToSequence")
    split = inputs[1] if len(inputs) > 1 else None
    if split is None:
        parts = [slice_axis(x, axis, i, i + 1) for i in range(shp[axis])]
        if not attrs.get("keepdims", 1):
            parts = [reshape(p, shp[:axis] + shp[axis + 1:]) for p in parts]
        return parts
    s = ints(split)
    if arr(split).ndim == 0:
        sizes = [s[0]] * (shp[axis] // s[0]) + ([shp[axis] % s[0]] if shp[axis] % s[0] else [])
    else:
        sizes = s
    out, start = [], 0
    for n in sizes:
        out.append(slice_axis(x, axis, start, start + n))
        start += n
    return out


@op("ConcatFromSequence")
def concat_from_sequence(inputs, attrs, opset):
    seq = inputs[0]
    axis = attrs["axis"]
    if attrs.get("new_axis", 0):
        nd = arr(seq[0]).ndim + 1
        axis = wrap_axis(axis, nd, "ConcatFromSequence")
        seq = [reshape(t, arr(t).shape[:axis] + (1,) + arr(t).shape[axis:]) for t in seq]
    else:
        axis = wrap_axis(axis, arr(seq[0]).ndim, "ConcatFromSequence")
    return concat(seq, axis)


@op("SequenceMap")
def sequence_map(inputs, attrs, opset):
    body = attrs["body"]
    env = attrs["_env"]
    n = len(inputs[0])
    outs = None
    for i in range(n):
        args = [v[i] if type(v) is list else v for v in inputs]
        res = body.run(args, env)
        if outs is None:
            outs = [[] for _ in res]
        for o, r in zip(outs, res):
            o.append(r)
    if outs is None:
        outs = [[] for _ in body.output_names]
    return tuple(outs)


# ---- optionals ----------------------------------------------------------------------------------
@op("Optional")
def optional(inputs, attrs, opset):
    return inputs[0] if inputs else None


@op("OptionalHasElement")
def optional_has_element(inputs, attrs, opset):
    return const(np.array(bool(inputs) and inputs[0] is not None))


@op("OptionalGetElement")
def optional_get_element(inputs, attrs, opset):
    if inputs[0] is None:
        raise ValueError("OptionalGetElement: the optional is empty")
    return inputs[0]

