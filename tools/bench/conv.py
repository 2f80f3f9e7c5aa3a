#!/usr/bin/env python3
"""Convolution and pooling benchmarks (issue: rtx-nn conv/pool): each workload is written once
against the PyTorch API and timed with lib = rtx and lib = torch (CPU) in one invocation.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python tools/bench/conv.py \\
        --torch-python /work/torch-venv/bin/python
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import best_of, main  # noqa: E402


def _conv_setup(lib, n, cin, cout, hw, k=3):
    lib.manual_seed(0)
    conv = lib.nn.Conv2d(cin, cout, k, padding=k // 2)
    x = lib.randn(n, cin, hw, hw, requires_grad=True)
    g = lib.randn(n, cout, hw, hw)
    return conv, x, g


def conv_fwd_bwd(lib):
    conv, x, g = _conv_setup(lib, 32, 64, 64, 32)

    def run():
        x.grad = None
        conv.zero_grad()
        conv(x).backward(g)
    return best_of(run, repeat=7)


def conv_fwd(lib):
    conv, x, _ = _conv_setup(lib, 32, 64, 64, 32)

    def run():
        with lib.no_grad():
            conv(x)
    return best_of(run, repeat=7)


def conv_small_fwd_bwd(lib):
    conv, x, g = _conv_setup(lib, 64, 16, 32, 28)

    def run():
        x.grad = None
        conv.zero_grad()
        conv(x).backward(g)
    return best_of(run, repeat=7)


def conv_late_fwd_bwd(lib):
    # ResNet-18's last stage at 64x64 input: big weights, 2x2 images (thin columns; the input
    # gradient by matmul + col2im, the threads split the weights rather than the batch).
    conv, x, g = _conv_setup(lib, 8, 512, 512, 2)

    def run():
        x.grad = None
        conv.zero_grad()
        conv(x).backward(g)
    return best_of(run, repeat=7)


def conv_s2_fwd_bwd(lib):
    # A strided 3x3 convolution (ResNet's downsampling blocks): its input gradient is the
    # strided adjoint, which has no stride-1 convolution form.
    lib.manual_seed(0)
    conv = lib.nn.Conv2d(64, 128, 3, stride=2, padding=1)
    x = lib.randn(8, 64, 16, 16, requires_grad=True)
    g = lib.randn(8, 128, 8, 8)

    def run():
        x.grad = None
        conv.zero_grad()
        conv(x).backward(g)
    return best_of(run, repeat=7)


def conv_transpose_fwd_bwd(lib):
    lib.manual_seed(0)
    up = lib.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)
    x = lib.randn(16, 64, 16, 16, requires_grad=True)
    g = lib.randn(16, 32, 32, 32)

    def run():
        x.grad = None
        up.zero_grad()
        up(x).backward(g)
    return best_of(run, repeat=7)


def max_pool_fwd(lib):
    x = lib.randn(32, 64, 32, 32)
    F = lib.nn.functional
    return best_of(lambda: F.max_pool2d(x, 2), repeat=7)


def max_pool_fwd_bwd(lib):
    x = lib.randn(32, 64, 32, 32, requires_grad=True)
    g = lib.randn(32, 64, 16, 16)
    F = lib.nn.functional

    def run():
        x.grad = None
        F.max_pool2d(x, 2).backward(g)
    return best_of(run, repeat=7)


def max_pool_3x3s2_fwd_bwd(lib):
    x = lib.randn(32, 64, 32, 32, requires_grad=True)
    F = lib.nn.functional
    g = lib.randn(32, 64, 16, 16)

    def run():
        x.grad = None
        F.max_pool2d(x, 3, 2, 1).backward(g)
    return best_of(run, repeat=7)


def avg_pool_fwd_bwd(lib):
    x = lib.randn(32, 64, 32, 32, requires_grad=True)
    g = lib.randn(32, 64, 16, 16)
    F = lib.nn.functional

    def run():
        x.grad = None
        F.avg_pool2d(x, 2).backward(g)
    return best_of(run, repeat=7)


def bilinear_up_fwd_bwd(lib):
    x = lib.randn(16, 32, 32, 32, requires_grad=True)
    g = lib.randn(16, 32, 64, 64)
    F = lib.nn.functional

    def run():
        x.grad = None
        F.interpolate(x, scale_factor=2, mode="bilinear").backward(g)
    return best_of(run, repeat=7)


WORKLOADS = {
    "conv2d 3x3 64->64 32^2 b32 fwd+bwd": conv_fwd_bwd,
    "conv2d 3x3 64->64 32^2 b32 fwd": conv_fwd,
    "conv2d 3x3 16->32 28^2 b64 fwd+bwd": conv_small_fwd_bwd,
    "conv2d 3x3 512->512 2^2 b8 fwd+bwd": conv_late_fwd_bwd,
    "conv2d 3x3 s2 64->128 16^2 b8 f+b": conv_s2_fwd_bwd,
    "conv_t2d 4x4 s2 64->32 16^2 b16 f+b": conv_transpose_fwd_bwd,
    "max_pool2d 2x2 b32x64x32^2 fwd": max_pool_fwd,
    "max_pool2d 2x2 b32x64x32^2 fwd+bwd": max_pool_fwd_bwd,
    "max_pool2d 3x3 s2 p1 same fwd+bwd": max_pool_3x3s2_fwd_bwd,
    "avg_pool2d 2x2 same fwd+bwd": avg_pool_fwd_bwd,
    "bilinear x2 b16x32x32^2 fwd+bwd": bilinear_up_fwd_bwd,
}

if __name__ == "__main__":
    main(WORKLOADS, __doc__)
