"""The session's intermediate form: a Program of Ops over numbered values.

Both front ends (an rtx.graph Graph, an ONNX model) lower to it; the passes in optimize.py
rewrite it (constant folding, linear/conv + bias + activation fusion, int8 patterns), and
plan.py compiles it to a flat list of closures over raw arrays.

A value is an int (its slot in the run's value list). Constants are arrays known at compile
time (weights, folded results). An Op names a kernel kind (see kernels.py: "Linear", "Conv",
"Binary", "Unary", ... or "Generic" for anything run through rtx's own op), its input and
output values and its attributes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rtx.runtime.dtypes import ONNX_TYPE_NAMES


@dataclass
class Op:
    kind: str
    inputs: list          # value ids (None for a missing optional input)
    outputs: list         # value ids
    attrs: dict = field(default_factory=dict)
    name: str = ""
    foldable: bool = True  # False: attributes depend on the run's sizes, or the op is random


@dataclass
class Port:
    """A graph input or output: onnxruntime's NodeArg (name, shape with None/str for dynamic
    dims, numpy dtype)."""
    name: str
    shape: list
    dtype: object
    value: int = -1

    @property
    def type(self):
        """onnxruntime's type string, e.g. 'tensor(float)'."""
        return f"tensor({_ORT_NAMES.get(str(self.dtype), str(self.dtype))})"

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


_ORT_NAMES = ONNX_TYPE_NAMES  # "float32" -> "float", as onnxruntime prints "tensor(float)"


class Program:
    """Ops in topological order over values 0..n-1; consts: {value: array}; inputs/outputs: Ports.
    env_of(arrays) -> {symbol: size} for the run's inputs (used by ops with symbolic attributes)."""

    def __init__(self):
        self.n = 0
        self.ops = []
        self.consts = {}
        self.inputs = []
        self.outputs = []
        self.env_of = lambda arrays: {}
        self.static_reason = None   # why a traced graph has fixed sizes

    def value(self):
        self.n += 1
        return self.n - 1

    def const(self, array):
        v = self.value()
        self.consts[v] = array
        return v

    def add(self, kind, inputs, n_out=1, name="", foldable=True, **attrs):
        outs = [self.value() for _ in range(n_out)]
        self.ops.append(Op(kind, list(inputs), outs, attrs, name or kind, foldable))
        return outs[0] if n_out == 1 else outs

    def readers(self):
        """{value: number of reads} by ops and graph outputs."""
        out = {}
        for op in self.ops:
            for v in op.inputs:
                if v is not None:
                    out[v] = out.get(v, 0) + 1
        for p in self.outputs:
            out[p.value] = out.get(p.value, 0) + 1
        return out

    def producers(self):
        return {o: op for op in self.ops for o in op.outputs}

    def replace_uses(self, old, new):
        for op in self.ops:
            op.inputs = [new if v == old else v for v in op.inputs]
        for p in self.outputs:
            if p.value == old:
                p.value = new

    def eliminate_dead_code(self):
        live = {p.value for p in self.outputs}
        kept = []
        for op in reversed(self.ops):
            if any(o in live for o in op.outputs):
                kept.append(op)
                live.update(v for v in op.inputs if v is not None)
        self.ops = kept[::-1]
        self.consts = {v: a for v, a in self.consts.items() if v in live}

    def op_counts(self):
        out = {}
        for op in self.ops:
            k = op.kind if op.kind != "Generic" else f"Generic:{op.attrs.get('op', '?')}"
            out[k] = out.get(k, 0) + 1
        return out

    def __repr__(self):
        lines = [f"program({', '.join(f'%{p.value}={p.name}' for p in self.inputs)}):"]
        for op in self.ops:
            ins = ", ".join("None" if v is None else (f"const{list(self.consts[v].shape)}" if v in self.consts
                                                       else f"%{v}") for v in op.inputs)
            attrs = {k: v for k, v in op.attrs.items() if k not in ("fn", "wt", "w", "b", "node")}
            outs = ", ".join(f"%{o}" for o in op.outputs)
            lines.append(f"  {outs} = {op.kind}({ins}) {attrs if attrs else ''}  # {op.name}")
        lines.append("  return " + ", ".join(f"%{p.value}" for p in self.outputs))
        return "\n".join(lines)
