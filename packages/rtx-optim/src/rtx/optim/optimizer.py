"""Optimizer: the base of every optimizer, with PyTorch's param_groups, state, state_dict format,
hooks and errors.

Updates are written on the parameters' arrays (`rtx.extend.raw(p)`, NumPy or CuPy) in place, never through
Tensor ops: an optimizer step builds no graph and makes no Tensor objects. Each in-place write
bumps the parameter's version counter once, so autograd still notices a parameter that a saved
graph depends on has changed.
"""
from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable

import numpy as np

from rtx.autograd.grad_mode import enable_grad, no_grad
from rtx.extend import Tensor, increment_version, raw, wrap
from rtx.runtime.dtypes import float32 as _float32

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]


# Per-parameter scalars kept as CPU float32 tensors whatever the parameter's dtype.
_SCALAR_STATE = ("step", "mu_product")


class _RequiredParameter:
    """Marks a default that every param group must set (torch.optim.optimizer.required)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class RemovableHandle:
    """Removes the hook it was returned for (torch.utils.hooks.RemovableHandle)."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_global_pre_hooks: dict = OrderedDict()
_global_post_hooks: dict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before every optimizer's step."""
    handle = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """hook(optimizer, args, kwargs), after every optimizer's step."""
    handle = RemovableHandle(_global_post_hooks)
    _global_post_hooks[handle.id] = hook
    return handle


