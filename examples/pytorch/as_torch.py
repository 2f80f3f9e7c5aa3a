"""Run a PyTorch script unchanged with `torch` resolving to rtx:

    python examples/pytorch/as_torch.py SCRIPT [ARGS...]

`import torch`, `import torch.nn.functional as F`, `from torch.utils.data import DataLoader`, ...
all give the rtx modules themselves, the way `import rtx as torch` does for the top-level name,
in this process and in the processes it starts (torch_shim/ goes on PYTHONPATH)."""
import os
import runpy
import sys
from pathlib import Path

SHIM = str(Path(__file__).resolve().parent / "torch_shim")

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, SHIM)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SHIM, os.environ.get("PYTHONPATH")) if p)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")
