"""Symbolic sizes. A traced graph sees concrete ints; a size that followed the batch (or
another marked input dim) is found by tracing again with that dim one larger and fitting
the difference: every int that changed becomes a `SymInt`, an integer multilinear
polynomial in the symbols (`batch`, `4*batch`, `batch*seq + 1`). Reshape targets, slice
bounds, split points and shapes recorded in the graph are rewritten this way, so the graph
runs at another batch size with the same primitives."""
from __future__ import annotations

import copy
import itertools

import numpy as np


class NotGeneralizable(Exception):
    """The traces at different sizes differ in a way no symbolic size explains."""


class SymInt:
    """sum(coeff * prod(symbols)) over multilinear monomials; terms: {frozenset(names): int}."""

    __slots__ = ("terms",)

    def __init__(self, terms):
        self.terms = {frozenset(k): int(v) for k, v in dict(terms).items() if v}

    @classmethod
    def symbol(cls, name):
        return cls({frozenset([name]): 1})

    @property
    def symbols(self):
        return frozenset().union(*self.terms) if self.terms else frozenset()

    def evaluate(self, env):
        total = 0
        for mono, c in self.terms.items():
            p = c
            for name in mono:
                if name not in env:
                    raise KeyError(f"no value for the symbolic size {name!r} (known: {sorted(env)})")
                p *= env[name]
            total += p
        return total

    def as_affine(self):
        """(coefficient, symbol, constant) when the expression is c*symbol + k, else None."""
        lin = [(m, c) for m, c in self.terms.items() if m]
        if len(lin) != 1 or len(lin[0][0]) != 1:
            return None
        (mono, c), = lin
        return c, next(iter(mono)), self.terms.get(frozenset(), 0)

    def __eq__(self, other):
        return isinstance(other, SymInt) and self.terms == other.terms

    def __hash__(self):
        return hash(frozenset(self.terms.items()))

    def __repr__(self):
        parts = []
        for mono, c in sorted(self.terms.items(), key=lambda kv: (-len(kv[0]), sorted(kv[0]))):
            name = "*".join(sorted(mono))
            if not mono:
                parts.append(str(c))
            elif c == 1:
                parts.append(name)
            elif c == -1:
                parts.append("-" + name)
            else:
                parts.append(f"{c}*{name}")
        return " + ".join(parts).replace("+ -", "- ") if parts else "0"

    __str__ = __repr__


def fit_int(values, base):
    """The int or SymInt that takes values[S] when each symbol in S is one larger than base.
    values: {frozenset(symbols grown): int}; base: {symbol: size in the first trace}."""
    first = values[frozenset()]
    if all(v == first for v in values.values()):
        return first
    # Mixed differences give the coefficients in the basis prod(x_i - b_i); expand to monomials.
    delta = {}
    for s in values:
        delta[s] = sum((-1) ** (len(s) - len(t)) * values[frozenset(t)]
                       for r in range(len(s) + 1) for t in itertools.combinations(sorted(s), r))
    terms = {}
    for s, d in delta.items():
        if not d:
            continue
        for r in range(len(s) + 1):
            for t in itertools.combinations(sorted(s), r):
                coeff = d
                for name in s - frozenset(t):
                    coeff *= -base[name]
                terms[frozenset(t)] = terms.get(frozenset(t), 0) + coeff
    return SymInt(terms)


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _fields(obj):
    if hasattr(obj, "__dict__"):
        return list(vars(obj))
    return [s for klass in type(obj).__mro__ for s in getattr(klass, "__slots__", ()) if hasattr(obj, s)]


