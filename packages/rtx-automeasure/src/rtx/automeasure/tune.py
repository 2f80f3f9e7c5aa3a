"""`rtx automeasure tune`: tune rtx's own kernels for this machine and write the tuning cache.

1. Find the work: run one training step of each workload (the digits CNN of `rtx demo`,
   ResNet-18 at batch 8 on 64x64 images when rtx-vision is installed) with forward hooks on its
   Conv and Linear layers, and take a fixed set of attention sizes for rtx-flash-attn's tiles.
2. For each distinct layer call, time its forward + backward under every candidate
   configuration (`rtx.runtime.tuning.forced`) with autotune's interleaved rounds and its rule: a
   candidate replaces the default only when measured faster (median 3% better, quartiles apart).
3. Store the choice under the keys that layer's kernels asked for (`rtx.runtime.tuning.record`).
4. Time each workload with the cache ignored (today's defaults) and with it, interleaved, and
   print both medians and the change as a Compare table. A layer timed alone does not see what
   it does to its neighbours (multi-threaded BLAS left spinning, caches), so when a workload's
   median comes out slower with its layers' choices, those entries are removed again (and the
   workload runs on the defaults, as before): the choices are kept only where the whole
   workload measured no slower.

The candidates are the kernels' own tunables: convolution chunk size and worker threads (rtx-nn),
the small-GEMM thread policy of Linear (rtx-nn, only with more than one BLAS thread), attention
tile sizes (rtx-flash-attn's CPU path).
"""
from __future__ import annotations

import contextlib
import sys
import time

from rtx.automeasure.autotune import Autotuner
from rtx.automeasure.measurement import Measurement, TaskSpec
from rtx.runtime import threads as _threads
from rtx.runtime import tuning as _tuning

__all__ = ["Task", "conv_configs", "find_tasks", "measure_workloads", "tune_task", "workloads"]

MB = 1 << 20


# ---- workloads -------------------------------------------------------------------------------------

def _digits_cnn():
    """One epoch of the digits CNN of `rtx demo` (tools/bench/training.py): 1,437 samples of 1x8x8,
    batch 32, Adam. Returns (model, step_inputs, run_epoch)."""
    import rtx
    import rtx.nn.functional as F
    import rtx.optim as optim
    from rtx.demo.model import DigitsCNN
    rtx.manual_seed(0)

    model = DigitsCNN()
    opt = optim.Adam(model.parameters(), lr=6e-3)
    x, y = rtx.rand(1437, 1, 8, 8), rtx.randint(0, 10, (1437,))

    def step(i=0):
        opt.zero_grad()
        F.cross_entropy(model(x[i:i + 32]), y[i:i + 32]).backward()
        opt.step()

    def epoch():
        for i in range(0, 1437, 32):
            step(i)
    return model, step, epoch


def _resnet18():
    """One ResNet-18 training step (forward + backward) at batch 8 on 64x64 images, as
    tools/bench/vision.py times it."""
    import rtx
    import rtx.nn.functional as F
    import rtx.vision.models as models
    rtx.manual_seed(0)
    model = models.resnet18().train()
    x, y = rtx.randn(8, 3, 64, 64), rtx.randint(0, 1000, (8,))

    def step():
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
    return model, step, step


def workloads(names=None):
    """{name: builder} of the workloads rtx can run here (ResNet-18 needs rtx-vision)."""
    out = {"digits CNN epoch": _digits_cnn}
    try:
        import rtx.vision.models  # noqa: F401
        out["ResNet-18 step b8 64x64"] = _resnet18
    except ImportError:
        pass
    if names:
        out = {k: v for k, v in out.items() if any(n in k.lower() for n in names)}
    return out


# ---- tasks: one layer call each ----------------------------------------------------------------------

class Task:
    """One layer call to tune: `op` (the tuning cache's op name), `run()` (its forward + backward),
    `configs` (candidates, the default first as {}), and a label."""

    def __init__(self, op, label, run, configs, workload=None):
        self.op, self.label, self.run, self.configs, self.workload = op, label, run, configs, workload

    def __repr__(self):
        return f"Task({self.op}: {self.label}, {len(self.configs)} configs)"


def conv_configs(workers=None):
    """The default ({}: rtx-nn's own chunk size, ~32 MB of columns, or ~1 MB pieces on its channels-last
    path, and as many workers as BLAS threads) and the alternatives: other chunk sizes, and one worker
    (multi-threaded BLAS on one chunk at a time)."""
    workers = _threads.cpu_workers() if workers is None else workers
    configs = [{}] + [{"chunk_bytes": c} for c in (2 * MB, 8 * MB, 128 * MB)]
    if workers > 1:
        configs += [{"workers": 1}, {"workers": 1, "chunk_bytes": 128 * MB}]
    return configs


