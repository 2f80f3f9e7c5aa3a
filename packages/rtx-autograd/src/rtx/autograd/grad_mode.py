"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode. Thread-local, as in
PyTorch, so a serving thread under no_grad does not switch off a training thread's graph."""
from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    enabled = True
    inference = False


_state = _GradState()


def is_grad_enabled() -> bool:
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _ModeContext:
    """Base for the grad-mode context managers; each also works as a decorator."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args = ()


class no_grad(_ModeContext):
    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = False

    def __exit__(self, *exc):
        _state.enabled = self._prev


class enable_grad(_ModeContext):
    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = True

    def __exit__(self, *exc):
        _state.enabled = self._prev


class set_grad_enabled(_ModeContext):
    """Takes effect at once (usable as a plain function) and restores on exit."""

    def __init__(self, mode: bool):
        self._args = (mode,)
        self._prev = _state.enabled
        _state.enabled = bool(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.enabled = self._prev

    def __call__(self, fn):
        _state.enabled = self._prev  # as a decorator it must not switch the mode now
        return super().__call__(fn)


class inference_mode(_ModeContext):
    """no_grad, plus tensors made inside are marked as inference tensors: using one later in
    a graph that needs its grad raises, as in PyTorch."""

    def __init__(self, mode: bool = True):
        self._args = (mode,)
        self.mode = mode

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        if self.mode:
            _state.enabled = False
            _state.inference = True

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
