"""Schedules, seeding, Polyak averaging and small helpers (stable_baselines3.common.utils)."""
from __future__ import annotations

import contextlib
import random
from typing import Callable, Iterable

import numpy as np

import rtx

Schedule = Callable[[float], float]


def set_random_seed(seed: int) -> None:
    """Seed Python's, NumPy's and rtx's generators, as SB3 seeds Python, NumPy and torch."""
    random.seed(seed)
    np.random.seed(seed)
    rtx.manual_seed(seed)


class ConstantSchedule:
    """A schedule that always returns `value` (a class, not a lambda, so it can be saved as JSON)."""

    def __init__(self, value: float):
        self.value = float(value)

    def __call__(self, progress_remaining: float) -> float:
        return self.value

    def to_json(self):
        return self.value


class LinearSchedule:
    """Goes from `start` (progress_remaining=1) to `end` over the first `end_fraction` of training, then stays."""

    def __init__(self, start: float, end: float, end_fraction: float = 1.0):
        self.start, self.end, self.end_fraction = float(start), float(end), float(end_fraction)

    def __call__(self, progress_remaining: float) -> float:
        progress = 1.0 - progress_remaining
        if progress > self.end_fraction:
            return self.end
        return self.start + progress * (self.end - self.start) / self.end_fraction

    def to_json(self):
        return {"linear": [self.start, self.end, self.end_fraction]}


def linear_schedule(initial_value: float) -> LinearSchedule:
    """The zoo's `lin_<v>`: decays linearly from `initial_value` to 0 over the whole run."""
    return LinearSchedule(initial_value, 0.0, 1.0)


def get_linear_fn(start: float, end: float, end_fraction: float) -> LinearSchedule:
    return LinearSchedule(start, end, end_fraction)


def get_schedule_fn(value_schedule) -> Schedule:
    """A float becomes a constant schedule; a callable (progress_remaining -> value) is kept."""
    if isinstance(value_schedule, (float, int)):
        return ConstantSchedule(value_schedule)
    if isinstance(value_schedule, dict) and "linear" in value_schedule:
        return LinearSchedule(*value_schedule["linear"])
    if not callable(value_schedule):
        raise TypeError(f"a schedule must be a number or a callable(progress_remaining), got {value_schedule!r}")
    return value_schedule


def schedule_to_json(schedule):
    """JSON form of a schedule for save(); arbitrary callables are stored as their value at progress 1.0."""
    if hasattr(schedule, "to_json"):
        return schedule.to_json()
    if isinstance(schedule, (int, float)) or schedule is None:
        return schedule
    return float(schedule(1.0))


def update_learning_rate(optimizer, learning_rate: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = learning_rate


def polyak_update(params: Iterable, target_params: Iterable, tau: float) -> None:
    """target <- tau * param + (1 - tau) * target, in place and without building a graph.

    Spelt `tp.mul_(1 - tau); tp.add_(p * tau)`: outside a recorded graph both in-place ops run as
    one NumPy ufunc each on the target's memory (rtx-tensor's fast path, version counter bumped),
    where `tp.add_(p, alpha=tau)` would take the general path; SAC and TD3 call this after every
    gradient step."""
    with rtx.no_grad():
        for p, tp in zip(params, target_params, strict=True):
            if tp.shape != p.shape or tp.dtype != p.dtype or tp.device != p.device:
                raise RuntimeError(f"polyak_update: target {tuple(tp.shape)} {tp.dtype} on {tp.device} does not "
                                   f"match parameter {tuple(p.shape)} {p.dtype} on {p.device}")
            tp.mul_(1.0 - tau)
            tp.add_(p * tau)


@contextlib.contextmanager
def frozen(params):
    """Within the block, `params` do not require grad (and get back their flags after it).

    SAC's and TD3's actor losses run through the critic: SB3 lets that backward also compute the
    critic's weight gradients, which the critic's next zero_grad() throws away. Freezing the
    critic's own parameters while its actor-loss forward is recorded skips those GEMMs; the
    actor's gradients (through the critic's inputs) are the same."""
    params = [p for p in params if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def explained_variance(y_pred: np.ndarray, y_true: np.ndarray) -> float:
    """1 - Var[y_true - y_pred] / Var[y_true]; nan when y_true is constant."""
    var_y = np.var(y_true)
    return float("nan") if var_y == 0 else float(1 - np.var(y_true - y_pred) / var_y)


def normalize_advantages(advantages: rtx.Tensor) -> rtx.Tensor:
    """(a - a.mean()) / (a.std() + 1e-8), as PPO and A2C normalise a minibatch's advantages. On the
    CPU it runs on the array: the same operations in the same order as rtx's mean and std (a sum
    divided by n; the sum of squared deviations from the keepdim mean over n - 1; sqrt), so the
    same bits, in five NumPy calls instead of a dozen rtx ops (the advantages carry no gradient)."""
    if advantages.requires_grad or not advantages.is_cpu or advantages.ndim != 1:
        return (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    x = advantages.numpy()
    n = x.shape[0]
    d = x - x.sum(axis=(0,), keepdims=True) / n
    std = np.sqrt((d * d).sum(axis=(0,)) / (n - 1))
    return rtx.as_tensor((x - x.sum(axis=(0,)) / n) / (std + 1e-8))


def actor_critic_loss(policy_loss, entropy_loss, value_loss, ent_coef: float, vf_coef: float):
    """policy_loss + ent_coef * entropy_loss + vf_coef * value_loss. With ent_coef == 0 (the zoo's
    CartPole setting) the entropy term stays out of the graph: it would add exact zeros to every
    gradient (and -0.0 to the loss, which changes nothing), and its backward is about a fifth of a
    small policy's backward pass."""
    if isinstance(ent_coef, (int, float)) and ent_coef == 0:
        return policy_loss + vf_coef * value_loss
    return policy_loss + ent_coef * entropy_loss + vf_coef * value_loss


def safe_mean(values) -> float:
    return float("nan") if len(values) == 0 else float(np.mean(values))


def get_device(device="auto") -> rtx.device:
    """'auto' picks CUDA when CuPy sees a GPU, else the CPU (SB3's rule)."""
    if device == "auto":
        device = "cuda" if rtx.cuda.is_available() else "cpu"
    return rtx.device(device)


def obs_as_tensor(obs, device) -> rtx.Tensor:
    return rtx.as_tensor(np.asarray(obs), device=device)


class TrainFreq:
    """How often to train an off-policy agent: every `frequency` steps or episodes."""

    def __init__(self, frequency: int, unit: str = "step"):
        if unit not in ("step", "episode"):
            raise ValueError(f"train_freq unit must be 'step' or 'episode', got {unit!r}")
        self.frequency, self.unit = int(frequency), unit

    @classmethod
    def parse(cls, train_freq) -> "TrainFreq":
        if isinstance(train_freq, TrainFreq):
            return train_freq
        if isinstance(train_freq, int):
            return cls(train_freq, "step")
        if isinstance(train_freq, (tuple, list)) and len(train_freq) == 2:
            return cls(int(train_freq[0]), str(train_freq[1]))
        raise ValueError(f"train_freq must be an int or a (frequency, 'step'|'episode') tuple, got {train_freq!r}")

    def to_json(self):
        return [self.frequency, self.unit]


def should_collect_more_steps(train_freq: TrainFreq, num_collected_steps: int, num_collected_episodes: int) -> bool:
    if train_freq.unit == "step":
        return num_collected_steps < train_freq.frequency
    return num_collected_episodes < train_freq.frequency
