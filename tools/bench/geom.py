#!/usr/bin/env python3
"""rtx.geom benchmarks (issue 14), PyG on torch CPU side by side when its venv is given.

2-layer GCN and GraphSAGE (hidden 64) full-graph forward+backward on a random graph of 200k nodes and
2M edges, and NeighborLoader throughput. Peak traced memory of the rtx pass is reported per edge and
asserted far below a dense N×N (message passing must stay O(E)).

    .venv/bin/python tools/bench/geom.py --pyg-python /work/venvs/pyg/bin/python
    (--nodes/--edges for a smaller graph; the PyG venv: pip install torch==2.13.0 torch-geometric)
    --workloads loader: NeighborLoader only. PyG's NeighborLoader needs pyg-lib or torch-sparse; where neither
    installs, --torch-sparse-op PATH loads torch-sparse's neighbor_sample operator alone (built from the
    torch-sparse sdist) and tells PyG to use it.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np


def graph(n, e, f, seed=0):
    rng = np.random.default_rng(seed)
    ei = rng.integers(0, n, (2, e)).astype(np.int64)
    x = rng.standard_normal((n, f)).astype(np.float32)
    return ei, x


def best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def run(lib, n, e, f, repeat, workloads=("gcn", "sage", "loader"), torch_sparse_op=None, batches=20):
    ei_np, x_np = graph(n, e, f)
    if lib == "pyg" and torch_sparse_op:
        import torch
        import torch_geometric.typing
        torch.ops.load_library(torch_sparse_op)  # registers torch.ops.torch_sparse.neighbor_sample
        torch_geometric.typing.WITH_TORCH_SPARSE = True
    if lib == "rtx":
        import rtx as torch
        from rtx.geom.data import Data
        from rtx.geom.loader import NeighborLoader
        from rtx.geom.nn import GCN, GraphSAGE
        tensor = torch.tensor
    else:
        import torch
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
        from torch_geometric.nn import GCN, GraphSAGE
        tensor = torch.from_numpy
    torch.manual_seed(0)
    ei, x = tensor(ei_np), tensor(x_np)
    out = {}
    # An upstream gradient like a loss's (dense, contiguous); .sum()'s broadcast gradient would hit a slow
    # non-BLAS path in NumPy's matmul and measure that instead.
    g = tensor(np.random.default_rng(1).standard_normal((n, 16)).astype(np.float32))
    for name, cls in (("gcn", GCN), ("sage", GraphSAGE)):
        if name not in workloads:
            continue
        model = cls(f, 64, 2, 16)

        def step(model=model):
            model.zero_grad()
            model(x, ei).backward(g)
        out[f"{name}_fwd_bwd_s"] = best(step, repeat)
        if lib == "rtx":
            tracemalloc.start()
            step()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            out[f"{name}_peak_bytes"] = peak
            # O(E) memory: a bounded multiple of the inputs' size (edges + node features), far below a
            # dense N×N float32 (n*n*4 bytes).
            linear = (3 * e + n * max(f, 64)) * 4
            assert peak < 20 * linear and peak < n * n * 4 / 10, f"{name}: peak {peak} bytes is not O(E) (n={n})"
    if "loader" not in workloads:
        return out
    data = Data(x=x, edge_index=ei)
    try:
        loader = NeighborLoader(data, num_neighbors=[10, 5], batch_size=512, shuffle=True)
        rates = []
        for _ in range(repeat):
            it = iter(loader)
            next(it)  # the first batch pays one-off setup (CSC conversion)
            t = time.perf_counter()
            seen = 0
            for _ in range(batches):
                b = next(it)
                seen += b.batch_size
            rates.append(seen / (time.perf_counter() - t))
        out["neighbor_seeds_per_s"] = max(rates)
        out["neighbor_nodes_per_batch"] = int(b.num_nodes)
        out["neighbor_edges_per_batch"] = int(b.edge_index.shape[1])
    except Exception as exc:  # PyG's sampler needs pyg-lib or torch-sparse
        out["neighbor_error"] = f"{type(exc).__name__}: {str(exc)[:100]}"
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", default="rtx", choices=["rtx", "pyg"])
    p.add_argument("--nodes", type=int, default=200_000)
    p.add_argument("--edges", type=int, default=2_000_000)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", action="store_true")
    p.add_argument("--workloads", default="gcn,sage,loader", help="comma list of gcn, sage, loader")
    p.add_argument("--torch-sparse-op", default=None, help="PyG side: a built torch-sparse neighbor_sample .so")
    p.add_argument("--pyg-python", default=os.environ.get("RTX_BENCH_PYG_PYTHON"))
    a = p.parse_args()
    workloads = a.workloads.split(",")
    res = run(a.lib, a.nodes, a.edges, a.features, a.repeat, workloads, a.torch_sparse_op)
    if a.json:
        print(json.dumps(res))
        return
    other = {}
    if a.pyg_python:
        cmd = [a.pyg_python, sys.argv[0], "--lib", "pyg", "--json", "--nodes", str(a.nodes), "--edges",
               str(a.edges), "--features", str(a.features), "--repeat", str(a.repeat), "--workloads", a.workloads]
        if a.torch_sparse_op:
            cmd += ["--torch-sparse-op", a.torch_sparse_op]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
        other = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {"error": r.stderr[-300:]}
    print(f"graph: {a.nodes} nodes, {a.edges} edges, {a.features} features; hidden 64, out 16")
    for key in ("gcn_fwd_bwd_s", "sage_fwd_bwd_s"):
        if key not in res:
            continue
        line = f"{key:16s} rtx {res[key]:.3f} s"
        if key in other:
            line += f"   pyg {other[key]:.3f} s   rtx/pyg {res[key] / other[key]:.2f}x"
        print(line)
    for key in ("gcn_peak_bytes", "sage_peak_bytes"):
        if key in res:
            print(f"{key:16s} rtx {res[key] / 2**20:.0f} MiB ({res[key] / a.edges:.0f} bytes per edge)")
    for key in ("neighbor_seeds_per_s", "neighbor_nodes_per_batch", "neighbor_edges_per_batch", "neighbor_error"):
        if key in res or key in other:
            print(f"{key:16s} rtx {res.get(key)}   pyg {other.get(key, other.get('error'))}")


if __name__ == "__main__":
    main()
