"""rtx runtime: devices, the array module (NumPy or CuPy), dtypes with PyTorch's promotion,
and random number generators. Imports nothing heavy: CuPy only when a GPU is used."""
__version__ = "0.1.0"

from rtx.runtime import cuda
from rtx.runtime.devices import (
                                CPU,
                                array_module,
                                as_device,
                                device,
                                device_of,
                                get_default_device,
                                module_for,
                                set_default_device,
                                to_device,
)
from rtx.runtime.dtypes import (
                                as_dtype,
                                dtype,
                                from_numpy,
                                get_default_dtype,
                                promote_types,
                                result_type_of,
                                set_default_dtype,
)
from rtx.runtime.random import Generator, generator_for, initial_seed, manual_seed, seed

__all__ = ["CPU", "Generator", "array_module", "as_device", "as_dtype", "cuda", "device", "device_of",
           "dtype", "from_numpy", "generator_for", "get_default_device", "get_default_dtype",
           "initial_seed", "manual_seed", "module_for", "promote_types", "result_type_of", "seed",
           "set_default_device", "set_default_dtype", "to_device"]
