"""The inverse-problem example: an inflow profile recovered from sparse observations by gradients
through the solver (a short budget here; `python -m rtx.cfd.examples.inverse_inflow` runs the full one)."""
from rtx.cfd.examples.inverse_inflow import fit


def test_inflow_profile_recovered_within_2_percent():
    err, rec, truth = fit(iters=40, nx=16, ny=8, n_obs=40, steps=20, verbose=False)
    assert err < 0.02, err
