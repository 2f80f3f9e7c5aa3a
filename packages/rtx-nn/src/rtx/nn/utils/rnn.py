"""Packed sequences, as torch.nn.utils.rnn: PackedSequence, pack_padded_sequence,
pad_packed_sequence, pad_sequence, pack_sequence, unpad_sequence, unpack_sequence.

A PackedSequence holds the valid steps of a batch of variable-length sequences, time step by
time step: `data` is (sum of lengths, *), `batch_sizes[t]` the number of sequences still
running at step t (an int64 CPU tensor), and `sorted_indices` / `unsorted_indices` the
permutation from the caller's batch order to decreasing length and back (None when the input
was already sorted). Packing and padding are each one gather / scatter over a flat index, so
gradients flow through them in one step.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import rtx
from rtx.extend import Primitive, Tensor, raw, wrap
from rtx.runtime import array_module

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence", "invert_permutation"]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def invert_permutation(permutation):
    if permutation is None:
        return None
    a = raw(permutation)
    out = array_module(a).empty_like(a)
    out[a] = array_module(a).arange(a.shape[0], dtype=a.dtype)
    return wrap(out)


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices); build it with
    pack_padded_sequence or pack_sequence rather than by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)), PyTorch's legacy form
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise TypeError("PackedSequence(data, batch_sizes, ...): batch_sizes is required")
            data, batch_sizes = data
        if type(batch_sizes) is not Tensor or batch_sizes.dtype != rtx.int64 or batch_sizes.device.type != "cpu":
            raise ValueError("PackedSequence: batch_sizes should always be an int64 tensor on the CPU, got "
                             f"{batch_sizes!r}")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _map(self, fn, indices_too=False):
        moved = fn(self.data)
        if indices_too:
            def move(t):
                return None if t is None else t.to(moved.device)
            return type(self)(moved, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))
        return type(self)(moved, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return self._map(lambda _: data, indices_too=True)

    def cuda(self, *args, **kwargs):
        return self._map(lambda d: d.cuda(*args, **kwargs), indices_too=True)

    def cpu(self):
        return self._map(lambda d: d.cpu(), indices_too=True)

    def double(self):
        return self._map(lambda d: d.double())

    def float(self):
        return self._map(lambda d: d.float())

    def half(self):
        return self._map(lambda d: d.half())

    def long(self):
        return self._map(lambda d: d.long())

    def int(self):
        return self._map(lambda d: d.int())

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


# ---- the flat gather/scatter -----------------------------------------------------------------------


class PadPacked(Primitive):
    """out = full((rows, *data.shape[1:]), fill); out[index] = data. Backward gathers."""

    @staticmethod
    def forward(ctx, data, *, index, rows, fill):
        a = raw(data)
        xp = array_module(a)
        ctx.index = index
        out = xp.full((rows,) + a.shape[1:], fill, dtype=a.dtype)
        out[index] = a
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad[wrap(ctx.index)]


def _scatter(data, index, rows, fill):
    return PadPacked.apply(data, index=array_module(raw(data)).asarray(index), rows=rows, fill=fill)


def _gather(flat, index):
    return flat[wrap(array_module(raw(flat)).asarray(index))]


def _flat_index(batch_sizes, order, total, batch_first):
    """Flat row, in a (total, N) or (N, total) padded layout, of each packed row: packed row j
    of step t belongs to batch element order[j]."""
    n = int(batch_sizes[0]) if batch_sizes.size else 0
    t = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    j = np.concatenate([np.arange(b) for b in batch_sizes]) if batch_sizes.size else np.zeros(0, np.int64)
    b = order[j]
    return (b * total + t) if batch_first else (t * n + b)


def _lengths_array(lengths):
    if type(lengths) is Tensor:
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D tensor, got shape {list(lengths.shape)}")
        arr = lengths.__array__()
    else:
        arr = np.asarray(list(lengths))
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"'lengths' must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64).reshape(-1)


def _order(sorted_indices, n):
    return np.arange(n) if sorted_indices is None else sorted_indices.__array__().astype(np.int64)


# ---- public API ----------------------------------------------------------------------------------


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (L, N, *) — or (N, L, *) with batch_first — of sequences of the given
    lengths. With enforce_sorted=True the lengths must be non-increasing; otherwise the batch is
    sorted here and the permutation kept in the result."""
    if type(input) is not Tensor:
        raise TypeError(f"pack_padded_sequence(): input must be a Tensor, got {type(input).__name__}")
    if input.ndim < 2:
        raise ValueError(f"pack_padded_sequence(): expected input of shape (L, N, *) or (N, L, *), got "
                         f"{list(input.shape)}")
    lens = _lengths_array(lengths)
    total, n = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    if lens.size != n:
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
                         f"(batch_size={n})")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_np = None
    else:
        sorted_np = np.argsort(-lens, kind="stable")
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if lens.size and lens.max() > total:
        raise RuntimeError(f"pack_padded_sequence(): a length ({lens.max()}) exceeds the padded sequence length "
                           f"({total})")
    order = np.arange(n) if sorted_np is None else sorted_np
    slens = lens[order]
    max_len = int(slens[0]) if slens.size else 0
    batch_sizes = (slens[None, :] > np.arange(max_len)[:, None]).sum(1).astype(np.int64)
    idx = _flat_index(batch_sizes, order, total, batch_first)
    data = _gather(input.reshape(total * n, *input.shape[2:]), idx)
    sorted_indices = None
    if sorted_np is not None:
        sorted_indices = wrap(array_module(raw(input)).asarray(sorted_np.astype(np.int64)))
    return PackedSequence(data, wrap(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: (padded (T, N, *) or (N, T, *), lengths) in the batch
    order the sequences were packed from; lengths is an int64 CPU tensor."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence(): expected a PackedSequence, got {type(sequence).__name__}")
    batch_sizes = sequence.batch_sizes.__array__().astype(np.int64)
    max_len = batch_sizes.size
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = int(total_length)
    n = int(batch_sizes[0]) if batch_sizes.size else 0
    order = _order(sequence.sorted_indices, n)
    idx = _flat_index(batch_sizes, order, max_len, batch_first)
    data = sequence.data
    flat = _scatter(data, idx, max_len * n, padding_value)
    padded = flat.reshape(*((n, max_len) if batch_first else (max_len, n)), *data.shape[1:])
    lengths = np.empty(n, np.int64)
    lengths[order] = (batch_sizes[None, :] > np.arange(n)[:, None]).sum(1)
    return padded, wrap(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, N, *) — (N, max L, *) with batch_first —
    padding with padding_value on the right (or the left)."""
    if type(sequences) is Tensor:
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    trailing = tuple(sequences[0].shape[1:])
    for i, s in enumerate(sequences):
        if type(s) is not Tensor:
            raise TypeError(f"pad_sequence(): element {i} is {type(s).__name__}, expected a Tensor")
        if s.ndim == 0 or tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence(): every sequence must have shape (L_i, {', '.join(map(str, trailing))}"
                               f"{',' if len(trailing) == 1 else ''}), got {list(s.shape)} for element {i} and "
                               f"{list(sequences[0].shape)} for element 0")
    lens = np.array([s.shape[0] for s in sequences], np.int64)
    n, total = len(sequences), int(lens.max())
    b = np.repeat(np.arange(n), lens)
    t = np.concatenate([np.arange(k) + (total - k if padding_side == "left" else 0) for k in lens])
    idx = b * total + t if batch_first else t * n + b
    flat = _scatter(rtx.cat(sequences, 0), idx, total * n, padding_value)
    return flat.reshape(*((n, total) if batch_first else (total, n)), *trailing)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of (L_i, *) tensors (decreasing lengths unless enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of (L_i, *) tensors inside a padded batch."""
    lens = _lengths_array(lengths)
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(k)] for i, k in enumerate(lens)]


def unpack_sequence(packed_sequences):
    """The list of (L_i, *) tensors inside a PackedSequence, in the original batch order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


# ---- for the recurrent layers ----------------------------------------------------------------------


def _repack(padded, like):
    """Pack a time-major (T, N, *) tensor in the caller's batch order with the layout (batch_sizes,
    sorted_indices) of `like`."""
    batch_sizes = like.batch_sizes.__array__().astype(np.int64)
    total, n = padded.shape[0], padded.shape[1]
    idx = _flat_index(batch_sizes, _order(like.sorted_indices, n), total, False)
    data = _gather(padded.reshape(total * n, *padded.shape[2:]), idx)
    return PackedSequence(data, like.batch_sizes, like.sorted_indices, like.unsorted_indices)