def _conv_task(mod, x_shape, x_grad):
    import rtx
    import rtx.nn.functional as F
    nd = len(x_shape) - 2
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    x = rtx.randn(*x_shape).requires_grad_(x_grad)
    w = mod.weight.detach().clone().requires_grad_()
    b = None if mod.bias is None else mod.bias.detach().clone().requires_grad_()
    g = None

    def run():
        nonlocal g
        y = conv(x, w, b, mod.stride, mod.padding, mod.dilation, mod.groups)
        if g is None:
            g = rtx.randn(*y.shape)
        y.backward(g)
    label = (f"conv{nd}d {tuple(x_shape)} -> {tuple(mod.weight.shape)} stride {tuple(mod.stride)}")
    return Task(f"conv{nd}d", label, run, conv_configs())


def _linear_task(mod, x_shape, x_grad):
    import rtx
    import rtx.nn.functional as F
    if _threads.cpu_workers() <= 1:   # one BLAS thread: there is no thread policy to choose
        return None
    x = rtx.randn(*x_shape).requires_grad_(x_grad)
    w = mod.weight.detach().clone().requires_grad_()
    b = None if mod.bias is None else mod.bias.detach().clone().requires_grad_()

    def run():
        F.linear(x, w, b).sum().backward()
    return Task("gemm_small", f"linear {tuple(x_shape)} x {tuple(mod.weight.shape)}", run,
                [{}, {"single_threaded": False}])


def _sdpa_tasks():
    try:
        from rtx.flash_attn import flash_attention
    except ImportError:
        return []
    import rtx
    tasks = []
    for B, H, L, D in ((2, 8, 256, 64), (1, 8, 1024, 64)):
        q, k, v = (rtx.randn(B, H, L, D).requires_grad_() for _ in range(3))

        def run(q=q, k=k, v=v):
            flash_attention(q, k, v, is_causal=True).sum().backward()
        configs = [{}] + [{"block_q": bq, "block_k": bk} for bq, bk in ((64, 64), (128, 128), (64, 256), (256, 64),
                                                                      (256, 256)) if bq <= L and bk <= L]
        tasks.append(Task("flash_attn", f"attention causal b{B} h{H} L{L} d{D}", run, configs))
    return tasks


def find_tasks(names=None, ops=("conv", "linear", "sdpa")):
    """The distinct Conv/Linear calls of one step of each workload, plus the attention sizes."""
    import rtx.nn as nn
    seen, tasks = set(), []
    for wname, build in workloads(names).items():
        model, step, _ = build()
        calls = []

        def hook(mod, args, calls=calls):
            x = args[0]
            calls.append((mod, tuple(x.shape), bool(x.requires_grad)))
        handles = [m.register_forward_pre_hook(hook) for m in model.modules()
                   if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear))]
        try:
            step()
        finally:
            for h in handles:
                h.remove()
        for mod, shape, grad in calls:
            is_conv = not isinstance(mod, nn.Linear)
            if ("conv" if is_conv else "linear") not in ops:
                continue
            sig = (type(mod).__name__, shape, tuple(mod.weight.shape), getattr(mod, "stride", None),
                   getattr(mod, "padding", None), grad)
            if sig in seen:
                continue
            seen.add(sig)
            task = (_conv_task if is_conv else _linear_task)(mod, shape, grad)
            if task is not None:
                task.workload = wname
                tasks.append(task)
    if "sdpa" in ops:
        tasks += _sdpa_tasks()
    return tasks


# ---- tuning one task ---------------------------------------------------------------------------------

def tune_task(task, rep_ms=200.0, store=True):
    """Time task.run under each candidate (autotune's interleaved rounds and choice rule) and, with
    store=True, write the choice under every key its kernels looked up (result.keys: the cache
    keys written). Returns the TuneResult, or None when no kernel of the call consults task.op (a
    Linear GEMM outside the small-GEMM range)."""
    with _tuning.forced(None, None), _tuning.record() as asked:
        task.run()
    keys = {(op, shape, dtype, device) for op, shape, dtype, device in asked if op == task.op}
    if not keys:
        return None

    def candidate(**config):
        with _tuning.forced(task.op, config or None):
            task.run()
    tuner = Autotuner(candidate, task.configs, op=task.op, warmup=max(rep_ms / 10, 1.0), rep=rep_ms, cache=False)
    result = tuner.tune()
    result.keys = []
    medians = {json_key(task.configs[i]): m for i, m in result.medians.items()}
    if store:
        for op, shape, dtype, device in sorted(keys):
            result.keys.append(_tuning.store(op, shape, dtype, device, result.config, default=result.default,
                                             speedup=result.speedup, layer=task.label, median_s=medians))
    return result