def _typename(obj) -> str:
    if type(obj) is Tensor:
        return "rtx.Tensor"
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _with_hooks(step):
    """Run the global and per-optimizer step hooks around `step` (once, even when a subclass's
    step calls super().step())."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):
            return step(self, *args, **kwargs)
        for hook in chain(_global_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
        self.__dict__["_in_step"] = True
        try:
            out = step(self, *args, **kwargs)
        finally:
            self.__dict__["_in_step"] = False
        self._opt_called = True  # lets an LR scheduler warn when it is stepped first
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    wrapper._hooked = True
    return wrapper


def _no_grad_step(step):
    """A built-in optimizer's step: runs under no_grad; the closure, if any, under enable_grad."""
    @functools.wraps(step)
    def wrapper(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            step(self)
        return loss
    return wrapper


class Optimizer:
    """Base class for all optimizers.

    params: an iterable of Tensors, of (name, Tensor) pairs, or of dicts, each a param group with
    a 'params' entry and per-group options; defaults: the options a group does not set.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _with_hooks(step)

    def __init__(self, params, defaults: dict[str, Any]):
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        try:
            param_groups = list(params)
        except TypeError:
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}") from None
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _init_hooks(self):
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    # Options added to PyTorch's optimizers after their first release: a param group pickled or
    # saved before them lacks the key, so __setstate__ fills it in (a subclass lists its own).
    _group_defaults: dict[str, Any] = {}

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "_optimizer_step_pre_hooks" not in self.__dict__:
            self._init_hooks()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._group_defaults.items():
                group.setdefault(key, value)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ---- param groups -------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to optimize, e.g. layers unfrozen
        during fine-tuning."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {_typename(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        tensors, names = [], []
        for p in params:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter "
                                 f"{name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. cannot add param group "
                                 f"{which} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- gradients and the step ---------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: drop them (set_to_none, the default) or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad = False
                    raw(g).fill(0)
                    increment_version(g)

    def step(self, closure: Callable[[], Any] | None = None):
        """Perform one optimization step; `closure` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    def _init_group(self, group: dict, state_names=(), *, extra=None, step: bool = True):
        """Gather one param group for a functional step: (params, grads, {name: [state]}, steps).

        Parameters without a gradient are skipped. A parameter's state is created on its first
        step (while it is empty): a float32 scalar 'step' (unless step=False), then each `extra`
        entry, then a zeroed array for each of `state_names`, in that order (PyTorch's key order).
        extra maps a name to init(p) -> Tensor, or to None for a state the functional creates
        itself (SGD's momentum_buffer, gathered as None until then). Scalar states ('step',
        'mu_product') are gathered through _as_step_tensor, which upgrades old numeric ones.
        steps is [] when step=False. A group that keeps no state leaves self.state untouched."""
        extra = extra or {}
        params, grads = [], []
        for p in group["params"]:
            grad = p.grad
            if grad is not None:
                params.append(p)
                grads.append(grad)
        if not step and not extra and not state_names:
            return params, grads, {}, []
        # One comprehension per entry, not a loop over entries per parameter: this runs every step.
        param_states = [self.state[p] for p in params]
        if step or state_names or any(init is not None for init in extra.values()):
            for p, state in zip(params, param_states):
                if len(state) == 0:
                    _new_state(state, p, state_names, extra=extra, step=step)
        states = {}
        for name in chain(extra, state_names):
            if name in _SCALAR_STATE:
                states[name] = [_as_step_tensor(state, name) for state in param_states]
            elif name in extra and extra[name] is None:
                states[name] = [state.get(name) for state in param_states]
            else:
                states[name] = [state[name] for state in param_states]
        steps = [_as_step_tensor(state) for state in param_states] if step else []
        return params, grads, states, steps

    # ---- hooks ----------------------------------------------------------------------------
    def _register(self, table: dict, hook, prepend=False) -> RemovableHandle:
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before each step."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """hook(optimizer, args, kwargs), after each step."""
        return self._register(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state_dict -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}: parameters are
        replaced by their position across all groups, as in PyTorch. Values are the live state
        tensors (not copies): save them or copy them before stepping on."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        out = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, out)
            if result is not None:
                out = result
        return out

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        # Floating state follows the parameter's dtype and device; 'step' stays as saved (it is a
        # CPU float32 counter unless the group is fused/capturable), as PyTorch does. NAdam's
        # 'mu_product' too, unlike PyTorch (which casts it to a float64 parameter's dtype, so a
        # resumed run drifts from an uninterrupted one in the last bits).
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused, capturable = pg.get("fused", False), pg.get("capturable", False)
                break
        if key in _SCALAR_STATE:
            if capturable or fused:
                return _copy_to(value, _float32, param)
            return _copy_to(value, None, None)
        if param.is_floating_point():
            return _copy_to(value, param.dtype, param)
        return _copy_to(value, None, param)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state_dict() of an optimizer over the same parameters (in the same order).

        Unlike PyTorch, the loaded state never aliases the tensors of `state_dict`: two optimizers
        loaded from one dict (or the saver and the loader) can both keep stepping."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = [_copy_group(g) for g in state_dict["param_groups"]]
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, param_id, key=None):
            if isinstance(value, Tensor):
                return self._process_value_according_to_param_policy(param, value, param_id,
                                                                      state_dict["param_groups"], key)
            if isinstance(value, dict):
                return {k: cast(param, v, param_id, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, param_id) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, k)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state, "param_groups": [update_group(g, ng) for g, ng in
                                                              zip(groups, saved_groups)]})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _copy_group(group: dict) -> dict:
    # deepcopy, except tensors (an lr given as a Tensor), which are cloned by hand
    return {k: (_copy_to(v, None, None) if isinstance(v, Tensor) else deepcopy(v)) for k, v in group.items()}


def _copy_to(value: Tensor, dtype, like: Tensor | None) -> Tensor:
    """A fresh copy of `value`, cast to `dtype` (an rtx dtype) and moved to like's device (where given)."""
    out = value.detach()
    if like is not None:
        out = out.to(like.device)
    if dtype is not None:
        out = out.to(dtype)
    data = raw(out)
    return wrap(data.copy() if data is raw(value) else data)


# ---- helpers shared by the optimizers ---------------------------------------------------

def _zeros_like(p: Tensor) -> Tensor:
    from rtx.runtime import array_module
    return wrap(array_module(raw(p)).zeros_like(raw(p)))


def _full_like(p: Tensor, value) -> Tensor:
    from rtx.runtime import array_module
    return wrap(array_module(raw(p)).full_like(raw(p), value))


def _scalar_state(value: float = 0.0) -> Tensor:
    """A CPU float32 scalar, as PyTorch keeps 'step' (and NAdam's 'mu_product')."""
    return wrap(np.array(value, dtype=np.float32))


def _advance(step_t: Tensor) -> float:
    """step += 1 on the state's scalar tensor; returns the new value as a Python float."""
    a = raw(step_t)
    a += 1
    increment_version(step_t)
    return float(raw(step_t))


def _as_step_tensor(state: dict, key: str = "step") -> Tensor:
    # A state loaded from an old checkpoint may hold the step as a number.
    v = state[key]
    if not isinstance(v, Tensor):
        v = state[key] = _scalar_state(float(v))
    return v


def _new_state(state: dict, p: Tensor, state_names=(), *, extra=None, step: bool = True) -> None:
    """Fill a parameter's empty state as Optimizer._init_group describes."""
    if step:
        state["step"] = _scalar_state()
    for name, init in (extra or {}).items():
        if init is not None:
            state[name] = init(p)
    for name in state_names:
        state[name] = _zeros_like(p)


def _lr(lr):
    """A learning rate given as a 1-element Tensor becomes its float (updates run on arrays)."""
    if isinstance(lr, Tensor):
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        return float(lr.item())
    return lr


_bump = increment_version  # after each in-place write on raw(p)


def _grad_with_decay(param, grad, weight_decay, maximize):
    """(-grad if maximize else grad) + weight_decay * param, on arrays. Returns the caller's grad
    array itself when there is nothing to add, so callers must treat the result as read-only."""
    if weight_decay != 0:
        g = np.multiply(param, weight_decay)
        (np.subtract if maximize else np.add)(g, grad, out=g)
        return g
    return np.negative(grad) if maximize else grad


def _lerp_(a, b, weight, scratch):
    """a += weight * (b - a), in place (Tensor.lerp_ as PyTorch computes it for weight < 0.5)."""
    np.subtract(b, a, out=scratch)
    scratch *= weight
    a += scratch


def _no_differentiable(differentiable):
    if differentiable:
        raise NotImplementedError("rtx optimizers update parameters in place outside autograd: "
                                  "differentiable=True is not supported")


def _a(t: Tensor):
    """t's array, with a 0-d one viewed as 1-d: NumPy ufuncs return scalars, not arrays, for 0-d
    inputs, and `out=` needs arrays (so does rtx.kernel's CPU path)."""
    d = raw(t)
    return d.reshape(1) if d.ndim == 0 else d
