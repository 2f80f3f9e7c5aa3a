"""FNO1d learns the Burgers solution operator u(., 0) -> u(., 1) on data from burgers_1d."""
import numpy as np

import rtx
import rtx.optim as optim
from rtx.science.operators import FNO1d, burgers_1d, grf_1d, relative_l2


def fno_burgers(n_train=1000, n_test=200, n=1024, nu=0.1, epochs=500, batch=20, modes=16, width=64, layers=4,
                lr=1e-3, seed=0, log=None, return_model=False):
    """Returns the test relative L2 error. The defaults are Li et al.'s 1D Burgers setting."""
    u0 = grf_1d(n_train + n_test, n, seed=seed)
    # RK4 on the advection term is stable for dt |u| k_max < 2.8 with k_max = 2 pi n / 3 (dealiased) and
    # |u| < ~1.2 here, i.e. dt < ~1.1 / n; at n = 1024, dt = 1e-3 matches dt = 2e-4 to 6e-11.
    uT = burgers_1d(u0, nu=nu, dt=min(1e-3, 1.0 / n))
    x = rtx.tensor(u0[..., None], dtype=rtx.float32)
    y = rtx.tensor(uT[..., None], dtype=rtx.float32)
    rtx.manual_seed(seed)
    model = FNO1d(modes=modes, width=width, layers=layers)
    opt = optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = optim.lr_scheduler.StepLR(opt, step_size=max(1, epochs // 5), gamma=0.5)
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        perm = rng.permutation(n_train)
        for i in range(0, n_train, batch):
            idx = rtx.tensor(perm[i:i + batch])
            loss = relative_l2(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        if log is not None:
            log({"epoch": epoch, "train": float(loss)})
    with rtx.no_grad():
        pred = model(x[n_train:])
        err = float(relative_l2(pred, y[n_train:]))
    if return_model:
        return err, (np.arange(n) / n, u0[n_train:], uT[n_train:], pred.numpy()[..., 0])
    return err
