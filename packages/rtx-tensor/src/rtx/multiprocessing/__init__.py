"""rtx.multiprocessing: torch.multiprocessing. The standard library's multiprocessing API
(Process, Pool, Queue, get_context, set_start_method, ...) with rtx tensors sent through shared
memory instead of being copied, plus spawn() and the sharing-strategy switches.

Importing this module registers the tensor reducer with multiprocessing's ForkingPickler, so
every queue, pipe, Pool and spawned Process argument from then on passes a CPU tensor by handle
(moving it into shared memory first if it is not there yet, as PyTorch does). `import rtx` in a
process where multiprocessing is already loaded (a spawned child) registers it too; otherwise,
until rtx.multiprocessing is imported, the standard library copies tensors as plain pickles."""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403

from rtx.multiprocessing.shared import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    init_reductions,  # noqa: F401  (shared.py registers the reducer when imported)
    set_sharing_strategy,
)
from rtx.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

SpawnContext = ProcessContext  # PyTorch's older name

__all__ = list(_mp.__all__) + [
    "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "SpawnContext",
    "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy", "spawn", "start_processes",
]
