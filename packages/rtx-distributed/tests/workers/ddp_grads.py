"""DDP gradients on 2 ranks, float64: plain step, no_sync accumulation, gradient_as_bucket_view,
find_unused_parameters, the unfinished-reduction error, broadcast_buffers. Writes rank{r}.npz into argv[1]."""
import sys

import numpy as np

import rtx
import rtx.distributed as dist
import rtx.nn as nn
import rtx.nn.functional as F

out_dir = sys.argv[1]
dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
rtx.set_default_dtype(rtx.float64)
data = np.load(f"{out_dir}/data.npz")
X, Y = rtx.from_numpy(data["x"]), rtx.from_numpy(data["y"])
per = X.shape[0] // world
x, y = X[rank * per:(rank + 1) * per], Y[rank * per:(rank + 1) * per]
res = {}


def make_mlp():
    rtx.manual_seed(rank)  # different on each rank: DDP must broadcast rank 0's
    return nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 32), nn.Tanh(),
                         nn.Linear(32, 4))


def grads(module):
    return [p.grad.numpy().copy() for p in module.parameters()]


# 1. one backward; buckets of ~4 KB so that several all-reduces overlap with backward
model = make_mlp()
ddp = dist.DistributedDataParallel(model, bucket_cap_mb=4096 / 2**20)
res["init"] = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
F.cross_entropy(ddp(x), y).backward()
res["plain"] = np.concatenate([g.ravel() for g in grads(model)])
res["buckets"] = np.array(len(ddp.reducer.buckets))
res["launch_log"] = np.array(ddp.reducer.launch_log)
res["n_params"] = np.array(len(list(model.parameters())))

# 2. no_sync: two micro-batches, the first without communication
model.zero_grad()
half = per // 2
with ddp.no_sync():
    F.cross_entropy(ddp(x[:half]), y[:half]).backward()
    res["no_sync_local"] = np.concatenate([g.ravel() for g in grads(model)])
F.cross_entropy(ddp(x[half:]), y[half:]).backward()
res["no_sync"] = np.concatenate([g.ravel() for g in grads(model)])

# 3. gradient_as_bucket_view: same numbers, .grad are views into the buckets
model3 = make_mlp()
ddp3 = dist.DistributedDataParallel(model3, bucket_cap_mb=4096 / 2**20, gradient_as_bucket_view=True)
for _ in range(2):
    model3.zero_grad(set_to_none=False)
    F.cross_entropy(ddp3(x), y).backward()
res["as_view"] = np.concatenate([g.ravel() for g in grads(model3)])
res["as_view_is_view"] = np.array(all(p.grad._data.base is not None for p in model3.parameters()))


# 4. find_unused_parameters: head b used on rank 1 only, head c never
class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.a = nn.Linear(16, 4)
        self.b = nn.Linear(16, 4)
        self.c = nn.Linear(16, 4)

    def forward(self, x):
        h = self.body(x).tanh()
        out = self.a(h)
        if rank == 1:
            out = out + self.b(h)
        return out


heads = Heads()
ddp4 = dist.DistributedDataParallel(heads, find_unused_parameters=True)
F.cross_entropy(ddp4(x), y).backward()
for name, p in heads.named_parameters():
    res[f"unused/{name}"] = p.grad.numpy().copy() if p.grad is not None else np.array(np.nan)
# the same model without DDP, on this rank's data: the reference for the averages
ref = Heads()
ref.load_state_dict(heads.state_dict())
F.cross_entropy(ref(x), y).backward()
for name, p in ref.named_parameters():
    res[f"local/{name}"] = p.grad.numpy().copy() if p.grad is not None else np.array(np.nan)

# 5. an unused parameter without find_unused_parameters: the next forward says so
heads5 = Heads()
ddp5 = dist.DistributedDataParallel(heads5)
F.cross_entropy(ddp5(x), y).backward()
try:
    ddp5(x)
    res["unfinished_error"] = np.array("")
except RuntimeError as e:
    res["unfinished_error"] = np.array(str(e))

# 6. broadcast_buffers: BatchNorm statistics come from rank 0 before every forward
bn_model = nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6))
bn_model[1].running_var.fill_(1.0 + rank)  # differs: the construction must sync it
ddp6 = dist.DistributedDataParallel(bn_model)
res["bn_var_after_init"] = bn_model[1].running_var.numpy().copy()
ddp6(x)  # each rank updates its statistics from its own half of the batch
res["bn_mean_after_train"] = bn_model[1].running_mean.numpy().copy()
ddp6.eval()
with rtx.no_grad():
    ddp6(x)  # rank 0's statistics are broadcast first; eval mode does not change them
res["bn_mean_after_eval"] = bn_model[1].running_mean.numpy().copy()

np.savez(f"{out_dir}/rank{rank}.npz", **res)
