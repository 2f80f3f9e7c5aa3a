"""trace(fn, example_inputs) -> Graph.

The function runs under rtx.extend.recording (a thread-local hook: other threads' ops are
neither recorded nor disturbed): the hook sees every Primitive application of this thread
(the op still runs, so the trace carries real values), with its inputs, attributes and
outputs. Tensors the trace did not make (parameters, buffers, constants built in forward)
become constants, named after the module's parameters and buffers. While recording, the
operators' fast paths go through Primitives, and in-place ops are followed: `x.relu_()` or
`out += identity` rebinds x to the op's result. Any other in-place write to a traced tensor
makes its next use raise.

Symbolic sizes: each marked input dim (by default dim 0 of every input, `batch`) is traced
again one larger (the rows repeated cyclically); ints that changed become SymInts, and
constants that changed shape and are uniform (zeros, ones, masks of ones) are made at run
time. If the traces differ in any other way the graph is static (a warning says why).
"""
from __future__ import annotations

import inspect
import itertools
import warnings
from dataclasses import dataclass

import numpy as np

import rtx
from rtx.extend import current_hook, raw, recording, wrap
from rtx.graph._pytree import leaves, map_structure
from rtx.graph.ir import ArrayOf, Graph, Node, Value
from rtx.graph.symbolic import NotGeneralizable, SymArange, SymInt, fit_int, is_arange, merge

__all__ = ["trace", "TraceError"]


class TraceError(RuntimeError):
    """The function cannot be traced faithfully (an untraceable in-place write, say)."""


@dataclass(frozen=True)
class Ref:
    kind: str       # "input", "const" or "node"
    index: int
    out: int = 0


@dataclass(frozen=True)
class _ArrayRef:
    ref: Ref


@dataclass
class _RawOp:
    kind: str       # "primitive" or "module"
    target: object
    args: object
    attrs: dict
    outs: list      # [(shape, dtype)]
    out_spec: object


class _Recorder:
    def __init__(self, names, leaf):
        self.names = names          # id(tensor) -> parameter/buffer name
        self.leaf = leaf            # module -> bool: record the call as one node
        self.tensors = {}           # id(tensor) -> (Ref, version)
        self.arrays = {}            # id(array) -> Ref (detach(), .data and array attributes)
        self.keep = []              # what the ids refer to stays alive while recording
        self.ops, self.consts, self.inputs = [], [], []
        self.active = True

    def bind(self, t, ref):
        self.tensors[id(t)] = (ref, t._version)
        self.arrays[id(raw(t))] = ref
        self.keep.append(t)

    def ref(self, t):
        hit = self.tensors.get(id(t))
        if hit is not None:
            ref, version = hit
            if t._version != version:
                raise TraceError("a traced tensor was modified in place by an operation the tracer does not see "
                                 "(setitem, copy_, fill_, zero_, or an in-place op on a view of it); write it out "
                                 "of place, e.g. x = x.clone() first or rtx.where(...)")
            return ref
        ref = self.arrays.get(id(raw(t)))
        if ref is not None:
            return ref
        ref = Ref("const", len(self.consts))
        self.consts.append((t, self.names.get(id(t))))
        self.bind(t, ref)
        return ref

    def encode(self, obj):
        return map_structure(obj, self.ref)

    def encode_attrs(self, attrs):
        def array(a):
            ref = self.arrays.get(id(a))
            return _ArrayRef(ref) if ref is not None else a
        enc = map_structure(attrs, self.ref)
        return map_structure(enc, array, lambda x: isinstance(x, np.ndarray) or _is_cupy(x))

    def primitive(self, cls, inputs, attrs):
        if not self.active:
            return _run(cls, inputs, attrs)
        args, enc = self.encode(inputs), self.encode_attrs(attrs)
        out = _run(cls, inputs, attrs)
        outs = out if type(out) is tuple else (out,)
        j = len(self.ops)
        for i, o in enumerate(outs):
            self.bind(o, Ref("node", j, i))
        spec = tuple(range(len(outs))) if type(out) is tuple else 0
        self.ops.append(_RawOp("primitive", cls, args, enc, [(o.shape, o.dtype) for o in outs], spec))
        return out

    def old_value(self, t, copy):
        # In-place ops copy the old value first: the copy stands for the same traced value.
        if self.active:
            self.bind(copy, self.ref(t))

    def write_result(self, t, result, write):
        if not self.active:
            return write(t, result)
        ref = self.ref(result)
        out = write(t, result)
        if raw(t).dtype != raw(result).dtype or raw(t).shape != raw(result).shape:
            return out  # the write cast or broadcast: t's version moved on, so a later use raises
        self.bind(t, ref)
        return out

    def module(self, m, forward, args, kwargs):
        if not self.active:
            return forward(*args, **kwargs)
        enc_args, enc_kwargs = self.encode(args), self.encode_attrs(kwargs)
        self.active = False
        try:
            out = forward(*args, **kwargs)
        finally:
            self.active = True
        j = len(self.ops)
        flat = leaves(out)
        counter = itertools.count()
        spec = map_structure(out, lambda t: next(counter))
        for i, o in enumerate(flat):
            self.bind(o, Ref("node", j, i))
        self.ops.append(_RawOp("module", m, enc_args, enc_kwargs, [(o.shape, o.dtype) for o in flat], spec))
        return out