def json_key(config):
    return ",".join(f"{k}={v}" for k, v in sorted(config.items())) or "default"


# ---- before / after -----------------------------------------------------------------------------------

def measure_workloads(names=None, rounds=5):
    """{name: (before Measurement, after Measurement)}: each workload's run timed `rounds` times
    with the tuning cache ignored (every kernel on its default) and with it, alternately."""
    out = {}
    for name, build in workloads(names).items():
        _, _, run = build()
        run()   # warm-up: first-call costs (buffers, imports)
        times = {"before": [], "after": []}
        for _ in range(rounds):
            for which in ("before", "after"):
                with _tuning.forced(None, None) if which == "before" else contextlib.nullcontext():
                    t0 = time.perf_counter()
                    run()
                    times[which].append(time.perf_counter() - t0)
        out[name] = tuple(Measurement(1, times[w], TaskSpec(stmt=name, label="rtx automeasure tune", sub_label=name,
                                                            description=("defaults (no cache)" if w == "before"
                                                                         else "tuned (cache)"),
                                                            num_threads=_threads.get_num_threads()))
                          for w in ("before", "after"))
    return out


def _progress(i, n, label, width=24, stream=sys.stdout):
    done = int(width * i / max(n, 1))
    stream.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label[:60]:<60}")
    stream.flush()


def main(argv=None):
    import argparse

    from rtx.automeasure.compare import Compare
    p = argparse.ArgumentParser(prog="rtx automeasure tune",
                                description="tune rtx's kernels for this machine; writes the tuning cache")
    p.add_argument("--ops", default="conv,linear,sdpa", help="comma-separated: conv, linear, sdpa")
    p.add_argument("--workloads", default="", help="comma-separated name parts (digits, resnet); default all")
    p.add_argument("--budget", type=float, default=120.0, help="seconds of candidate timing, shared by the layers")
    p.add_argument("--rounds", type=int, default=7, help="before/after runs of each workload")
    p.add_argument("--no-compare", action="store_true", help="skip the before/after timing")
    args = p.parse_args(argv)
    ops = tuple(o.strip().replace("conv2d", "conv") for o in args.ops.split(",") if o.strip())
    unknown = [o for o in ops if o not in ("conv", "linear", "sdpa")]
    if unknown:
        p.error(f"--ops expects conv, linear, sdpa; got {unknown}")
    names = [n.strip().lower() for n in args.workloads.split(",") if n.strip()] or None
    fp = _tuning.machine_fingerprint()
    print(f"tuning for {fp['cpu']} ({fp['cores']} cores, BLAS {fp['blas']}, {_threads.get_num_threads()} threads); "
          f"cache {_tuning.cache_path()}")
    tasks = find_tasks(names, ops)
    # each candidate of each layer gets an equal share of the budget
    per_config = 1e3 * args.budget / max(sum(len(t.configs) for t in tasks), 1)
    t0 = time.perf_counter()
    changed, tuned, written = [], 0, {}
    for i, task in enumerate(tasks):
        _progress(i, len(tasks), task.label)
        result = tune_task(task, rep_ms=per_config)
        if result is None:
            continue
        tuned += 1
        written.setdefault(task.workload, []).extend(result.keys)
        if result.config:
            changed.append((task, result))
    _progress(len(tasks), len(tasks), f"done in {time.perf_counter() - t0:.0f} s")
    print()
    print(f"{tuned} layer calls tuned, {len(changed)} changed from the default:")
    for task, r in changed:
        print(f"  {task.label}: {r.config}  ({r.speedup:.2f}x on the layer)")
    if args.no_compare:
        return 0
    results = measure_workloads(names, args.rounds)
    compare = Compare([m for pair in results.values() for m in pair])
    compare.trim_significant_figures()
    compare.print()
    for name, (before, after) in results.items():
        change = (after.median / before.median - 1) * 100
        print(f"{name}: median {before.median * 1e3:.1f} ms before, {after.median * 1e3:.1f} ms after "
              f"({change:+.1f}%; IQR {before.iqr * 1e3:.1f} / {after.iqr * 1e3:.1f} ms)")
        if after.median > before.median and written.get(name):
            n = _tuning.discard(written[name])
            print(f"  slower with its layers' choices: {n} entries removed, {name} keeps the defaults (as before)")
    return 0
