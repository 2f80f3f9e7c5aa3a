"""InferenceSession: onnxruntime's API over a compiled plan (see plan.py)."""
from __future__ import annotations

import os
import time

import numpy as np

from rtx.inference.optimize import optimize as _optimize
from rtx.inference.plan import Plan
from rtx.inference.stats import LatencyStats


class InferenceSession:
    """Run a model as a flat plan over raw arrays: constant-folded, pre-transposed weights,
    Linear/Conv fused with their bias, BatchNorm scale and activation, buffers kept between
    calls, int8 kernels for quantized ONNX graphs, no autograd.

    model_or_graph_or_path: an rtx nn.Module (traced with rtx.graph.trace on `example_inputs`,
    dim 0 symbolic), an rtx.graph.Graph (not modified), a path to an .onnx file, ONNX bytes or an
    onnx.ModelProto. optimize=False skips folding and fusion (each op runs as it came).
    device: "cpu" or "cuda" (default: the module's parameters' device; CPU for ONNX).
    output_names: names for a module's/graph's outputs (default "output" or "output_<i>").

    `run` is thread-safe: concurrent calls get separate buffers.
    """

    def __init__(self, model_or_graph_or_path, example_inputs=None, *, optimize=True, device=None,
                 output_names=None):
        import rtx.nn as nn
        from rtx.graph import Graph
        src = model_or_graph_or_path
        self.device = _device_name(device)
        if isinstance(src, Graph):
            program = self._from_graph(src, output_names, optimize_graph=False)
        elif isinstance(src, nn.Module):
            if example_inputs is None:
                raise TypeError("InferenceSession(module) needs example_inputs (a tensor or a tuple of tensors) "
                                "to trace the module with")
            if device is None:
                p = next(iter(src.parameters()), None)
                self.device = "cuda" if p is not None and p.device.type == "cuda" else "cpu"
            program = self._from_graph(_trace(src, example_inputs), output_names, optimize_graph=optimize)
        elif isinstance(src, (str, os.PathLike, bytes, bytearray)) or type(src).__name__ == "ModelProto":
            from rtx.inference.from_onnx import from_onnx
            program = from_onnx(src, self.xp, optimize=optimize)
        else:
            raise TypeError("InferenceSession takes an rtx nn.Module (with example_inputs), an rtx.graph.Graph, "
                            f"a path to an .onnx file, ONNX bytes or an onnx.ModelProto; got {type(src).__name__}")
        if optimize:
            _optimize(program, self.xp)
        else:
            program.eliminate_dead_code()
        self.program = program
        self._plan = Plan(program, self.xp)
        self._inputs = {p.name: p for p in program.inputs}
        self._outputs = [p.name for p in program.outputs]
        # per input: (name, port, rank, [(dim, fixed size)], [(dim, symbol)]), checked on every run
        self._checks = [(p.name, p, len(p.shape), [(d, s) for d, s in enumerate(p.shape) if isinstance(s, int)],
                         [(d, s) for d, s in enumerate(p.shape) if isinstance(s, str)]) for p in program.inputs]
        seen = [s for c in self._checks for _, s in c[4]]
        self._symbols_shared = len(seen) != len(set(seen))   # a symbol in two places must agree
        self._stats = LatencyStats()

    # ---- construction --------------------------------------------------------------------------
    @property
    def xp(self):
        if self.device == "cuda":
            import cupy
            return cupy
        return np

    def _from_graph(self, graph, output_names, optimize_graph):
        from rtx.inference.from_graph import from_graph
        if optimize_graph:  # our own trace: simplify it in place (user graphs are left alone)
            graph.eliminate_dead_code()
            graph.fold_constants()
            graph.eliminate_common_subexpressions()
            graph.eliminate_dead_code()
        return from_graph(graph, self.xp, output_names)

    # ---- onnxruntime's API ------------------------------------------------------------------------
    def get_inputs(self):
        """The graph inputs: objects with .name, .shape (ints; a str or None for dynamic dims), .dtype."""
        return list(self.program.inputs)

    def get_outputs(self):
        return list(self.program.outputs)

    def run(self, output_names, feed, run_options=None):
        """Compute `output_names` (None: all) from `feed` {input name: array}; returns a list of
        NumPy arrays. Wrong names, ranks, sizes or dtypes raise ValueError naming them."""
        t0 = time.perf_counter()
        arrays = self._check_feed(feed)
        idx = None if output_names is None else self._output_indices(output_names)
        outs = self._plan.run(arrays)
        if self.device == "cuda":
            outs = [o.get() for o in outs]
        if idx is not None:
            outs = [outs[i] for i in idx]
        self._stats.record(time.perf_counter() - t0)
        return outs

    def stats(self):
        """Latency of `run` calls: dict(count, mean_ms, p50_ms, p90_ms, p99_ms, max_ms)."""
        return self._stats.summary()

    def reset_stats(self):
        self._stats.reset()

    def warmup(self, batch_sizes=(1,), runs=2):
        """Run on zeros at each batch size (dynamic dims take that size) so buffers exist and BLAS
        is loaded before the first request; not counted in stats()."""
        for n in batch_sizes:
            feed = {}
            for p in self.program.inputs:
                shape = [d if isinstance(d, int) else n for d in p.shape]
                feed[p.name] = np.zeros(shape, dtype=p.dtype)
            arrays = self._check_feed(feed)
            for _ in range(runs):
                self._plan.run(arrays)

    def op_counts(self):
        """{kernel kind: count} of the compiled plan (Generic:<op> for ops run through rtx's own op)."""
        return self.program.op_counts()

    # ---- checks -------------------------------------------------------------------------------------
    def _output_indices(self, names):
        if names is None:
            return range(len(self._outputs))
        if isinstance(names, str):
            raise TypeError(f"output_names must be a list of names or None, got the string {names!r}")
        idx = []
        for n in names:
            if n not in self._outputs:
                raise ValueError(f"unknown output name {n!r}; the model's outputs are {self._outputs}")
            idx.append(self._outputs.index(n))
        return idx

    def _check_feed(self, feed):
        if type(feed) is not dict:
            if not isinstance(feed, dict):
                raise TypeError(f"feed must be a dict {{input name: array}}, got {type(feed).__name__}")
        if feed.keys() != self._inputs.keys():   # set equality, in C
            expected = list(self._inputs)
            for k in feed:
                if k not in self._inputs:
                    raise ValueError(f"unknown input name {k!r}; the model's inputs are {expected}")
            raise ValueError(f"missing input(s) {[k for k in expected if k not in feed]}; the model's inputs are "
                             f"{expected}")
        arrays = []
        sizes = {} if self._symbols_shared else None
        for name, port, rank, fixed, syms in self._checks:
            a = feed[name]
            if type(a) is not np.ndarray:
                a = _as_array(a, port)
                if self.device == "cpu" and not isinstance(a, np.ndarray):
                    a = a.get()   # a CuPy array fed to a CPU session
            if a.dtype != port.dtype:
                raise ValueError(f"input {name!r} has dtype {a.dtype}, expected {port.dtype}")
            shape = a.shape
            if len(shape) != rank:
                raise ValueError(f"input {name!r} has rank {a.ndim} (shape {list(shape)}), expected rank "
                                 f"{rank} (shape {port.shape})")
            for d, want in fixed:
                if shape[d] != want:
                    why = (f"; the traced graph is static: {self.program.static_reason}"
                           if self.program.static_reason else "")
                    raise ValueError(f"input {name!r} has shape {list(shape)}, expected {port.shape} "
                                     f"(dim {d} must be {want}){why}")
            if sizes is not None:
                for d, sym in syms:
                    got = shape[d]
                    if sizes.setdefault(sym, (got, name))[0] != got:
                        raise ValueError(f"input {name!r} dim {d} is {got}, but the dynamic size {sym!r} is "
                                         f"{sizes[sym][0]} in input {sizes[sym][1]!r}")
            if self.device == "cuda":
                import cupy
                a = cupy.asarray(a)
            arrays.append(a)
        return arrays

    def __repr__(self):
        ins = ", ".join(f"{p.name}: {p.dtype}{p.shape}" for p in self.program.inputs)
        return f"InferenceSession({ins} -> {self._outputs}, {len(self.program.ops)} ops, device={self.device!r})"


def _device_name(device):
    if device is None:
        return "cpu"
    name = str(getattr(device, "type", device)).split(":")[0]
    if name not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    return name


def _as_array(x, port):
    from rtx.extend import Tensor, raw
    if type(x) is Tensor:
        return raw(x)
    if isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__"):
        return x
    if isinstance(x, (list, tuple, int, float, np.generic)):
        return np.asarray(x, dtype=port.dtype)
    raise ValueError(f"input {port.name!r} must be an array, got {type(x).__name__}")


def _trace(model, example_inputs):
    import rtx
    from rtx.graph import trace
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    args = tuple(rtx.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args)
    was_training = model.training
    model.eval()
    try:
        with rtx.no_grad():
            return trace(model, args)
    finally:
        model.train(was_training)
