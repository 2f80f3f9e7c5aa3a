"""Rank 1 fails in the way argv[1] names while rank 0 waits for it in all_reduce; rank 0 must not
hang. `sleep` mode: both ranks write their pid to argv[2]/pid{rank} and sleep (signal tests)."""
import os
import sys
import time

import rtx
import rtx.distributed as dist

mode = sys.argv[1]
dist.init_process_group()
rank = dist.get_rank()
if mode == "sleep":
    with open(os.path.join(sys.argv[2], f"pid{rank}.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(sys.argv[2], f"pid{rank}.tmp"), os.path.join(sys.argv[2], f"pid{rank}"))
    time.sleep(120)
if rank == 1:
    if mode == "raise":
        raise ValueError("rank 1 lost its data")
    if mode == "exit":
        os._exit(3)
    if mode == "hang":
        time.sleep(120)
t = rtx.ones(4)
dist.all_reduce(t)
print(f"rank {rank} finished all_reduce", flush=True)
