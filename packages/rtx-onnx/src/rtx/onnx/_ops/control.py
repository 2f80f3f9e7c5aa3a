"""Control flow: If, Loop, Scan. Subgraphs see the outer scope (attrs["_env"])."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.onnx._ops import arr, const, is_grad_float, op, scalar


@op("If")
def if_(inputs, attrs, opset):
    cond = bool(np.asarray(arr(inputs[0])).reshape(-1)[0])
    branch = attrs["then_branch"] if cond else attrs["else_branch"]
    return tuple(branch.run([], attrs["_env"]))


def _stack(values):
    if not values:
        return None
    if all(type(v) is not list and is_grad_float(v) for v in values):
        return rtx.stack(values, 0)
    return const(np.stack([arr(v) for v in values], 0))


@op("Loop")
def loop(inputs, attrs, opset):
    body = attrs["body"]
    env = attrs["_env"]
    max_trip = inputs[0]
    cond_in = inputs[1] if len(inputs) > 1 else None
    carried = list(inputs[2:])
    n_carried = len(carried)
    trips = None if max_trip is None else int(scalar(max_trip))
    cond = True if cond_in is None else bool(scalar(cond_in))
    scans = [[] for _ in range(len(body.output_names) - 1 - n_carried)]
    i = 0
    while cond and (trips is None or i < trips):
        outs = body.run([const(np.array(i, np.int64)), const(np.array(cond))] + carried, env)
        cond = bool(scalar(outs[0]))
        carried = list(outs[1:1 + n_carried])
        for s, v in zip(scans, outs[1 + n_carried:]):
            s.append(v)
        i += 1
    stacked = []
    for k, s in enumerate(scans):
        if s:
            stacked.append(_stack(s))
        else:
            stacked.append(_empty_scan(body, 1 + n_carried + k))
    return tuple(carried + stacked)


def _empty_scan(body, k):
    """A scan output of a loop that ran zero times: (0, *per-iteration shape) when the body declares it."""
    from rtx.onnx._ops import np_dtype
    t = body.output_types[k].tensor_type
    dtype = np_dtype(t.elem_type) if t.elem_type else np.float32
    dims = [d.dim_value if d.HasField("dim_value") else 0 for d in t.shape.dim] if t.HasField("shape") else []
    return const(np.zeros([0] + dims, dtype))


@op("Scan")
def scan(inputs, attrs, opset):
    body = attrs["body"]
    env = attrs["_env"]
    n_scan = attrs["num_scan_inputs"]
    if opset < 9:  # Scan-8: a leading optional sequence_lens input and a batch axis
        lens = inputs[0]
        states = list(inputs[1:len(inputs) - n_scan])
        scans_in = inputs[len(inputs) - n_scan:]
        batch = arr(scans_in[0]).shape[0]
        outs_all = []
        for b in range(batch):
            o = _scan9(body, env, [s[b] for s in states], [x[b] for x in scans_in], {}, lens)
            outs_all.append(o)
        return tuple(_stack([o[k] for o in outs_all]) for k in range(len(outs_all[0])))
    states = list(inputs[:len(inputs) - n_scan])
    return tuple(_scan9(body, env, states, list(inputs[len(inputs) - n_scan:]), attrs, None))


def _scan9(body, env, states, xs, attrs, lens):
    n_state = len(states)
    in_axes = attrs.get("scan_input_axes") or [0] * len(xs)
    in_dirs = attrs.get("scan_input_directions") or [0] * len(xs)
    n_out = len(body.output_names) - n_state
    out_axes = attrs.get("scan_output_axes") or [0] * n_out
    out_dirs = attrs.get("scan_output_directions") or [0] * n_out
    seq = [_moveaxis(x, ax) for x, ax in zip(xs, in_axes)]
    steps = arr(seq[0]).shape[0] if seq else 0
    collected = [[] for _ in range(n_out)]
    for t in range(steps):
        step_in = [s[steps - 1 - t] if d else s[t] for s, d in zip(seq, in_dirs)]
        outs = body.run(states + step_in, env)
        states = list(outs[:n_state])
        for c, v in zip(collected, outs[n_state:]):
            c.append(v)
    results = []
    for c, ax, d in zip(collected, out_axes, out_dirs):
        if d:
            c = c[::-1]
        y = _stack(c)
        results.append(_moveaxis_back(y, ax))
    return states + results


def _moveaxis(x, axis):
    if axis == 0:
        return x
    return rtx.movedim(x, axis, 0) if is_grad_float(x) else const(np.moveaxis(arr(x), axis, 0))


def _moveaxis_back(x, axis):
    if axis == 0 or x is None:
        return x
    axis = axis + arr(x).ndim if axis < 0 else axis
    return rtx.movedim(x, 0, axis) if is_grad_float(x) else const(np.moveaxis(arr(x), 0, axis))
