"""PNG figures for the worked problems (matplotlib's Agg backend, imported only when plotting:
pip install 'rtx-science[plot]')."""
import numpy as np


def _plt():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("the figures need matplotlib: pip install 'rtx-science[plot]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    fig.clf()


def plot_spiral(data, path, err):
    fine, pred, ref, t, ys = data
    plt = _plt()
    fig, ax = plt.subplots(1, 1, figsize=(4.5, 4.5))
    ax.plot(ref[:, 0], ref[:, 1], "k-", lw=1, label="exp(At) y0")
    ax.plot(ys[:, 0], ys[:, 1], "ko", ms=3, label="training points")
    ax.plot(pred[:, 0], pred[:, 1], "r--", lw=1.5, label="neural ODE")
    ax.set_title(f"neural ODE spiral fit (rel. L2 {err:.1e})")
    ax.set_aspect("equal")
    ax.legend(fontsize=8)
    _save(fig, path)


def plot_field(X, T, pred, ref, path, title, slices=(0.25, 0.5, 0.75)):
    """PINN solution u(x, t) vs its reference: heat maps of both and of the error, plus time slices."""
    plt = _plt()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    ext = [X.min(), X.max(), T.min(), T.max()]
    for ax, field, name in ((axes[0], pred, "PINN"), (axes[1], ref, "reference")):
        im = ax.imshow(field, origin="lower", extent=ext, aspect="auto", cmap="RdBu_r")
        ax.set(title=name, xlabel="x", ylabel="t")
        fig.colorbar(im, ax=ax)
    im = axes[2].imshow(np.abs(pred - ref), origin="lower", extent=ext, aspect="auto", cmap="viridis")
    axes[2].set(title="|PINN - reference|", xlabel="x", ylabel="t")
    fig.colorbar(im, ax=axes[2])
    x = X[0]
    for s in slices:
        i = int(np.argmin(np.abs(T[:, 0] - s)))
        axes[3].plot(x, ref[i], "k-", lw=1)
        axes[3].plot(x, pred[i], "--", lw=1.5, label=f"t = {T[i, 0]:.2f}")
    axes[3].set(title="slices (black: reference)", xlabel="x", ylabel="u")
    axes[3].legend(fontsize=8)
    fig.suptitle(title)
    _save(fig, path)


def plot_fno(grid, u0, truth, pred, path, err, k=3):
    plt = _plt()
    fig, axes = plt.subplots(1, k, figsize=(4.5 * k, 3.4))
    for i, ax in enumerate(np.atleast_1d(axes)):
        # u(x, 0) on its own axis: with nu = 0.1 the state at t = 1 is a few % of it
        ax0 = ax.twinx()
        ax0.plot(grid, u0[i], color="0.75", lw=1)
        ax0.set_ylabel("u(x, 0) (grey)", color="0.5")
        ax.plot(grid, truth[i], "k-", lw=1, label="u(x, 1) spectral solver")
        ax.plot(grid, pred[i], "r--", lw=1.5, label="FNO1d")
        ax.set(xlabel="x", title=f"test sample {i}")
        ax.set_zorder(ax0.get_zorder() + 1)
        ax.patch.set_visible(False)
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle(f"FNO1d on Burgers, test relative L2 {err:.2e}")
    _save(fig, path)


def plot_energy(t, E, path, drift):
    plt = _plt()
    fig, ax = plt.subplots(1, 1, figsize=(6, 3.4))
    ax.plot(t, (E - E[0]) / E[0], lw=1)
    ax.axhline(0.01, color="r", lw=0.8, ls=":")
    ax.axhline(-0.01, color="r", lw=0.8, ls=":")
    ax.set(xlabel="t", ylabel="(E(t) - E(0)) / E(0)",
           title=f"HNN + leapfrog: true pendulum energy (max drift {drift:.1e})")
    _save(fig, path)