def _is_cupy(x):
    return type(x).__module__.startswith("cupy")


def _run(cls, inputs, attrs):
    with recording(None):
        return cls.apply(*inputs, **attrs)


class _Recording:
    """Install the recorder as this thread's hook and route the leaf modules' calls to it;
    undo on exit."""

    def __init__(self, rec, modules):
        self.rec, self.modules, self.saved = rec, modules, []

    def __enter__(self):
        rec = self.rec
        if isinstance(current_hook(), _Recorder):
            raise TraceError("rtx.graph.trace cannot run inside another trace")
        for m in self.modules:
            if rec.leaf(m):
                forward = m.forward
                # Only this thread's trace records the call; elsewhere the module runs as usual.
                m.__dict__["forward"] = (lambda *a, _m=m, _f=forward, **k: rec.module(_m, _f, a, k)
                                         if current_hook() is rec else _f(*a, **k))
                self.saved.append((m.__dict__, "forward"))
        self._recording = recording(rec)
        self._recording.__enter__()
        return self

    def __exit__(self, *exc):
        self._recording.__exit__(*exc)
        for d, name in reversed(self.saved):
            d.pop(name, None)
        return False




def _modules(fn):
    return [m for _, m in fn.named_modules()] if hasattr(fn, "named_modules") else []


def _names(fn):
    names = {}
    for attr in ("named_buffers", "named_parameters"):
        if hasattr(fn, attr):
            for name, t in getattr(fn, attr)():
                names[id(t)] = name
    return names


def _record(fn, args, leaf):
    rec = _Recorder(_names(fn), leaf)
    tensors = leaves(args)
    for i, t in enumerate(tensors):
        rec.bind(t, Ref("input", i))
    with _Recording(rec, _modules(fn)), rtx.no_grad():
        out = fn(*args)
        outputs = rec.encode(out)
    rec.inputs = tensors
    rec.outputs = outputs
    return rec


def _grow(t, dims):
    """t with each dim in dims one larger, its rows repeated cyclically (indices stay valid)."""
    a = raw(t)
    for d in dims:
        n = a.shape[d]
        a = a.take(np.arange(n + 1) % n, axis=d)
    return rtx.from_numpy(np.ascontiguousarray(a)) if type(a) is np.ndarray else wrap(a)


def _dims_spec(dynamic_dims, tensors):
    """Per input tensor, {dim: symbol}."""
    if dynamic_dims is None or dynamic_dims is True:
        return [{0: "batch"} if t.ndim >= 1 else {} for t in tensors]
    if dynamic_dims is False:
        return [{} for _ in tensors]
    spec = list(dynamic_dims)
    if len(spec) != len(tensors):
        raise ValueError(f"dynamic_dims has {len(spec)} entries, one per input tensor expected ({len(tensors)})")
    out = []
    for i, (d, t) in enumerate(zip(spec, tensors)):
        d = dict(d or {})
        for k in d:
            if not -t.ndim <= k < t.ndim:
                raise ValueError(f"dynamic_dims[{i}] names dim {k}, but input {i} has shape {list(t.shape)}")
        out.append({k % t.ndim: str(v) for k, v in d.items()})
    return out


