"""Digits (scikit-learn's 8x8 images, from OUT/digits.npz) with an MLP: `digits.py OUT ddp` under 2 ranks (DDP +
DistributedSampler, 32 samples per rank per step) or `digits.py OUT single` in one process
(64 per step, the same order). Writes the test accuracy and the loss curve to OUT."""
import json
import sys

import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.data import DataLoader, TensorDataset
from rtx.distributed import DistributedSampler

out_dir, mode = sys.argv[1], sys.argv[2]
data = np.load(f"{out_dir}/digits.npz")  # sklearn's load_digits, shuffled, written by the test
X, Y = data["x"], data["y"]
train = TensorDataset(rtx.from_numpy(X[:1280]), rtx.from_numpy(Y[:1280]))
x_test, y_test = rtx.from_numpy(X[1280:]), rtx.from_numpy(Y[1280:])
GLOBAL_BATCH, EPOCHS = 64, 8

rtx.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
if mode == "ddp":
    import rtx.distributed as dist
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    net = dist.DistributedDataParallel(model)
    sampler = DistributedSampler(train, shuffle=True, seed=0)
else:
    rank, world = 0, 1
    net = model
    sampler = DistributedSampler(train, num_replicas=1, rank=0, shuffle=True, seed=0)
loader = DataLoader(train, batch_size=GLOBAL_BATCH // world, sampler=sampler)
opt = rtx.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
losses = []
for epoch in range(EPOCHS):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
with rtx.no_grad():
    correct = int((model(x_test).argmax(1) == y_test).sum())
if rank == 0:
    with open(f"{out_dir}/{mode}.json", "w") as f:
        json.dump({"accuracy": correct / len(y_test), "losses": losses, "steps": len(losses)}, f)
