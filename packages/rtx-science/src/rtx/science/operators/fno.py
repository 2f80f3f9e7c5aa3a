"""Fourier neural operators (Li et al., ICLR 2021): spectral convolutions that keep the lowest
Fourier modes, multiply them by learned complex weights, and transform back."""
from __future__ import annotations

import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F


def _complex(re, im):
    c = rtx.complex64 if re.dtype == rtx.float32 else rtx.complex128
    return re.to(c) + im.to(c) * 1j


_DFT_CACHE = {}


def _dft_bases(n, modes, dtype, device=None):
    """Real bases of the truncated rfft (2*modes, n) and of irfft from those modes (n, 2*modes),
    both applied from the left to (..., n, channels):

        rfft:  X_k = sum_j x_j (cos - i sin)(2 pi j k / n),  k < modes   (rows: Re X_k, then Im X_k)
        irfft: y_j = (1/n) sum_k c_k (Re X_k cos - Im X_k sin)(2 pi j k / n),  c_0 = c_(n/2) = 1, else 2

    (irfft drops the imaginary parts of the DC and Nyquist bins; their sines vanish, so does this).
    Cached per (n, modes, dtype, device)."""
    key = (n, modes, dtype, str(device))
    if key not in _DFT_CACHE:
        ang = 2 * np.pi * np.outer(np.arange(modes), np.arange(n)) / n      # (modes, n)
        c = np.full(modes, 2.0)
        c[0] = 1.0
        if n % 2 == 0 and modes == n // 2 + 1:
            c[-1] = 1.0
        fwd = np.concatenate([np.cos(ang), -np.sin(ang)], axis=0)
        inv = np.concatenate([c[:, None] * np.cos(ang), -c[:, None] * np.sin(ang)], axis=0).T / n
        _DFT_CACHE[key] = tuple(rtx.tensor(np.ascontiguousarray(a), dtype=dtype, device=device) for a in (fwd, inv))
    return _DFT_CACHE[key]


class SpectralConv1d(nn.Module):
    """(B, in, N) -> (B, out, N): irfft(W * rfft(x)[:modes]). Weights are stored as real and
    imaginary parts (weight_re, weight_im) so every optimizer treats them as real parameters.

    `method`: "fft" runs rtx.fft.rfft / irfft; "dft" multiplies by the truncated DFT matrices
    instead (_dft_bases), the same linear map in real arithmetic: with few modes that is
    O(N * modes) in BLAS against O(N log N) of a (much slower per flop) FFT, the usual case in
    FNOs (16 modes of 1024 points: ~20x faster on CPU). "auto" picks "dft" for modes <= 64."""

    def __init__(self, in_channels, out_channels, modes, method="auto"):
        super().__init__()
        if method not in ("auto", "fft", "dft"):
            raise ValueError(f'method must be "auto", "fft" or "dft", got {method!r}')
        self.in_channels, self.out_channels, self.modes, self.method = in_channels, out_channels, modes, method
        scale = 1 / (in_channels * out_channels)
        self.weight_re = nn.Parameter(scale * rtx.rand(in_channels, out_channels, modes))
        self.weight_im = nn.Parameter(scale * rtx.rand(in_channels, out_channels, modes))

    def forward(self, x):
        return self.forward_channels_last(x.transpose(-1, -2)).transpose(-1, -2)

    def forward_channels_last(self, x):
        """The same map on (B, N, in) -> (B, N, out): FNO1d keeps its hidden state this way, so the
        1x1 convolutions are single 2-D GEMMs and no layer transposes its input."""
        n, m = x.shape[-2], self.modes
        if m > n // 2 + 1:
            raise ValueError(f"SpectralConv1d keeps {m} modes but a grid of {n} points has {n // 2 + 1}")
        if self.method == "fft" or (self.method == "auto" and m > 64):
            x_ft = rtx.fft.rfft(x, dim=-2)[..., :m, :]
            out = rtx.einsum("bxi,iox->bxo", x_ft, _complex(self.weight_re, self.weight_im))
            return rtx.fft.irfft(out, n=n, dim=-2)  # irfft zero-fills the modes above `modes`
        fwd_t, inv_t = _dft_bases(n, m, x.dtype, x.device)
        lead, c, o = x.shape[:-2], self.in_channels, self.out_channels
        b = int(np.prod(lead))
        z = fwd_t @ x                                         # (..., 2m, c): [Re X_k; Im X_k] rows
        # per mode k, each sample's real row [re_1..re_c, im_1..im_c]: (m, b, 2c)
        z = z.reshape(b, 2, m, c).permute(2, 0, 1, 3).reshape(m, b, 2 * c)
        # (re + i im)(wr + i wi) = (re wr - im wi) + i (re wi + im wr): one real (2c, 2o) block per
        # mode, so the mixing is one batched matmul instead of four complex-free einsums
        wr, wi = self.weight_re.permute(2, 0, 1), self.weight_im.permute(2, 0, 1)   # (m, c, o)
        w = rtx.cat([rtx.cat([wr, wi], dim=2), rtx.cat([-wi, wr], dim=2)], dim=1)    # (m, 2c, 2o)
        y = (z @ w).reshape(m, b, 2, o).permute(1, 2, 0, 3).reshape(*lead, 2 * m, o)
        return inv_t @ y                                      # (..., n, o)


