"""`import torch` gives rtx: this folder on sys.path (as_torch.py puts it there, and on PYTHONPATH
for child processes such as torch.multiprocessing's spawned workers) makes `torch` and every
`torch.<sub>` resolve to the rtx module itself (one module object per name: rtx.nn is torch.nn)."""
import importlib
import importlib.abc
import importlib.util
import sys


class TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("torch."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # The import system returns whatever sys.modules holds under the name after exec_module:
        # the rtx module itself, not a copy, so classes and isinstance checks are shared.
        sys.modules[module.__name__] = importlib.import_module("rtx" + module.__name__[len("torch"):])


if not any(type(f).__name__ == "TorchAlias" for f in sys.meta_path):
    sys.meta_path.insert(0, TorchAlias())
sys.modules[__name__] = importlib.import_module("rtx")  # `import torch` returns rtx itself
