"""rtx vision: torchvision-shaped transforms, datasets, models and detection ops.

    import rtx.vision
    from rtx.vision import datasets, models, ops, transforms

The submodules load on first use, so `import rtx.vision` stays light."""
import importlib

__version__ = "0.1.0"

_SUBMODULES = ("datasets", "models", "ops", "transforms", "utils")
__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        module = importlib.import_module(f"rtx.vision.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'rtx.vision' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
