"""KVCache: the keys and values of the positions a decoder has already seen, per layer.

    cache = KVCache()
    k_all, v_all = cache.append(layer_idx, k_new, v_new)   # (batch, kv_heads, seq, head_dim) each
    cache.length()          # positions held (layer 0 unless a layer is named)
    cache.crop(n)           # keep the first n positions (n < 0: drop the last -n)
    cache.reorder(beam_idx) # pick batch rows (beam search), for every layer

The models fill it (past_key_values=cache, use_cache=True) and return it; a generation loop
only passes it back, crops it (speculative decoding, stop strings) or reorders it (beams).

Storage: without autograd, each layer's keys and values live in a buffer that grows by
doubling along the sequence axis, so appending one token copies one token, not the whole
history (HF's DynamicCache concatenates, which is quadratic over a long generation). What
append returns is a view of that buffer; it stays valid until the next crop or reorder, which
may overwrite the positions past the new end. When the appended tensors need a gradient (a
cache used in training), the layer switches to plain concatenation so the graph is kept.
"""
from __future__ import annotations

from rtx.extend import Tensor, grad_mode, raw, wrap
from rtx.runtime import array_module

__all__ = ["KVCache"]

_SEQ = -2  # keys/values are (batch, kv_heads, seq, head_dim)


class _Layer:
    __slots__ = ("k", "v", "n", "graph")

    def __init__(self):
        self.k = self.v = None  # buffers (arrays) or, in graph mode, Tensors
        self.n = 0
        self.graph = False


