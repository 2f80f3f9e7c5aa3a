"""Flow2D (sampling, vorticity, streamfunction, VTK, PNG) and the `rtx cfd` command."""
import numpy as np

import rtx
from rtx.cfd import Flow2D, Grid, NavierStokes2D, Periodic, Wall


def _rotation_flow(n=16, periodic=(False, False)):
    # Solid-body rotation about (0.5, 0.5): u = -(y - 1/2), v = x - 1/2; vorticity 2.
    x = (np.arange(n) + 0.5) / n
    X, Y = np.meshgrid(x, x)
    t = lambda a: rtx.tensor(a, dtype=rtx.float64)  # noqa: E731
    return Flow2D(x, x, t(-(Y - 0.5)), t(X - 0.5), t(np.zeros_like(X)), 0.0, periodic=periodic)


def test_sample_is_exact_for_linear_fields_and_differentiable():
    f = _rotation_flow()
    pts = np.random.default_rng(0).uniform(0.05, 0.95, size=(20, 2))
    s = f.sample(pts)
    assert tuple(s.shape) == (20, 2)
    np.testing.assert_allclose(s.numpy(), np.stack([-(pts[:, 1] - 0.5), pts[:, 0] - 0.5], 1), atol=1e-14)
    u = rtx.tensor(f.u.numpy(), requires_grad=True)
    g = Flow2D(f.x, f.y, u, f.v, f.p)
    g.sample(pts)[:, 0].sum().backward()
    np.testing.assert_allclose(u.grad.numpy().sum(), 20.0)  # bilinear weights sum to one per point


def test_vorticity_and_streamfunction():
    f = _rotation_flow(32)
    np.testing.assert_allclose(f.vorticity().numpy(), 2.0, atol=1e-12)
    psi = f.streamfunction().numpy()
    # lap psi = -2 with psi = 0 on the walls: positive inside (maximum principle), symmetric, largest
    # in the middle
    np.testing.assert_allclose(psi, psi.T, atol=1e-12)
    assert psi.min() > 0 and psi[15:17, 15:17].max() == psi.max()
    # a periodic field: psi = sin x sin y has u = sin x cos y, v = -cos x sin y
    n = 32
    x = np.arange(n) * 2 * np.pi / n
    t = lambda a: rtx.tensor(a, dtype=rtx.float64)  # noqa: E731
    U = np.sin(x)[None, :] * np.cos(x)[:, None]
    V = -np.cos(x)[None, :] * np.sin(x)[:, None]
    g = Flow2D(x, x, t(U), t(V), t(U * 0), lx=2 * np.pi, ly=2 * np.pi, periodic=(True, True))
    w_exact = 2 * np.sin(x)[None, :] * np.sin(x)[:, None]
    assert np.abs(g.vorticity().numpy() - w_exact).max() < 0.02  # central differences, h = 0.2
    psi = g.streamfunction().numpy()
    assert np.abs(psi - np.sin(x)[None, :] * np.sin(x)[:, None]).max() < 5e-3  # second order, h = 0.2


def test_mac_flow_samples_walls_exactly():
    s = NavierStokes2D(Grid(8, 8), 0.1, {"top": Wall(1.0), "left": Periodic(), "right": Periodic()})
    with rtx.no_grad():
        st = s.run(steps=5, dt=0.01)
    f = s.to_flow(st)
    top = f.sample(np.array([[0.3, 1.0], [0.7, 1.0]])).numpy()
    bottom = f.sample(np.array([[0.3, 0.0]])).numpy()
    np.testing.assert_allclose(top[:, 0], 1.0, atol=1e-14)
    np.testing.assert_allclose(bottom, 0.0, atol=1e-14)


def test_vtk_and_png(tmp_path):
    f = _rotation_flow(8)
    path = f.to_vtk(tmp_path / "f.vtk")
    lines = open(path).read().splitlines()
    assert lines[0].startswith("# vtk DataFile") and "DIMENSIONS 8 8 1" in lines
    i = lines.index("VECTORS velocity double")
    vec = np.loadtxt(lines[i + 1:i + 65])
    np.testing.assert_allclose(vec[:, 0], f.u.numpy().ravel())
    png = f.plot(tmp_path / "f.png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_cli_cavity_prints_ghia_table(tmp_path, capsys):
    from rtx.cfd.cli import cfd_command
    out = tmp_path / "c.png"
    assert cfd_command(["cavity", "--re", "100", "--n", "17", "--tol", "1e-3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "u Ghia" in text and "0.84123" in text and "max deviation from Ghia" in text
    assert out.exists()
    assert cfd_command([]) == 2


def test_cli_lbm_cavity_and_cylinder(capsys):
    from rtx.cfd.cli import cfd_command
    assert cfd_command(["lbm-cavity", "--n", "9", "--max-steps", "300", "--dtype", "float32"]) == 0
    text = capsys.readouterr().out
    assert "LBM cavity Re=100 n=9" in text and "0.84123" in text and "max deviation from Ghia" in text
    assert cfd_command(["cylinder", "--cells-per-d", "4", "--length", "6", "--height", "3", "--t-end", "1"]) == 0
    text = capsys.readouterr().out
    assert "cylinder Re=100, 24x12 cells" in text and "Strouhal number" in text
