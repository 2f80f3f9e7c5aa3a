"""ZeRO-1 (Adam) under DDP on 2 ranks, float64, and checkpoint/resume.
`zero_ckpt.py OUT full`: 6 steps; after step 3, consolidate and save a checkpoint.
`zero_ckpt.py OUT resume`: load that checkpoint and run steps 4-6.
Each step uses its own 32 rows of OUT/data.npz (16 per rank). Writes OUT/{mode}.npz (rank 0)."""
import sys

import numpy as np

import rtx
import rtx.distributed as dist
import rtx.nn as nn
import rtx.nn.functional as F

out_dir, mode = sys.argv[1], sys.argv[2]
dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
rtx.set_default_dtype(rtx.float64)
data = np.load(f"{out_dir}/data.npz")
X, Y = rtx.from_numpy(data["x"]), rtx.from_numpy(data["y"])

rtx.manual_seed(0 if mode == "full" else 123)  # the resumed run must get everything from the checkpoint
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
ddp = dist.DistributedDataParallel(model)
opt = dist.ZeroRedundancyOptimizer(model.parameters(), rtx.optim.Adam, lr=0.01)
res = {}
start = 0
if mode == "resume":
    state = dist.load_checkpoint(f"{out_dir}/ckpt.rtx")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
losses = []
for step in range(start, 6):
    rows = slice(step * 32 + rank * 16, step * 32 + (rank + 1) * 16)
    opt.zero_grad()
    loss = F.cross_entropy(ddp(X[rows]), Y[rows])
    loss.backward()
    opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean, op=dist.ReduceOp.AVG)
    losses.append(mean.item())
    if mode == "full" and step == 2:
        res["params_after_3"] = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        res["owned_numel"] = np.array([sum(p.numel() for p in opt.optim.param_groups[0]["params"])])
        res["state_keys"] = np.array(sorted(int(i) for i in opt.optim.state_dict()["state"]))
        opt.consolidate_state_dict(to=0)
        sd = opt.state_dict() if rank == 0 else None
        if rank == 0:
            for i, s in sd["state"].items():
                res[f"adam/{i}/exp_avg"] = s["exp_avg"].numpy()
                res[f"adam/{i}/exp_avg_sq"] = s["exp_avg_sq"].numpy()
                res[f"adam/{i}/step"] = s["step"].numpy()
        dist.save_checkpoint({"model": model.state_dict(), "optimizer": sd, "step": step + 1}, f"{out_dir}/ckpt.rtx")
res["losses"] = np.array(losses)
res["final_params"] = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
np.savez(f"{out_dir}/{mode}_rank{rank}.npz", **res)