class KVCache:
    """Per-layer key/value tensors of shape (batch, kv_heads, seq, head_dim)."""

    def __init__(self, num_layers: int | None = None):
        self._layers: list[_Layer] = [_Layer() for _ in range(num_layers or 0)]

    # ---- filling --------------------------------------------------------------------------
    def append(self, layer_idx: int, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Add `key`/`value` (batch, kv_heads, new, head_dim) after what layer `layer_idx` holds
        and return all of that layer's keys and values (batch, kv_heads, length, head_dim)."""
        _check_kv(key, value)
        if layer_idx < 0:
            raise IndexError(f"KVCache.append: layer_idx must be >= 0, got {layer_idx}")
        while len(self._layers) <= layer_idx:
            self._layers.append(_Layer())
        layer = self._layers[layer_idx]
        if layer.n:
            held = tuple(layer.k.shape)
            if (held[0], held[1], held[3]) != (key.shape[0], key.shape[1], key.shape[3]):
                raise ValueError(f"KVCache.append: layer {layer_idx} holds keys of shape (batch, kv_heads, seq, "
                                 f"head_dim) = {(held[0], held[1], layer.n, held[3])}; the new keys "
                                 f"{tuple(key.shape)} differ outside the sequence axis")
            if layer.k.dtype != raw(key).dtype and not layer.graph:
                raise ValueError(f"KVCache.append: layer {layer_idx} holds {layer.k.dtype} keys, got {key.dtype}")
        needs_graph = grad_mode.enabled and (key.requires_grad or value.requires_grad)
        if needs_graph and not layer.graph:
            if layer.n:  # switch to concatenation, starting from what the buffer holds
                layer.k, layer.v = (wrap(b[:, :, :layer.n]) for b in (layer.k, layer.v))
            layer.graph = True
        if layer.graph:
            import rtx
            layer.k = key if layer.k is None else rtx.cat([layer.k, key], _SEQ)
            layer.v = value if layer.v is None else rtx.cat([layer.v, value], _SEQ)
            layer.n = layer.k.shape[_SEQ]
            return layer.k, layer.v
        end = layer.n + key.shape[_SEQ]
        if layer.k is None or end > layer.k.shape[_SEQ]:
            xp = array_module(raw(key))
            cap = max(end, 2 * (layer.k.shape[_SEQ] if layer.k is not None else 0), 16)
            bufs = []
            for old, t in ((layer.k, key), (layer.v, value)):
                shape = list(t.shape)
                shape[_SEQ] = cap
                b = xp.empty(shape, dtype=raw(t).dtype)
                if layer.n:
                    b[:, :, :layer.n] = old[:, :, :layer.n]
                bufs.append(b)
            layer.k, layer.v = bufs
        layer.k[:, :, layer.n:end] = raw(key)
        layer.v[:, :, layer.n:end] = raw(value)
        layer.n = end
        return wrap(layer.k[:, :, :end]), wrap(layer.v[:, :, :end])

    def update(self, key: Tensor, value: Tensor, layer_idx: int) -> tuple[Tensor, Tensor]:
        """HF's spelling of append (argument order of DynamicCache.update)."""
        return self.append(layer_idx, key, value)

    # ---- reading --------------------------------------------------------------------------
    def length(self, layer_idx: int = 0) -> int:
        """Positions held by layer `layer_idx` (0 for an empty cache)."""
        if layer_idx >= len(self._layers):
            return 0
        return self._layers[layer_idx].n

    get_seq_length = length  # HF's name

    def __len__(self) -> int:
        """Number of layers that hold something (as HF's caches)."""
        return sum(1 for layer in self._layers if layer.n)

    def __getitem__(self, layer_idx: int) -> tuple[Tensor, Tensor]:
        layer = self._layers[layer_idx]
        if not layer.n:
            raise IndexError(f"KVCache: layer {layer_idx} holds nothing yet")
        if layer.graph:
            return layer.k, layer.v
        return wrap(layer.k[:, :, :layer.n]), wrap(layer.v[:, :, :layer.n])

    def __iter__(self):
        for i in range(len(self._layers)):
            if self._layers[i].n:
                yield self[i]

    def to_legacy_cache(self) -> tuple[tuple[Tensor, Tensor], ...]:
        """((k, v) per layer), the tuple layout of older HF code."""
        return tuple(self)

    @classmethod
    def from_legacy_cache(cls, past) -> KVCache:
        cache = cls()
        for i, (k, v) in enumerate(past or ()):
            cache.append(i, k, v)
        return cache

    # ---- editing --------------------------------------------------------------------------
    def crop(self, max_length: int) -> None:
        """Keep the first `max_length` positions of every layer; a negative value drops that
        many from the end (HF's DynamicCache.crop)."""
        for layer in self._layers:
            n = max_length if max_length >= 0 else max(layer.n + max_length, 0)
            if n >= layer.n:
                continue
            if layer.graph:
                layer.k, layer.v = layer.k[:, :, :n], layer.v[:, :, :n]
            layer.n = n

    def reorder(self, beam_idx) -> None:
        """Select batch rows for every layer: row i becomes the old row beam_idx[i] (beam search;
        HF's reorder_cache). beam_idx: a 1-D integer Tensor, array or list."""
        for layer in self._layers:
            if not layer.n:
                continue
            if layer.graph:
                idx = beam_idx if isinstance(beam_idx, Tensor) else None
                import rtx
                if idx is None:
                    idx = rtx.tensor(list(beam_idx), dtype=rtx.int64, device=layer.k.device)
                layer.k, layer.v = layer.k.index_select(0, idx), layer.v.index_select(0, idx)
            else:
                xp = array_module(layer.k)
                idx = raw(beam_idx) if isinstance(beam_idx, Tensor) else beam_idx
                idx = xp.asarray(idx, dtype=xp.int64)
                if idx.ndim != 1:
                    raise ValueError(f"KVCache.reorder: beam_idx must be 1-D, got shape {tuple(idx.shape)}")
                layer.k, layer.v = layer.k[idx], layer.v[idx]

    select = reorder  # batch_select_indices in HF

    def __repr__(self):
        held = [layer.n for layer in self._layers]
        return f"KVCache(layers={len(self._layers)}, lengths={held})"


def _check_kv(key, value):
    for name, t in (("key", key), ("value", value)):
        if type(t) is not Tensor:
            raise TypeError(f"KVCache.append: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"KVCache.append: {name} must be (batch, kv_heads, seq, head_dim), got shape "
                             f"{tuple(t.shape)}")
    if tuple(key.shape[:3]) != tuple(value.shape[:3]):
        raise ValueError(f"KVCache.append: key {tuple(key.shape)} and value {tuple(value.shape)} must agree in "
                         f"batch, heads and sequence length")
