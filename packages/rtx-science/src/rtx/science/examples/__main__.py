"""python -m rtx.science.examples PROBLEM [--full] [--png PATH]: run a worked problem, print its error
(relative L2 against the reference; for `pendulum` the relative energy drift) and optionally draw it."""
import argparse
import time

import numpy as np

from rtx.science.examples import burgers, fno_burgers, heat, pendulum, plots, poisson, spiral

# The short budgets are the ones the test suite runs; --full is the budget behind the README's figures.
SHORT = {"poisson": dict(adam_steps=200, lbfgs_steps=250, n_interior=256),
         "heat": dict(adam_steps=100, lbfgs_steps=200, n_interior=128),
         "burgers": dict(adam_steps=50, lbfgs_steps=150, n_interior=400, rar_rounds=0),
         "fno_burgers": dict(n_train=96, n_test=32, n=64, nu=0.05, epochs=60, batch=16, modes=12, width=24,
                             layers=3, lr=3e-3),
         "spiral": dict(iters=150),
         "pendulum": dict(iters=600)}
FULL = {"poisson": {}, "heat": {}, "burgers": {},
        "fno_burgers": dict(epochs=40), "spiral": dict(iters=500), "pendulum": dict(iters=1500)}
FNS = {"poisson": poisson, "heat": heat, "burgers": burgers, "fno_burgers": fno_burgers, "spiral": spiral,
       "pendulum": pendulum}


def _draw(problem, err, data, path):
    if problem in ("heat", "burgers"):
        import rtx
        from rtx.science.examples.burgers import evaluation_grid, reference_grid
        from rtx.science.examples.heat import heat_reference
        net = data
        if problem == "burgers":
            X, T = evaluation_grid()
            ref = reference_grid()
        else:
            X, T = np.meshgrid(np.linspace(0, 1, 101), np.linspace(0, 1, 101))
            ref = heat_reference(X, T)
        with rtx.no_grad():
            u = net(rtx.tensor(np.stack([X.ravel(), T.ravel()], 1), dtype=rtx.float64)).numpy().reshape(X.shape)
        plots.plot_field(X, T, u, ref, path, f"PINN {problem}: relative L2 {err:.2e}")
    elif problem == "poisson":
        X, Y, u, exact = data
        plots.plot_field(X, Y, u, exact, path, f"PINN Poisson (vertical axis: y): relative L2 {err:.2e}")
    elif problem == "fno_burgers":
        plots.plot_fno(*data, path, err)
    elif problem == "spiral":
        plots.plot_spiral(data, path, err)
    else:
        plots.plot_energy(data[0], data[3], path, err)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("problem", choices=sorted(SHORT))
    p.add_argument("--full", action="store_true", help="the full budget (minutes to hours on a CPU)")
    p.add_argument("--png", metavar="PATH", help="write a PNG figure of the result (needs matplotlib)")
    a = p.parse_args(argv)
    kwargs = dict((FULL if a.full else SHORT)[a.problem])
    log = lambda rec: print(rec, flush=True)  # noqa: E731
    t0 = time.time()
    out = FNS[a.problem](**kwargs, log=log, return_model=bool(a.png))
    err, data = out if a.png else (out, None)
    what = "relative energy drift" if a.problem == "pendulum" else "relative L2 error"
    print(f"{a.problem}{' --full' if a.full else ''}: {what} {err:.3e} in {time.time() - t0:.1f} s")
    if a.png:
        _draw(a.problem, err, data, a.png)
        print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
