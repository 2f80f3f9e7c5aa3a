"""The kernel registry. Each kernel is one object holding its NumPy reference (the spec,
written for clarity), its fast CPU path, its CUDA path and the sample inputs that tests,
benchmarks and gpu_check run all three on. Calling the object dispatches on the array module
of its first argument."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from rtx.runtime import array_module
from rtx.runtime.dtypes import is_bfloat16

# Kernels compute in float32 or float64. Half-precision inputs are computed in float32 and the
# results cast back (as PyTorch accumulates half in float): the CPU has no fast half math, and
# one float32 copy is cheaper than a second set of CUDA kernels.


def _is_half(a) -> bool:
    dtype = getattr(a, "dtype", None)
    return dtype is not None and (dtype == np.float16 or is_bfloat16(dtype))

TOLERANCES = {np.dtype(np.float32): (2e-5, 2e-6), np.dtype(np.float64): (1e-12, 1e-13)}


@dataclass
class Sample:
    """One call: positional and keyword arguments, and a label for test ids and tables."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    label: str = ""


SampleMaker = Callable[[np.random.Generator, Any, str], Iterable[Sample]]


class Kernel:
    """reference / cpu / cuda implementations of one kernel, dispatched on the input's array
    module. `mutates` names the parameters a kernel updates in place;
    their final values are part of its output for comparisons."""

    def __init__(self, name: str, reference: Callable, cpu: Callable | None, cuda: Callable,
                 samples: SampleMaker, *, mutates: tuple = (), tolerances: dict | None = None):
        self.name = name
        self.reference = reference
        self.cpu = cpu or reference   # no fast path unless it measurably beats the reference
        self.cuda = cuda
        self.samples = samples        # samples(rng, dtype, size) with size "test" or "bench"
        self.mutates = mutates
        self.tolerances = {**TOLERANCES, **{np.dtype(k): v for k, v in (tolerances or {}).items()}}
        self.__doc__ = reference.__doc__
        self.__signature__ = inspect.signature(reference)
        self.__wrapped__ = reference

    def __repr__(self):
        return f"<rtx.kernel {self.name}>"

    def __call__(self, *args, **kwargs):
        first = args[0] if args else next(iter(kwargs.values()))
        try:
            on_cpu = array_module(first) is np
        except KeyError:  # not NumPy, and CuPy was never imported: not an array at all
            raise TypeError(f"rtx.kernel.{self.name} expects a numpy.ndarray or cupy.ndarray, "
                            f"got {type(first).__name__}") from None
        impl = self.cpu if on_cpu else self.cuda
        if any(_is_half(a) for a in (*args, *kwargs.values())):
            return self._in_float32(impl, args, kwargs)
        return impl(*args, **kwargs)

    def _in_float32(self, impl, args, kwargs):
        def up(a):
            return a.astype(np.float32) if _is_half(a) else a
        up_args, up_kwargs = tuple(up(a) for a in args), {k: up(v) for k, v in kwargs.items()}
        result = impl(*up_args, **up_kwargs)
        for key in self.mutates:  # write the float32 state back into the caller's arrays
            old, new = self._argument(args, kwargs, key), self._argument(up_args, up_kwargs, key)
            if old is not None and new is not old:
                old[...] = new
        first = args[0] if args else next(iter(kwargs.values()))

        def down(r):
            return r.astype(first.dtype) if getattr(r, "dtype", None) == np.float32 else r
        return tuple(down(r) for r in result) if isinstance(result, tuple) else down(result)

    def _argument(self, args, kwargs, name):
        return self.__signature__.bind_partial(*args, **kwargs).arguments.get(name)

    def tolerance(self, dtype) -> tuple[float, float]:
        """(rtol, atol) for comparing this kernel's paths in `dtype`."""
        return self.tolerances[np.dtype(dtype)]

    def run(self, impl: Callable, sample: Sample, convert: Callable = lambda a: a.copy()) -> tuple:
        """Call `impl` on copies of the sample's arrays (passed through `convert`, e.g. to move
        them to the GPU) and return every output: the result's arrays, then the final values
        of the arguments the kernel mutates."""
        def conv(a):
            return convert(a) if isinstance(a, np.ndarray) else a
        args = tuple(conv(a) for a in sample.args)
        kwargs = {k: conv(v) for k, v in sample.kwargs.items()}
        result = impl(*args, **kwargs)
        if result is None:
            result = ()
        elif not isinstance(result, tuple):
            result = (result,)
        mutated = tuple(self._argument(args, kwargs, k) for k in self.mutates)
        return tuple(r for r in (*result, *mutated) if r is not None)


KERNELS: dict[str, Kernel] = {}


def register(kernel: Kernel) -> Kernel:
    if kernel.name in KERNELS:
        raise ValueError(f"kernel {kernel.name!r} is registered twice")
    KERNELS[kernel.name] = kernel
    return kernel
