#!/usr/bin/env python3
"""Short GPU benchmark for tools/gpu-check: the same workloads on cuda and cpu, with ratios.
Times on cuda are taken after a synchronize."""
import time

import rtx


def timed(fn, device, repeat=10):
    fn()
    rtx.cuda.synchronize() if device == "cuda" else None
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            rtx.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def workloads(device):
    import rtx.nn as nn
    import rtx.nn.functional as F
    a, b = rtx.randn(2048, 2048, device=device), rtx.randn(2048, 2048, device=device)
    x = rtx.randn(64, 1024, device=device)
    h = rtx.randn(64, 768, device=device)
    img = rtx.randn(32, 64, 32, 32, device=device)
    conv = nn.Conv2d(64, 64, 3, padding=1).to(device)
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)
    xb, yb = rtx.randn(128, 784, device=device), rtx.randint(0, 10, (128,), device=device)

    def step():
        loss = F.cross_entropy(mlp(xb), yb)
        mlp.zero_grad()
        loss.backward()

    return {"matmul f32 2048^2": lambda: a @ b, "softmax 64x1024": lambda: F.softmax(x, -1),
            "layer_norm 64x768": lambda: F.layer_norm(h, (768,)), "conv2d 3x3 64->64 32x32 b32": lambda: conv(img),
            "MLP 784-512-512-10 fwd+bwd b128": step}


def main():
    if not rtx.cuda.is_available():
        print("no CUDA device: nothing to benchmark")
        return 1
    cpu, gpu = workloads("cpu"), workloads("cuda")
    print(f"{'workload':<34} {'cpu ms':>10} {'cuda ms':>10} {'speed-up':>9}")
    for name in cpu:
        tc, tg = timed(cpu[name], "cpu", 3), timed(gpu[name], "cuda")
        print(f"{name:<34} {tc * 1e3:10.3f} {tg * 1e3:10.3f} {tc / tg:8.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
