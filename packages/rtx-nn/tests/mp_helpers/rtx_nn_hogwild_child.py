"""The worker of test_share_memory.py's Hogwild run: plain SGD on its shard of the training set,
writing straight into the model's shared parameters (no locks, as PyTorch's Hogwild example)."""
import rtx
import rtx.nn.functional as F


def train(rank, model, x, y, epochs, lr, seed):
    rtx.manual_seed(seed + rank)
    opt = rtx.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    shard = rtx.arange(rank, x.shape[0], 2)  # this worker's half of the rows
    xs, ys = x[shard], y[shard]
    for _ in range(epochs):
        perm = rtx.randperm(xs.shape[0])
        for i in range(0, xs.shape[0], 32):
            idx = perm[i:i + 32]
            opt.zero_grad()
            F.cross_entropy(model(xs[idx]), ys[idx]).backward()
            opt.step()