def merge(objs, base, where="value"):
    """One structure standing for every trace's version of it: equal parts stay, ints that
    follow the symbols become SymInts, anything else that differs raises NotGeneralizable.
    objs: {frozenset(symbols grown): object}."""
    first = objs[frozenset()]
    others = list(objs.values())
    if all(o is first for o in others):
        return first
    if _is_int(first) and all(_is_int(o) for o in others):
        return fit_int({k: int(v) for k, v in objs.items()}, base)
    kinds = {type(o) for o in others}
    if len(kinds) != 1:
        raise NotGeneralizable(f"{where} changes type with the input size: {sorted(k.__name__ for k in kinds)}")
    if isinstance(first, np.ndarray):
        if all(o.shape == first.shape and o.dtype == first.dtype and np.array_equal(o, first, equal_nan=True)
               for o in others):
            return first
        if all(is_arange(o) and o.dtype == first.dtype for o in others):
            return SymArange(fit_int({k: len(o) for k, o in objs.items()}, base), first.dtype)
        raise NotGeneralizable(f"{where}: an array of shape {first.shape} depends on the input size or values")
    if isinstance(first, (tuple, list)):
        if any(len(o) != len(first) for o in others):
            raise NotGeneralizable(f"{where}: a sequence changes length with the input size "
                                   f"({sorted({len(o) for o in others})})")
        items = [merge({k: o[i] for k, o in objs.items()}, base, where) for i in range(len(first))]
        if all(a is b for a, b in zip(items, first)):
            return first
        if isinstance(first, list):
            return items
        return type(first)(*items) if hasattr(first, "_fields") else tuple(items)
    if isinstance(first, dict):
        if any(o.keys() != first.keys() for o in others):
            raise NotGeneralizable(f"{where}: a dict changes keys with the input size")
        return {key: merge({k: o[key] for k, o in objs.items()}, base, where) for key in first}
    if isinstance(first, slice):
        parts = [merge({k: getattr(o, f) for k, o in objs.items()}, base, where) for f in ("start", "stop", "step")]
        return SymSlice(*parts) if any(isinstance(p, SymInt) for p in parts) else first
    if isinstance(first, (float, complex, str, bytes, bool, type(None), np.generic, np.dtype, type)):
        if all(o == first or (o != o and first != first) for o in others):
            return first
        raise NotGeneralizable(f"{where}: the value {first!r} changes with the input size or values")
    try:
        if all(o == first for o in others):
            return first
    except Exception:  # objects without a meaningful == (or an array-valued one)
        pass
    fields = _fields(first)
    if not fields:
        raise NotGeneralizable(f"{where}: a {type(first).__name__} differs between traces")
    out = copy.copy(first)
    changed = False
    for f in fields:
        v = merge({k: getattr(o, f) for k, o in objs.items()}, base, f"{where}.{f}")
        if v is not getattr(first, f):
            object.__setattr__(out, f, v)
            changed = True
    return out if changed else first


def is_arange(a):
    """Whether a is the 1-D array 0, 1, ..., n-1 (positions made with arange(seq_len))."""
    return a.ndim == 1 and a.size > 0 and a.dtype.kind in "iuf" and np.array_equal(a, np.arange(a.size))


class SymArange:
    """arange(n) where n is symbolic (an int, or a SymInt); resolves to a NumPy array."""

    __slots__ = ("n", "dtype")

    def __init__(self, n, dtype):
        self.n, self.dtype = n, np.dtype(dtype)

    def array(self, env):
        n = self.n.evaluate(env) if isinstance(self.n, SymInt) else self.n
        return np.arange(n, dtype=self.dtype)

    def __repr__(self):
        return f"arange({self.n})"

    def __eq__(self, other):
        return isinstance(other, SymArange) and self.n == other.n and self.dtype == other.dtype

    def __hash__(self):
        return hash((self.n, self.dtype))


class SymSlice:
    """A slice whose bounds are symbolic; resolves to a plain slice."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def __repr__(self):
        return f"slice({self.start}, {self.stop}, {self.step})"

    def __eq__(self, other):
        return isinstance(other, SymSlice) and (self.start, self.stop, self.step) == (other.start, other.stop,
                                                                                     other.step)

    def __hash__(self):
        return hash((self.start, self.stop, self.step))


def has_symbols(obj, _depth=0):
    """Whether a (nested) attribute holds a SymInt anywhere."""
    if isinstance(obj, (SymInt, SymSlice, SymArange)):
        return True
    if _depth > 8:
        return False
    if isinstance(obj, (tuple, list)):
        return any(has_symbols(o, _depth + 1) for o in obj)
    if isinstance(obj, dict):
        return any(has_symbols(o, _depth + 1) for o in obj.values())
    if isinstance(obj, (int, float, str, bool, type(None), np.ndarray, np.generic, slice, type)):
        return False
    return any(has_symbols(getattr(obj, f, None), _depth + 1) for f in _fields(obj))


def resolve(obj, env, _depth=0):
    """The structure with every SymInt evaluated in env (a new object where something changed)."""
    if isinstance(obj, SymInt):
        return obj.evaluate(env)
    if isinstance(obj, SymSlice):
        return slice(resolve(obj.start, env), resolve(obj.stop, env), resolve(obj.step, env))
    if isinstance(obj, SymArange):
        return obj.array(env)
    if isinstance(obj, (int, float, str, bool, type(None), np.ndarray, np.generic, slice, type)) or _depth > 8:
        return obj
    if isinstance(obj, (tuple, list)):
        items = [resolve(o, env, _depth + 1) for o in obj]
        if isinstance(obj, list):
            return items
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, dict):
        return {k: resolve(v, env, _depth + 1) for k, v in obj.items()}
    if not has_symbols(obj, _depth):
        return obj
    out = copy.copy(obj)
    for f in _fields(obj):
        object.__setattr__(out, f, resolve(getattr(obj, f), env, _depth + 1))
    return out