def _param_names(fn):
    target = fn.forward if hasattr(fn, "forward") else fn
    try:
        params = [p for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []
    return [p.name for p in params]


def trace(fn, example_inputs, *, dynamic_dims=None, leaf_modules=(), input_names=None):
    """Trace `fn` (an nn.Module or any function of tensors) on `example_inputs` (a Tensor or a
    tuple of positional arguments; tensors may nest in tuples, lists and dicts) into a Graph.

    dynamic_dims: None (dim 0 of every input is the symbol 'batch'), False (all static), or one
    {dim: symbol} dict per input tensor. leaf_modules: module classes (or a predicate) whose
    calls are recorded as one node each (e.g. nn.LSTM for an exporter that maps it whole).
    input_names: names for the input Values (default: the forward's parameter names)."""
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if callable(leaf_modules) and not isinstance(leaf_modules, (tuple, list, type)):
        leaf = leaf_modules
    else:
        classes = tuple(leaf_modules) if isinstance(leaf_modules, (tuple, list)) else (leaf_modules,)
        leaf = (lambda m: isinstance(m, classes)) if classes else (lambda m: False)
    tensors = leaves(args)
    if not tensors:
        raise TypeError("trace(): example_inputs holds no Tensor")
    dims = _dims_spec(dynamic_dims, tensors)
    base = {}
    for t, d in zip(tensors, dims):
        for k, name in d.items():
            if base.setdefault(name, t.shape[k]) != t.shape[k]:
                raise ValueError(f"the symbolic size {name!r} is {base[name]} in one input and {t.shape[k]} in "
                                 "another")
            if t.shape[k] == 0:
                raise ValueError(f"dim {k} marked {name!r} has size 0; trace with a non-empty example")
    recs = {frozenset(): _record(fn, args, leaf)}
    reason = None
    symbols = sorted(base)
    if symbols:
        try:
            for r in range(1, len(symbols) + 1):
                for grown in itertools.combinations(symbols, r):
                    g = frozenset(grown)
                    made = {}  # the same tensor passed twice stays one tensor (code may test `q is k`)
                    for t, d in zip(tensors, dims):
                        if id(t) not in made:
                            made[id(t)] = _grow(t, [k for k, s in d.items() if s in g])
                    grown_args = map_structure(args, lambda t, made=made: made[id(t)])
                    try:
                        recs[g] = _record(fn, grown_args, leaf)
                    except TraceError:
                        raise
                    except (RuntimeError, ValueError, IndexError, TypeError) as e:
                        raise NotGeneralizable(f"the function fails with {sorted(g)} one larger: {e}") from e
            graph = _build(recs, base, dims, fn, args, input_names)
        except (NotGeneralizable, _Mismatch) as e:
            reason = str(e)
            warnings.warn(f"rtx.graph.trace: the graph is static (its sizes are the example's): {reason}",
                          stacklevel=2)
            recs = {frozenset(): recs[frozenset()]}
    if reason is not None or not symbols:
        graph = _build(recs, {}, [{} for _ in tensors], fn, args, input_names)
        graph.dynamic, graph.static_reason = False, reason
    return graph


class _Mismatch(TraceError):
    pass


def _build(recs, base, dims, fn, args, input_names):
    """The Graph standing for every recording in recs ({symbols grown: recorder})."""
    first = recs[frozenset()]
    for key, r in recs.items():
        if len(r.ops) != len(first.ops):
            raise _Mismatch(f"the number of ops changes with the input size ({len(first.ops)} at the example's size, "
                            f"{len(r.ops)} with {sorted(key)} one larger): the function's control flow depends on it")
        if len(r.consts) != len(first.consts):
            raise _Mismatch("the number of constants changes with the input size")
    names = list(input_names) if input_names is not None else _param_names(fn)
    tensors = first.inputs
    if len(names) != len(tensors):
        names = [f"input_{i}" for i in range(len(tensors))] if len(tensors) > 1 else (names[:1] or ["input"])
        names = names if len(names) == len(tensors) else [f"input_{i}" for i in range(len(tensors))]
    inputs = []
    for t, name, d in zip(tensors, names, dims):
        shape = tuple(SymInt.symbol(d[k]) if k in d else s for k, s in enumerate(t.shape))
        inputs.append(Value(str(name), "input", shape, t.dtype, device=t.device))
    consts = []
    for k, (_, pname) in enumerate(first.consts):
        name = pname if pname is not None else f"_const_{k}"
        versions = {key: r.consts[k][0] for key, r in recs.items()}
        if any(r.consts[k][1] != pname for r in recs.values()):
            raise _Mismatch(f"constant {name} is a different parameter in another trace")
        consts.append(_merge_const(name, versions, base))
    nodes, counters = [], {}
    refs = {}
    for i, v in enumerate(inputs):
        refs[Ref("input", i)] = v
    for k, c in enumerate(consts):
        refs[Ref("const", k)] = c
    for j, op in enumerate(first.ops):
        versions = {key: r.ops[j] for key, r in recs.items()}
        for key, o in versions.items():
            if o.kind != op.kind or o.target is not op.target:
                raise _Mismatch(f"op {j} is {_opname(op)} at the example's size but {_opname(o)} with {sorted(key)} "
                                "one larger")
        where = f"op {j} ({_opname(op)})"
        margs = merge({k: o.args for k, o in versions.items()}, base, where)
        mattrs = merge({k: o.attrs for k, o in versions.items()}, base, where)

        def to_value(x):
            if isinstance(x, Ref):
                return refs[x]
            return ArrayOf(refs[x.ref])
        margs = map_structure(margs, to_value, _is_ref)
        mattrs = map_structure(mattrs, to_value, _is_ref)
        base_name = op.target.op if op.kind == "primitive" else _snake(type(op.target).__name__)
        count = counters.get(base_name, 0)
        counters[base_name] = count + 1
        node = Node(base_name if count == 0 else f"{base_name}_{count}", op.kind, op.target, margs, mattrs,
                    op.out_spec)
        for i, (_, dtype) in enumerate(op.outs):
            shapes = {k: tuple(o.outs[i][0]) for k, o in versions.items()}
            if any(o.outs[i][1] != dtype for o in versions.values()):
                raise _Mismatch(f"{where}: the output dtype changes with the input size")
            mshape = merge(shapes, base, f"{where} output shape")
            out_name = node.name if len(op.outs) == 1 else f"{node.name}.{i}"
            v = Value(out_name, "node", mshape, dtype, node=node, index=i)
            node.outputs.append(v)
            refs[Ref("node", j, i)] = v
        nodes.append(node)
    outputs = merge({k: r.outputs for k, r in recs.items()}, base, "the outputs")
    outputs = map_structure(outputs, lambda x: refs[x], lambda x: isinstance(x, Ref))
    return Graph(inputs, nodes, outputs, consts, base, dims, None)


def _is_ref(x):
    return isinstance(x, (Ref, _ArrayRef))


def _opname(op):
    return op.target.op if op.kind == "primitive" else f"module {type(op.target).__name__}"


def _snake(name):
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _merge_const(name, versions, base):
    t = versions[frozenset()]
    if all(v is t for v in versions.values()):
        return Value(name, "const", tuple(t.shape), t.dtype, tensor=t, device=t.device)
    arrays = {k: np.asarray(v.__array__()) for k, v in versions.items()}
    a = arrays[frozenset()]
    if all(x.shape == a.shape and np.array_equal(x, a, equal_nan=True) for x in arrays.values()):
        return Value(name, "const", tuple(t.shape), t.dtype, tensor=t, device=t.device)
    if all(is_arange(x) and x.dtype == a.dtype for x in arrays.values()):
        n = fit_int({k: x.shape[0] for k, x in arrays.items()}, base)
        return Value(name, "const", (n,), t.dtype, fill=SymArange(n, a.dtype), device=t.device)
    if any(x.ndim != a.ndim for x in arrays.values()):
        raise NotGeneralizable(f"constant {name} changes rank with the input size")
    flat = [x.reshape(-1) for x in arrays.values()]
    if a.size and all(x.size and np.all(x == x[0]) for x in flat) and len({x[0].item() for x in flat}) == 1:
        shape = tuple(fit_int({k: x.shape[d] for k, x in arrays.items()}, base) for d in range(a.ndim))
        return Value(name, "const", shape, t.dtype, fill=flat[0][0].item(), device=t.device)
    raise NotGeneralizable(f"constant {name} of shape {list(a.shape)} is made from the input's size or values "
                           "(only uniform constants such as zeros or ones may follow the input's size)")
