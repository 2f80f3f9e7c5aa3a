"""python -m rtx.science.examples {poisson,fno_burgers} [--full]: run a worked problem, print its error."""
import argparse
import time

from rtx.science.examples import fno_burgers, poisson

SHORT = {"poisson": dict(adam_steps=200, lbfgs_steps=250, n_interior=256),
         "fno_burgers": dict(n_train=96, n_test=32, n=64, nu=0.05, epochs=60, batch=16, modes=12, width=24,
                             layers=3, lr=3e-3)}
FULL = {"poisson": {}, "fno_burgers": {}}

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("problem", choices=sorted(SHORT))
p.add_argument("--full", action="store_true", help="the full budget (minutes to hours on a CPU)")
a = p.parse_args()
fn = {"poisson": poisson, "fno_burgers": fno_burgers}[a.problem]
t0 = time.time()
err = fn(**(FULL if a.full else SHORT)[a.problem])
print(f"{a.problem}: relative L2 error {err:.3e} in {time.time() - t0:.1f} s")
