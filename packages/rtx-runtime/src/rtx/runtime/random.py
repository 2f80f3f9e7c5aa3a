"""Random number generators: rtx.Generator and the per-device default streams.

CPU streams are NumPy PCG64 bit generators; CUDA streams are CuPy's. The same seed gives the
same numbers on every run (not the same numbers as PyTorch: the algorithms differ).
"""
from __future__ import annotations

import time

import numpy as np

from rtx.runtime.devices import as_device, cupy


class Generator:
    """torch.Generator: manual_seed, seed, initial_seed, get_state/set_state."""

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._seed = 67280421310721  # PyTorch's default seed, for a familiar number
        self.manual_seed(self._seed)

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            seed &= (1 << 64) - 1
        self._seed = seed
        self._np = None
        if self.device.type != "cpu":
            cp = cupy()
            with cp.cuda.Device(self.device.index):
                self._np = cp.random.Generator(cp.random.XORWOW(seed))
        return self

    @property
    def np(self):
        """The array library's generator. A CPU one is built on first use: numpy.random (and the
        hashlib/secrets it pulls in) would otherwise cost `import rtx` ~10 ms."""
        if self._np is None:
            self._np = np.random.Generator(np.random.PCG64(self._seed))
        return self._np

    def seed(self) -> int:
        s = time.time_ns() & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        if self.device.type != "cpu":
            raise NotImplementedError("get_state is supported for CPU generators only")
        state = self.np.bit_generator.state
        return {"seed": self._seed, "state": state}

    def set_state(self, state) -> None:
        if self.device.type != "cpu":
            raise NotImplementedError("set_state is supported for CPU generators only")
        if not isinstance(state, dict) or "state" not in state:
            raise TypeError(f"set_state expects the object get_state returned, got {type(state).__name__}")
        self._seed = state["seed"]
        self.np.bit_generator.state = state["state"]

    def __repr__(self):
        return f"<rtx.Generator device={self.device} seed={self._seed}>"


default_generator = Generator("cpu")
_cuda_generators: dict[int, Generator] = {}


def generator_for(device) -> Generator:
    d = as_device(device)
    if d.type == "cpu":
        return default_generator
    g = _cuda_generators.get(d.index)
    if g is None:
        g = _cuda_generators[d.index] = Generator(d)
        g.manual_seed(default_generator.initial_seed())
    return g


def manual_seed(seed: int) -> Generator:
    """Seed every device's default stream, as torch.manual_seed does."""
    default_generator.manual_seed(seed)
    for g in _cuda_generators.values():
        g.manual_seed(seed)
    return default_generator


def seed() -> int:
    s = default_generator.seed()
    for g in _cuda_generators.values():
        g.manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)
