"""rtx automeasure: trustworthy timers (Timer, Measurement, Compare, as torch.utils.benchmark),
autotuning of rtx kernels with a per-machine tuning cache (read by rtx.runtime.tuning), and a
benchmark suite (`rtx automeasure bench`)."""
__version__ = "0.1.0"

from rtx.automeasure.autotune import Autotuner, TuneResult, autotune, do_bench
from rtx.automeasure.compare import Compare
from rtx.automeasure.measurement import Measurement, TaskSpec, select_unit, trim_sigfig
from rtx.automeasure.timer import Timer

__all__ = ["Autotuner", "Compare", "Measurement", "TaskSpec", "Timer", "TuneResult", "autotune", "do_bench",
           "select_unit", "trim_sigfig"]
