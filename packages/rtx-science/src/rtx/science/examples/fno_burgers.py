"""FNO1d learns the Burgers solution operator u(., 0) -> u(., 1) on data from burgers_1d."""
import numpy as np

import rtx
import rtx.optim as optim
from rtx.science.operators import FNO1d, burgers_1d, grf_1d, relative_l2


def fno_burgers(n_train=1000, n_test=200, n=1024, nu=0.1, epochs=500, batch=20, modes=16, width=64, layers=4,
                lr=1e-3, seed=0, log=None, return_model=False):
    """Returns the test relative L2 error. The defaults are Li et al.'s 1D Burgers setting, except the
    schedule: cosine annealing over `epochs` (Li et al. halve the rate every 100 of 500 epochs)."""
    u0 = grf_1d(n_train + n_test, n, seed=seed)
    # RK4 on the advection term is stable for dt |u| k_max < 2.8 with k_max = 2 pi n / 3 (dealiased) and
    # |u| < ~1.2 here, i.e. dt < ~1.1 / n; at n = 1024, dt = 1e-3 matches dt = 2e-4 to 6e-11.
    uT = burgers_1d(u0, nu=nu, dt=min(1e-3, 1.0 / n))
    # With nu = 0.1, u(., 1) keeps ~2% of u(., 0) (all but the first mode are gone), so the raw targets are
    # ~60x smaller than the inputs and than the projection's first outputs: Adam's steps (about lr per weight
    # whatever the gradient's scale) then moved the output by about a whole target per step, and the loss
    # swung by 10x between epochs. Inputs and targets are divided by their RMS over the training set (a
    # normalizer fitted on training data only, as neuraloperator's); relative_l2 is unchanged by the scale.
    sx, sy = np.sqrt(np.mean(u0[:n_train] ** 2)), np.sqrt(np.mean(uT[:n_train] ** 2))
    x = rtx.tensor(u0[..., None] / sx, dtype=rtx.float32)
    y = rtx.tensor(uT[..., None] / sy, dtype=rtx.float32)
    rtx.manual_seed(seed)
    model = FNO1d(modes=modes, width=width, layers=layers)
    opt = optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        train_loss = train_epoch(model, opt, x, y, n_train, batch, rng)
        sched.step()
        if log is not None:
            log({"epoch": epoch, "train": train_loss})
    with rtx.no_grad():
        pred = model(x[n_train:])
        err = float(relative_l2(pred, y[n_train:]))
    if return_model:
        return err, (np.arange(n) / n, u0[n_train:], uT[n_train:], sy * pred.numpy()[..., 0])
    return err


def train_epoch(model, opt, x, y, n_train, batch, rng):
    """One epoch of minibatch Adam on the relative L2 loss over the first n_train samples, in an order drawn
    from rng; the epoch's mean loss."""
    perm, losses = rng.permutation(n_train), []
    for i in range(0, n_train, batch):
        idx = rtx.tensor(perm[i:i + batch])
        loss = relative_l2(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return float(np.mean(losses))
