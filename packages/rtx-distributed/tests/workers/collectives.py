"""Every collective on 2 ranks; rank r's inputs are arange-based and known to the test, which
recomputes each expected result with NumPy. Writes rank{r}.npz (and env.json) into argv[1]."""
import json
import os
import sys

import numpy as np

import rtx
import rtx.distributed as dist
from rtx.distributed import ReduceOp

out_dir = sys.argv[1]
dist.init_process_group()
r, n = dist.get_rank(), dist.get_world_size()
res = {}


def base(dtype=rtx.float32, shape=(2, 3)):
    return (rtx.arange(6, dtype=rtx.float64).reshape(shape) + 10 * r + 1).to(dtype)


for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
    t = base()
    dist.all_reduce(t, op=getattr(ReduceOp, op))
    res[f"all_reduce/{op}"] = t.numpy()
for dt in ("float64", "int64", "int32", "bfloat16", "float16", "complex64"):
    t = base(getattr(rtx, dt))
    dist.all_reduce(t)
    res[f"all_reduce_dtype/{dt}"] = t.to(rtx.complex128 if dt.startswith("complex") else rtx.float64).numpy()
b = rtx.tensor([r == 0, False, True])
dist.all_reduce(b)  # logical or
res["all_reduce_bool_sum"] = b.numpy()
b = rtx.tensor([r == 0, False, True])
dist.all_reduce(b, op=ReduceOp.PRODUCT)  # logical and
res["all_reduce_bool_prod"] = b.numpy()
bits = rtx.tensor([12, 10]) + r
dist.all_reduce(bits, op=ReduceOp.BXOR)
res["all_reduce_bxor"] = bits.numpy()

# async: the Work handle, its wait and result
t = base()
w = dist.all_reduce(t, op=ReduceOp.AVG, async_op=True)
res["async_is_work"] = np.array(isinstance(w, dist.Work))
w.wait()
res["async_avg"] = t.numpy()
res["async_done"] = np.array(w.is_completed())

t = base() if r == 1 else rtx.zeros(2, 3)
dist.broadcast(t, src=1)
res["broadcast"] = t.numpy()
lst = [rtx.zeros(2, 3) for _ in range(n)]
dist.all_gather(lst, base())
res["all_gather"] = np.stack([x.numpy() for x in lst])
out = rtx.zeros(2 * n, 3)
dist.all_gather_into_tensor(out, base())
res["all_gather_into_tensor"] = out.numpy()
out = rtx.zeros(2, 3)
dist.reduce_scatter(out, [base() * (i + 1) for i in range(n)])
res["reduce_scatter"] = out.numpy()
out = rtx.zeros(3)
dist.reduce_scatter_tensor(out, base().reshape(-1), op=ReduceOp.MAX)
res["reduce_scatter_tensor"] = out.numpy()
t = base()
dist.reduce(t, dst=0)
res["reduce"] = t.numpy()
g = [rtx.zeros(2, 3) for _ in range(n)] if r == 1 else None
dist.gather(base(), g, dst=1)
res["gather"] = np.stack([x.numpy() for x in g]) if r == 1 else np.zeros(0)
t = rtx.zeros(2, 3)
dist.scatter(t, [base() * (i + 1) for i in range(n)] if r == 0 else None, src=0)
res["scatter"] = t.numpy()
t = rtx.zeros(4, 3)
dist.all_to_all_single(t, (rtx.arange(12.0) + 100 * r).reshape(4, 3))
res["all_to_all_single"] = t.numpy()
outs = [rtx.zeros(r + 1) for _ in range(n)]  # rank j sends rank i a block of i + 1 values
dist.all_to_all(outs, [rtx.full((i + 1,), float(10 * r + i)) for i in range(n)])
res["all_to_all"] = np.concatenate([o.numpy() for o in outs])

# point to point, both directions
if r == 0:
    dist.send(rtx.tensor([1.0, 2.0]), dst=1)
    t = rtx.zeros(2)
    res["recv_src"] = np.array(dist.recv(t))
    res["recv"] = t.numpy()
else:
    t = rtx.zeros(2)
    res["recv_src"] = np.array(dist.recv(t, src=0))
    res["recv"] = t.numpy()
    w = dist.isend(t * 10, dst=0)
    w.wait()

objs = [None] * n
dist.all_gather_object(objs, {"rank": r, "name": f"r{r}"})
res["all_gather_object"] = np.array(json.dumps(objs))
objs = [None, None] if r else ["from-0", {"k": [1, 2]}]
dist.broadcast_object_list(objs, src=0)
res["broadcast_object_list"] = np.array(json.dumps(objs))

# a subgroup of rank 1 alone: rank 0 is not a member and gets None back
sub = dist.new_group([1])
t = base()
res["subgroup_result"] = np.array(repr(dist.all_reduce(t, group=sub)))
res["subgroup_rank"] = np.array(dist.get_rank(sub))
res["subgroup_tensor"] = t.numpy()
dist.barrier()

# errors: clear messages, no hang
errors = []
for fn in (lambda: dist.all_reduce(rtx.zeros(3, 4).t()), lambda: dist.all_reduce(rtx.zeros(3, dtype=rtx.int64),
                                                                                   op=ReduceOp.AVG),
           lambda: dist.all_gather([rtx.zeros(1)], rtx.zeros(1)), lambda: dist.broadcast(rtx.zeros(1), src=5),
           lambda: dist.init_process_group(), lambda: dist.all_reduce([1.0])):
    try:
        fn()
        errors.append("no error")
    except (ValueError, TypeError, RuntimeError) as e:
        errors.append(f"{type(e).__name__}: {e}")
res["errors"] = np.array(json.dumps(errors))
res["env"] = np.array(json.dumps({k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                                  "MASTER_ADDR", "OMP_NUM_THREADS")}))
res["backend"] = np.array(dist.get_backend())
np.savez(f"{out_dir}/rank{r}.npz", **res)
dist.destroy_process_group()
res_after = dist.is_initialized()
assert not res_after