class SpectralConv2d(nn.Module):
    """(B, in, H, W) -> (B, out, H, W) keeping modes1 x modes2 of the lowest frequencies (both signs
    of the first axis, as the rfft2 half-plane requires)."""

    def __init__(self, in_channels, out_channels, modes1, modes2):
        super().__init__()
        self.modes1, self.modes2, self.out_channels = modes1, modes2, out_channels
        scale = 1 / (in_channels * out_channels)
        shape = (2, in_channels, out_channels, modes1, modes2)  # [low rows, high rows]
        self.weight_re = nn.Parameter(scale * rtx.rand(*shape))
        self.weight_im = nn.Parameter(scale * rtx.rand(*shape))

    def forward(self, x):
        h, w = x.shape[-2], x.shape[-1]
        m1, m2 = self.modes1, self.modes2
        if 2 * m1 > h or m2 > w // 2 + 1:
            raise ValueError(f"SpectralConv2d modes ({m1}, {m2}) do not fit a {h}x{w} grid")
        x_ft = rtx.fft.rfft2(x)
        wt = _complex(self.weight_re, self.weight_im)
        low = rtx.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2], wt[0])
        high = rtx.einsum("bixy,ioxy->boxy", x_ft[:, :, h - m1:, :m2], wt[1])
        zeros = rtx.zeros(x.shape[0], self.out_channels, h - 2 * m1, m2, dtype=low.dtype)
        cols = rtx.cat([low, zeros, high], dim=2)
        pad = rtx.zeros(x.shape[0], self.out_channels, h, w // 2 + 1 - m2, dtype=low.dtype)
        return rtx.fft.irfft2(rtx.cat([cols, pad], dim=3), s=(h, w))


def _pointwise(conv, h):
    """A kernel-size-1 Conv1d (its weight and bias, so state_dicts keep Conv1d's keys) on channels-last
    h (B, N, in): the Linear it is, one GEMM over all B*N points."""
    b, n, c = h.shape
    return F.linear(h.reshape(b * n, c), conv.weight.squeeze(-1), conv.bias).reshape(b, n, -1)


class FNO1d(nn.Module):
    """Input (B, N, in_channels) sampled on a uniform grid of [0, 1] (the grid coordinate is appended
    as an extra channel); output (B, N, out_channels). Lift, `layers` x (spectral conv + 1x1 conv,
    GELU), project: Li et al.'s architecture."""

    def __init__(self, modes=16, width=64, in_channels=1, out_channels=1, layers=4, hidden=128):
        super().__init__()
        self.lift = nn.Linear(in_channels + 1, width)
        self.spectral = nn.ModuleList([SpectralConv1d(width, width, modes) for _ in range(layers)])
        self.pointwise = nn.ModuleList([nn.Conv1d(width, width, 1) for _ in range(layers)])
        self.proj1, self.proj2 = nn.Linear(width, hidden), nn.Linear(hidden, out_channels)

    def forward(self, x):
        b, n = x.shape[0], x.shape[1]
        grid = rtx.linspace(0, 1, n, dtype=x.dtype).reshape(1, n, 1).expand(b, n, 1)
        h = self.lift(rtx.cat([x, grid], dim=-1))            # (B, N, width): channels last throughout
        for i, (sc, pw) in enumerate(zip(self.spectral, self.pointwise)):
            h = sc.forward_channels_last(h) + _pointwise(pw, h)
            if i < len(self.spectral) - 1:
                h = F.gelu(h)
        return self.proj2(F.gelu(self.proj1(h)))


class FNO2d(nn.Module):
    """Input (B, H, W, in_channels) on [0, 1]^2 (both coordinates appended); output (B, H, W, out)."""

    def __init__(self, modes1=12, modes2=12, width=32, in_channels=1, out_channels=1, layers=4, hidden=128):
        super().__init__()
        self.lift = nn.Linear(in_channels + 2, width)
        self.spectral = nn.ModuleList([SpectralConv2d(width, width, modes1, modes2) for _ in range(layers)])
        self.pointwise = nn.ModuleList([nn.Conv2d(width, width, 1) for _ in range(layers)])
        self.proj1, self.proj2 = nn.Linear(width, hidden), nn.Linear(hidden, out_channels)

    def forward(self, x):
        b, h, w = x.shape[:3]
        gx = rtx.linspace(0, 1, h, dtype=x.dtype).reshape(1, h, 1, 1).expand(b, h, w, 1)
        gy = rtx.linspace(0, 1, w, dtype=x.dtype).reshape(1, 1, w, 1).expand(b, h, w, 1)
        z = self.lift(rtx.cat([x, gx, gy], dim=-1)).permute(0, 3, 1, 2)
        for i, (sc, pw) in enumerate(zip(self.spectral, self.pointwise)):
            z = sc(z) + pw(z)
            if i < len(self.spectral) - 1:
                z = F.gelu(z)
        return self.proj2(F.gelu(self.proj1(z.permute(0, 2, 3, 1))))


def relative_l2(pred, target):
    """Mean over the batch of ||pred - target|| / ||target|| (the FNO paper's metric and loss)."""
    b = pred.shape[0]
    diff = (pred - target).reshape(b, -1)
    ref = target.reshape(b, -1)
    return ((diff ** 2).sum(1).sqrt() / (ref ** 2).sum(1).sqrt()).mean()


