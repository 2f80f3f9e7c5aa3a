"""rtx.science against torchdiffeq 0.2.5 / torch (issue 18).

    python tools/bench/science.py --torch-python /work/torch-venv/bin/python

- node_dopri5_forward: odeint (dopri5, rtol 1e-5, atol 1e-7) of a 64-dim neural ODE, f = MLP 64-128-64
  (tanh), batch 16, over t in [0, 10], float32, no grad.
- node_dopri5_adjoint: the same solve with odeint_adjoint, forward + backward (adjoint sensitivities).
- fno1d_train_step: FNO1d (4 layers, width 64, 16 modes) on batch 20 x 1024 points: forward,
  relative-L2 loss, backward, Adam step. torch side: the neuraloperator-style layer (complex weights,
  rfft / einsum / irfft), the same architecture.

Both libraries get the same weights (drawn with NumPy), so the adaptive solvers take the same steps;
the number of function evaluations is checked equal. Goal: rtx/torch <= 1.5 on each. BLAS and torch
run on one thread (the machine is shared). On a loaded machine add `--rounds 3` (alternating rtx and
torch processes, the minimum of each kept; see _harness) and `--clock cpu` (process CPU time)."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from _harness import best_of, main  # noqa: E402

DIM, HIDDEN, BATCH, T_END = 64, 128, 16, 10.0
TOL = dict(rtol=1e-5, atol=1e-7)


def _best(fn):
    """Seconds per call (the harness's best_of: wall, or process CPU time with --clock cpu)."""
    return best_of(fn, repeat=5, min_time=0.5)


def _solvers(lib):
    if lib.__name__ == "torch":
        lib.set_num_threads(1)
        from torchdiffeq import odeint, odeint_adjoint
    else:
        from rtx.science import odeint, odeint_adjoint
    return odeint, odeint_adjoint


def _mlp(lib):
    rng = np.random.default_rng(0)
    net = lib.nn.Sequential(lib.nn.Linear(DIM, HIDDEN), lib.nn.Tanh(), lib.nn.Linear(HIDDEN, DIM))
    with lib.no_grad():
        for m in (net[0], net[2]):  # Glorot-scaled weights shared by both libraries
            bound = 1.5 / np.sqrt(m.weight.shape[1])
            m.weight.copy_(lib.tensor(rng.uniform(-bound, bound, tuple(m.weight.shape)).astype(np.float32)))
            m.bias.copy_(lib.tensor(rng.uniform(-0.1, 0.1, tuple(m.bias.shape)).astype(np.float32)))
    return net


def _ode_problem(lib):
    class F(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.net, self.nfe = _mlp(lib), 0

        def forward(self, t, y):
            self.nfe += 1
            return self.net(y)
    y0 = lib.tensor(np.random.default_rng(1).normal(size=(BATCH, DIM)).astype(np.float32))
    return F(), y0, lib.tensor(np.array([0.0, T_END], dtype=np.float32))


def node_dopri5_forward(lib):
    odeint, _ = _solvers(lib)
    f, y0, t = _ode_problem(lib)

    def run():
        with lib.no_grad():
            return odeint(f, y0, t, method="dopri5", **TOL)
    run()
    f.nfe = 0
    run()
    print(f"[{lib.__name__}] node_dopri5_forward: {f.nfe} function evaluations", file=sys.stderr)
    return _best(run)


def node_dopri5_adjoint(lib):
    _, odeint_adjoint = _solvers(lib)
    f, y0, t = _ode_problem(lib)
    params = tuple(f.parameters())

    def run():
        y0.requires_grad_(True)
        out = odeint_adjoint(f, y0, t, method="dopri5", adjoint_params=params, **TOL)
        out[-1].pow(2).sum().backward()
        for p in params:
            p.grad = None
        y0.grad = None
    run()
    f.nfe = 0
    run()
    print(f"[{lib.__name__}] node_dopri5_adjoint: {f.nfe} function evaluations (forward + adjoint)",
          file=sys.stderr)
    return _best(run)


def _torch_fno(torch, modes, width, layers=4):
    """neuraloperator-style FNO1d (Li et al.'s fourier_1d.py): complex weights, rfft/einsum/irfft."""
    nn, F = torch.nn, torch.nn.functional

    class SpectralConv1d(nn.Module):
        def __init__(self):
            super().__init__()
            scale = 1 / (width * width)
            self.weights = nn.Parameter(scale * torch.rand(width, width, modes, dtype=torch.cfloat))

        def forward(self, x):
            x_ft = torch.fft.rfft(x)
            out = torch.zeros(x.shape[0], width, x.shape[-1] // 2 + 1, dtype=torch.cfloat)
            out[:, :, :modes] = torch.einsum("bix,iox->box", x_ft[:, :, :modes], self.weights)
            return torch.fft.irfft(out, n=x.shape[-1])

    class FNO1d(nn.Module):
        def __init__(self):
            super().__init__()
            self.lift = nn.Linear(2, width)
            self.spectral = nn.ModuleList([SpectralConv1d() for _ in range(layers)])
            self.pointwise = nn.ModuleList([nn.Conv1d(width, width, 1) for _ in range(layers)])
            self.proj1, self.proj2 = nn.Linear(width, 128), nn.Linear(128, 1)

        def forward(self, x):
            b, n = x.shape[0], x.shape[1]
            grid = torch.linspace(0, 1, n).reshape(1, n, 1).expand(b, n, 1)
            h = self.lift(torch.cat([x, grid], dim=-1)).permute(0, 2, 1)
            for i, (sc, pw) in enumerate(zip(self.spectral, self.pointwise)):
                h = sc(h) + pw(h)
                if i < layers - 1:
                    h = F.gelu(h)
            return self.proj2(F.gelu(self.proj1(h.permute(0, 2, 1))))
    return FNO1d()


def fno1d_train_step(lib):
    if lib.__name__ == "torch":
        lib.set_num_threads(1)
        model = _torch_fno(lib, modes=16, width=64)
    else:
        from rtx.science.operators import FNO1d
        model = FNO1d(modes=16, width=64, layers=4)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.normal(size=(20, 1024, 1)).astype(np.float32))
    y = lib.tensor(rng.normal(size=(20, 1024, 1)).astype(np.float32))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        pred = model(x)
        diff, ref = (pred - y).reshape(20, -1), y.reshape(20, -1)
        loss = (diff.pow(2).sum(1).sqrt() / ref.pow(2).sum(1).sqrt()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return _best(step)


WORKLOADS = {"node_dopri5_forward": node_dopri5_forward, "node_dopri5_adjoint": node_dopri5_adjoint,
             "fno1d_train_step": fno1d_train_step}


if __name__ == "__main__":
    main(WORKLOADS, __doc__)
