"""Functions run in child processes by test_multiprocessing.py. They live in an importable module
(the test adds this folder to sys.path) because the spawn start method imports them by name."""
import os

import rtx


def fill(t, value):
    t.fill_(value)


def fill_from_queue(q, done):
    t = q.get()
    t.fill_(7.0)
    done.put(t.is_shared())


def put_new_tensor(q):
    t = rtx.arange(4.0)
    q.put(t)
    q.get()  # the parent says when it has the tensor (the sender keeps it alive until then)


def square(x):
    return x * x


def spawned_write(i, t):
    t[i] = float(i + 1)


def spawned_raise(i):
    if i == 1:
        raise ValueError("child 1 failed on purpose")


def spawned_exit(i):
    if i == 0:
        os._exit(3)
