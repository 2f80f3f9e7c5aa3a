"""A Program compiled to a plan: one closure per op over a flat value list, plus workspaces
(per-run buffers) per thread and input-size key, so concurrent runs never share a buffer and a
run at a size seen before allocates nothing but its outputs."""
from __future__ import annotations

import collections
import threading

from rtx.inference import quant  # noqa: F401  (registers the int8 kernels)
from rtx.inference.kernels import BUILDERS, ELEMENTWISE, OWNING, Ctx


class WorkspacePool:
    """Workspaces by size key, one set per thread (thread-local, so acquiring one takes no lock
    and concurrent runs never share a buffer). Each thread keeps at most `max_keys` sizes (the
    least recently used size's buffers are dropped): a batcher feeding many batch sizes stays
    bounded. Threads that end take their workspaces with them."""

    def __init__(self, n_slots, env_of, max_keys=16):
        self.n_slots, self.env_of, self.max_keys = n_slots, env_of, max_keys
        self._local = threading.local()

    def get(self, key, arrays):
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = collections.OrderedDict()
        ws = cache.get(key)
        if ws is None:
            ws = [None] * self.n_slots
            ws[0] = self.env_of(arrays)
            cache[key] = ws
            while len(cache) > self.max_keys:
                cache.popitem(last=False)
        elif len(cache) > 1:
            cache.move_to_end(key)
        return ws

    def sizes(self):
        """The size keys this thread holds workspaces for."""
        return list(getattr(self._local, "cache", {}))


class Plan:
    """steps: closures step(v, ws) in order; template: the value list with constants filled in."""

    def __init__(self, program, xp):
        self.program, self.xp = program, xp
        readers = program.readers()
        outputs = {p.value for p in program.outputs}
        producers = program.producers()
        owned = set()   # values held in a kept buffer of their own op
        slots = [None]  # slot 0: the size environment
        self.steps, self.names = [], []
        for op in program.ops:
            buffered = op.kind in OWNING and not any(o in outputs for o in op.outputs)
            inplace = None
            if buffered and op.kind in ELEMENTWISE:
                for i, v in enumerate(op.inputs):
                    if v in owned and readers.get(v) == 1 and v not in outputs:
                        inplace = i
                        break
            self.steps.append(BUILDERS[op.kind](op, Ctx(xp, slots, buffered, inplace)))
            self.names.append(f"{op.kind} {op.name}")
            if buffered:
                owned.update(op.outputs)
        self.template = [None] * program.n
        for v, a in program.consts.items():
            self.template[v] = a
        self.in_slots = [p.value for p in program.inputs]
        # Outputs that may share memory with a kept buffer, an input or a constant are copied.
        self.out_slots = []
        for p in program.outputs:
            op = producers.get(p.value)
            fresh = op is not None and op.kind in OWNING and op.outputs == [p.value]
            self.out_slots.append((p.value, not fresh))
        self.pool = WorkspacePool(len(slots), program.env_of)

    def run(self, arrays):
        ws = self.pool.get(tuple([a.shape for a in arrays]), arrays)
        v = self.template.copy()
        for s, a in zip(self.in_slots, arrays):
            v[s] = a
        i = 0
        try:
            for i, step in enumerate(self.steps):  # noqa: B007  (i names the failing step)
                step(v, ws)
        except Exception as e:
            e.add_note(f"while running step {i} of the inference plan ({self.names[i]})")
            raise
        return [v[s].copy() if copy else v[s] for s, copy in self.out_slots]
