"""Pruning, as torch.nn.utils.prune: a pruned parameter `weight` becomes `weight_orig` (the
trainable parameter) times the buffer `weight_mask`, recomputed by a forward pre-hook; `remove`
makes it permanent. Pruning twice prunes `amount` of what is left (PyTorch's PruningContainer).

Also here: heads_structured (whole attention heads of a MultiheadAttention) and GradualPruner
(a sparsity schedule: Zhu & Gupta's cubic ramp from an initial to a final sparsity)."""
from __future__ import annotations

import numbers

import numpy as np

import rtx
import rtx.nn as nn

__all__ = ["BasePruningMethod", "Identity", "RandomUnstructured", "L1Unstructured", "LnStructured",
           "CustomFromMask", "identity", "random_unstructured", "l1_unstructured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned", "heads_structured", "sparsity",
           "GradualPruner"]


def _validate_amount(amount):
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real) or \
            (isinstance(amount, numbers.Integral) and amount < 0) or \
            (not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _nparams_toprune(amount, size):
    """An int amount is a count, a float a fraction (rounded as PyTorch: Python's round)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return round(float(amount) * size)


def _np(t):
    return t.detach().cpu().numpy()


class BasePruningMethod:
    """A pruning method: compute_mask(t, default_mask) -> mask, and the hook that applies it."""

    PRUNING_TYPE = "unstructured"
    _tensor_name = None

    def compute_mask(self, t, default_mask):
        raise NotImplementedError

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    def apply_mask(self, module):
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask.to(orig.dtype)

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> in place with cls(*args, **kwargs); returns the method object."""
        if not isinstance(module, nn.Module):
            raise TypeError(f"pruning expects an nn.Module, got {type(module).__name__}")
        old_hook = None
        for key, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_hook = hook
                del module._forward_pre_hooks[key]
        if old_hook is None:
            orig = getattr(module, name, None)
            if orig is None or name not in module._parameters:
                raise ValueError(f"{type(module).__name__} has no parameter named {name!r} to prune "
                                 f"(parameters: {', '.join(n for n, _ in module.named_parameters(recurse=False))})")
            default_mask = np.ones(orig.shape, dtype=np.float32)
        else:
            orig = getattr(module, name + "_orig")
            default_mask = _np(getattr(module, name + "_mask")).astype(np.float32)
        scores = orig if importance_scores is None else importance_scores
        if tuple(scores.shape) != tuple(orig.shape):
            raise ValueError(f"importance_scores should have the shape of parameter {name} {tuple(orig.shape)}, "
                             f"got {tuple(scores.shape)}")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        mask = method.compute_mask(_np(scores), default_mask)
        if old_hook is None:
            del module._parameters[name]
            module.register_parameter(name + "_orig", orig)
            module.register_buffer(name + "_mask", rtx.as_tensor(mask, dtype=orig.dtype, device=orig.device))
        else:
            setattr(module, name + "_mask", rtx.as_tensor(mask, dtype=orig.dtype, device=orig.device))
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def remove(self, module):
        """Make the pruning permanent: <name> becomes a Parameter holding orig * mask."""
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.detach()
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class Identity(BasePruningMethod):
    def compute_mask(self, t, default_mask):
        return default_mask


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        mask = _np(self.mask) if hasattr(self.mask, "detach") else np.asarray(self.mask)
        if mask.shape != default_mask.shape:
            raise ValueError(f"mask of shape {mask.shape} does not match the parameter's {default_mask.shape}")
        return default_mask * mask.astype(np.float32)


class _Unstructured(BasePruningMethod):
    def __init__(self, amount):
        _validate_amount(amount)
        self.amount = amount

    def _scores(self, t):
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        """Zero the `amount` lowest-scoring entries among those still unpruned."""
        mask = default_mask.copy()
        alive = np.flatnonzero(default_mask.ravel() == 1)
        k = _nparams_toprune(self.amount, alive.size)
        if k:
            order = np.argsort(self._scores(t).ravel()[alive], kind="stable")
            mask.ravel()[alive[order[:k]]] = 0
        return mask


class L1Unstructured(_Unstructured):
    """Prunes the entries of smallest absolute value."""

    def _scores(self, t):
        return np.abs(t)


class RandomUnstructured(_Unstructured):
    """Prunes random entries (drawn from rtx's global generator)."""

    def _scores(self, t):
        return rtx.rand(t.shape).numpy()


class LnStructured(BasePruningMethod):
    """Prunes whole slices along `dim` (output channels for dim=0) of smallest L`n` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        if not -t.ndim <= self.dim < t.ndim:
            raise ValueError(f"dim {self.dim} is out of range for a parameter with {t.ndim} dimensions")
        dim = self.dim % t.ndim
        rows = np.moveaxis(t, dim, 0).reshape(t.shape[dim], -1)
        alive_rows = np.moveaxis(default_mask, dim, 0).reshape(t.shape[dim], -1).any(axis=1)
        alive = np.flatnonzero(alive_rows)
        k = _nparams_toprune(self.amount, alive.size)
        norms = _norm(rows, self.n)
        keep = np.zeros(t.shape[dim], dtype=np.float32)
        keep[alive[np.argsort(norms[alive], kind="stable")[k:]]] = 1
        shape = [1] * t.ndim
        shape[dim] = -1
        return default_mask * keep.reshape(shape)


def _norm(rows, n):
    if n in (float("inf"), "inf"):
        return np.abs(rows).max(axis=1)
    if n in (float("-inf"), "-inf"):
        return np.abs(rows).min(axis=1)
    if n == "fro":
        n = 2
    if n == 0:
        return (rows != 0).sum(axis=1).astype(np.float64)
    return (np.abs(rows.astype(np.float64)) ** n).sum(axis=1) ** (1.0 / n)


class HeadStructured(BasePruningMethod):
    """Prunes whole heads of a packed q/k/v projection (rows grouped as [q heads, k heads, v heads])."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, num_heads, n=2):
        _validate_amount(amount)
        self.amount, self.num_heads, self.n = amount, num_heads, n

    def head_of_rows(self, rows):
        return (np.arange(rows) % (rows // 3)) // (rows // 3 // self.num_heads)

    def compute_mask(self, t, default_mask):
        rows = t.shape[0]
        heads = self.head_of_rows(rows)
        flat = np.abs(t.reshape(rows, -1).astype(np.float64)) ** self.n
        norms = np.array([flat[heads == h].sum() for h in range(self.num_heads)]) ** (1.0 / self.n)
        alive_rows = default_mask.reshape(rows, -1).any(axis=1)
        alive = np.array([h for h in range(self.num_heads) if alive_rows[heads == h].any()], dtype=np.int64)
        k = _nparams_toprune(self.amount, alive.size)
        dead = set(alive[np.argsort(norms[alive], kind="stable")[:k]].tolist())
        keep = np.array([0.0 if heads[r] in dead else 1.0 for r in range(rows)], dtype=np.float32)
        return default_mask * keep.reshape((rows,) + (1,) * (t.ndim - 1))


def identity(module, name):
    """Puts <name> under pruning with an all-ones mask (a starting point for custom masks)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Zero the `amount` (a fraction, or a count) entries of module.<name> of smallest |value|."""
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Zero the `amount` slices along `dim` (0: output channels) of smallest L`n` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune `amount` of all the given (module, name) pairs together: the smallest entries over all
    of them, so layers lose different fractions."""
    parameters = list(parameters)
    if not parameters:
        raise ValueError("global_unstructured: parameters must be a non-empty iterable of (module, name) pairs")
    if not (isinstance(pruning_method, type) and issubclass(pruning_method, BasePruningMethod)) or \
            pruning_method.PRUNING_TYPE != "unstructured":
        raise TypeError(f"global_unstructured needs an unstructured method class such as L1Unstructured, got "
                        f"{pruning_method!r}")
    importance_scores = importance_scores or {}
    scores, masks = [], []
    for module, name in parameters:
        t = importance_scores.get((module, name), getattr(module, name))
        scores.append(_np(t).ravel())
        m = getattr(module, name + "_mask", None)
        masks.append(np.ones(scores[-1].size, np.float32) if m is None else _np(m).ravel().astype(np.float32))
    method = pruning_method(**kwargs)
    final = method.compute_mask(np.concatenate(scores), np.concatenate(masks))
    start = 0
    for (module, name), s in zip(parameters, scores):
        part = final[start:start + s.size].reshape(tuple(getattr(module, name).shape))
        start += s.size
        custom_from_mask(module, name, part)


def remove(module, name):
    """Make the pruning of module.<name> permanent and drop <name>_orig, <name>_mask and the hook."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """True when module or any submodule has a pruning hook."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules() for h in m._forward_pre_hooks.values())


def heads_structured(module, amount, n=2):
    """Prune whole attention heads of an nn.MultiheadAttention (packed in_proj): for the `amount`
    heads of smallest L`n` norm over their q, k and v rows, those rows and biases are masked, so
    the head attends uniformly to nothing and adds nothing. Pruned through in_proj_weight_mask
    and in_proj_bias_mask, as any other pruning."""
    if not isinstance(module, nn.MultiheadAttention):
        raise TypeError(f"heads_structured prunes an nn.MultiheadAttention, got {type(module).__name__}")
    if not module._qkv_same_embed_dim:
        raise ValueError("heads_structured needs the packed in_proj_weight (kdim == vdim == embed_dim)")
    method = HeadStructured.apply(module, "in_proj_weight", amount, module.num_heads, n)
    if module.in_proj_bias is not None:
        row_mask = _np(module.in_proj_weight_mask).reshape(module.in_proj_weight_mask.shape[0], -1).any(axis=1)
        custom_from_mask(module, "in_proj_bias", row_mask.astype(np.float32))
    return method


def sparsity(module, name="weight"):
    """The fraction of zeros in module.<name> (after its mask, if pruned)."""
    t = _np(getattr(module, name))
    return float((t == 0).sum() / t.size)


class GradualPruner:
    """Sparsity that grows over training (Zhu & Gupta, 2017):
    s_t = s_f + (s_i - s_f) * (1 - (t - t0) / (T - t0)) ** exponent for t0 <= t <= T.

    parameters: (module, name) pairs; method "l1_unstructured", "ln_structured" (whole slices
    along dim, norm n) or "heads" (whole heads of nn.MultiheadAttention modules, given as
    (mha, "in_proj_weight"); their in_proj_bias follows). Call step() after each optimizer step;
    a pruned entry stays pruned."""

    def __init__(self, parameters, final_sparsity, total_steps, initial_sparsity=0.0, begin_step=0, frequency=1,
                 method="l1_unstructured", n=2, dim=0, exponent=3):
        if not 0 <= initial_sparsity <= final_sparsity < 1:
            raise ValueError(f"need 0 <= initial_sparsity <= final_sparsity < 1, got {initial_sparsity} and "
                             f"{final_sparsity}")
        if total_steps <= begin_step:
            raise ValueError(f"total_steps ({total_steps}) must be after begin_step ({begin_step})")
        if method not in ("l1_unstructured", "ln_structured", "heads"):
            raise ValueError(f"method must be 'l1_unstructured', 'ln_structured' or 'heads', got {method!r}")
        if method == "heads" and any(not isinstance(m, nn.MultiheadAttention) or n != "in_proj_weight"
                                     for m, n in parameters):
            raise ValueError("method='heads' takes (nn.MultiheadAttention, 'in_proj_weight') pairs")
        self.parameters = list(parameters)
        self.final_sparsity, self.initial_sparsity = final_sparsity, initial_sparsity
        self.total_steps, self.begin_step, self.frequency = total_steps, begin_step, frequency
        self.method, self.n, self.dim, self.exponent = method, n, dim, exponent
        self.step_count = 0
        for module, name in self.parameters:
            if not hasattr(module, name + "_mask"):
                identity(module, name)
            if method == "heads" and module.in_proj_bias is not None and not hasattr(module, "in_proj_bias_mask"):
                identity(module, "in_proj_bias")

    def sparsity_at(self, step):
        if step <= self.begin_step:
            return self.initial_sparsity if step == self.begin_step else 0.0
        frac = min(1.0, (step - self.begin_step) / (self.total_steps - self.begin_step))
        return self.final_sparsity + (self.initial_sparsity - self.final_sparsity) * (1 - frac) ** self.exponent

    def step(self):
        """Advance one step; every `frequency` steps re-mask to the scheduled sparsity."""
        self.step_count += 1
        if self.step_count < self.begin_step or (self.step_count - self.begin_step) % self.frequency:
            return
        target = self.sparsity_at(self.step_count)
        for module, name in self.parameters:
            orig = _np(getattr(module, name + "_orig"))
            mask = _np(getattr(module, name + "_mask")).astype(np.float32)
            scores = np.abs(orig) * mask     # already-pruned entries score 0: they go first
            if self.method == "l1_unstructured":
                new = L1Unstructured(target).compute_mask(scores, np.ones_like(mask))
            elif self.method == "ln_structured":
                new = LnStructured(target, self.n, self.dim).compute_mask(scores, np.ones_like(mask))
            else:
                new = HeadStructured(target, module.num_heads, self.n).compute_mask(scores, np.ones_like(mask))
            self._set_mask(module, name, new * mask)
            if self.method == "heads" and module.in_proj_bias is not None:
                self._set_mask(module, "in_proj_bias", (new * mask).reshape(mask.shape[0], -1).max(axis=1))

    @staticmethod
    def _set_mask(module, name, mask):
        orig = getattr(module, name + "_orig")
        setattr(module, name + "_mask", rtx.as_tensor(mask, dtype=orig.dtype, device=orig.device))
        with rtx.no_grad():
            setattr(module, name, orig * getattr(module, name + "_mask"))
