"""Secure aggregation by pairwise additive masking (Bonawitz et al. 2017, simplified).

Protocol for one round, with clients U (ids are integers):

1. Each client makes a fresh X25519 key pair and sends its public key; the server forwards all
   public keys to all clients.
2. For every pair (i, j), both derive the same 32-byte seed s_ij = HKDF-SHA256(X25519(sk_i, pk_j),
   info = "rtx-secagg" + round + min(i,j) + max(i,j)). The mask m_ij is the ChaCha20 key stream of
   s_ij read as uint64 words.
3. Client i quantises its vector to fixed point (x * 2^scale_bits rounded to int64, read as
   uint64) and sends y_i = q(x_i) + sum_{j>i} m_ij - sum_{j<i} m_ij  (mod 2^64).
4. Clients that did not send (dropped after step 1) leave masks that do not cancel: the server
   announces the dropped set D once; every survivor i reveals s_ik for k in D; the server adds
   back -m_ik for k > i and +m_ik for k < i. Then sum_i y_i = sum_{i survived} q(x_i) mod 2^64,
   exactly.
5. Dequantise: the int64 sum / 2^scale_bits. The only error is rounding at quantisation: at most
   n / 2^(scale_bits+1) per coordinate for n summed clients (each rounding is <= half a step);
   the sum in the ring is exact. `quantize` refuses values that could overflow the int64 sum.

What the server sees of one client, y_i, is q(x_i) plus a sum of uniform uint64 masks whose seeds
it does not know: y_i is uniform on the ring and independent of x_i.

Simplifications, stated: no self-masks with Shamir-shared seeds, so a dropped client whose masked
input arrives after its pairwise seeds were revealed could be unmasked; clients guard against the
obvious attacks instead (seeds are revealed once per round, never for a client whose input the
server acknowledged, and never when fewer than `min_survivors` remain, which would make the sum
one client's update). No authentication of public keys (an honest-but-curious server is assumed).
"""
from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["SecAggClient", "SecAggServer", "SecAggAbort", "quantize", "dequantize", "prg_mask",
           "DEFAULT_SCALE_BITS"]

DEFAULT_SCALE_BITS = 24


class SecAggAbort(RuntimeError):
    """The round cannot finish without revealing something it must not (too few survivors, a
    second request for seeds, a request naming a client whose input arrived)."""


def quantize(x, scale_bits: int = DEFAULT_SCALE_BITS, max_clients: int = 1 << 16) -> np.ndarray:
    """Fixed point: round(x * 2^scale_bits) as int64, read as uint64 (two's complement)."""
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("quantize: the vector holds NaN or inf; secure aggregation needs finite values")
    limit = 2.0 ** (62 - scale_bits) / max_clients  # the sum of max_clients such values stays < 2^62
    big = np.abs(x).max(initial=0.0)
    if big >= limit:
        raise ValueError(f"quantize: |x| up to {big:.3g} would overflow the int64 sum of {max_clients} clients at "
                         f"scale 2^{scale_bits} (limit {limit:.3g}); lower scale_bits or clip the update")
    return np.rint(x * 2.0 ** scale_bits).astype(np.int64).view(np.uint64)


def dequantize(q: np.ndarray, scale_bits: int = DEFAULT_SCALE_BITS) -> np.ndarray:
    """Inverse of quantize for a (sum of) quantised vector(s)."""
    return np.asarray(q, dtype=np.uint64).view(np.int64).astype(np.float64) / 2.0 ** scale_bits


def prg_mask(seed: bytes, size: int) -> np.ndarray:
    """`size` uniform uint64 words: the ChaCha20 key stream under key `seed` (a cryptographic PRG)."""
    if len(seed) != 32:
        raise ValueError(f"prg_mask: expected a 32-byte seed, got {len(seed)} bytes")
    enc = Cipher(algorithms.ChaCha20(seed, b"\0" * 16), mode=None).encryptor()
    return np.frombuffer(enc.update(b"\0" * (8 * size)), dtype=np.uint64).copy()


def _pair_seed(shared: bytes, round_id: int, i: int, j: int) -> bytes:
    lo, hi = min(i, j), max(i, j)
    info = b"rtx-secagg pair mask|" + f"{round_id}|{lo}|{hi}".encode()
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)


class SecAggClient:
    """The client side of one round (make a new one, or call `new_round`, every round)."""

    def __init__(self, cid: int, round_id: int = 0, min_survivors: int = 2):
        self.cid, self.min_survivors = int(cid), min_survivors
        self.new_round(round_id)

    def new_round(self, round_id: int) -> bytes:
        self.round_id = round_id
        self._sk = X25519PrivateKey.generate()
        self._seeds: dict[int, bytes] = {}
        self._revealed = False
        self._sent = False
        return self.public_key

    @property
    def public_key(self) -> bytes:
        return self._sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    def set_peers(self, public_keys: dict[int, bytes]) -> None:
        """Derive the pairwise seeds with every other client of the round."""
        if public_keys.get(self.cid) != self.public_key:
            raise SecAggAbort(f"client {self.cid}: the forwarded key set does not hold this client's own key")
        self._seeds = {j: _pair_seed(self._sk.exchange(X25519PublicKey.from_public_bytes(pk)), self.round_id,
                                     self.cid, j)
                       for j, pk in public_keys.items() if j != self.cid}
        if len(self._seeds) + 1 < self.min_survivors:
            raise SecAggAbort(f"client {self.cid}: {len(self._seeds) + 1} clients in the round, "
                              f"fewer than min_survivors={self.min_survivors}")

    def mask(self, q: np.ndarray) -> np.ndarray:
        """y = q + sum_{j>i} m_ij - sum_{j<i} m_ij (mod 2^64) for a quantised (uint64) vector q."""
        if not self._seeds:
            raise SecAggAbort(f"client {self.cid}: mask() before set_peers()")
        y = np.array(q, dtype=np.uint64, copy=True)
        for j, seed in self._seeds.items():
            m = prg_mask(seed, y.size)
            if j > self.cid:
                y += m
            else:
                y -= m
        self._sent = True
        return y

    def reveal(self, dropped, survivors) -> dict[int, bytes]:
        """The seeds shared with the dropped clients, once, if it is safe."""
        dropped, survivors = set(dropped), set(survivors)
        if self._revealed:
            raise SecAggAbort(f"client {self.cid}: seeds were already revealed this round")
        if self.cid in dropped or dropped & survivors:
            raise SecAggAbort(f"client {self.cid}: the server named clients both dropped and surviving: "
                              f"{sorted(dropped & survivors) or [self.cid]}")
        if len(survivors) < self.min_survivors:
            raise SecAggAbort(f"client {self.cid}: only {len(survivors)} survivors (< {self.min_survivors}): "
                              f"the sum would reveal single updates")
        unknown = dropped - set(self._seeds)
        if unknown:
            raise SecAggAbort(f"client {self.cid}: clients {sorted(unknown)} were not in this round")
        self._revealed = True
        return {k: self._seeds[k] for k in dropped}


class SecAggServer:
    """The server side: collects public keys and masked inputs, unmasks only their sum."""

    def __init__(self, round_id: int = 0, scale_bits: int = DEFAULT_SCALE_BITS):
        self.round_id, self.scale_bits = round_id, scale_bits
        self.public_keys: dict[int, bytes] = {}
        self.masked: dict[int, np.ndarray] = {}

    def add_public_key(self, cid: int, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError(f"client {cid}: expected a 32-byte X25519 public key, got {len(key)} bytes")
        self.public_keys[int(cid)] = bytes(key)

    def add_masked(self, cid: int, y: np.ndarray) -> None:
        if cid not in self.public_keys:
            raise SecAggAbort(f"masked input from client {cid}, which sent no public key this round")
        self.masked[int(cid)] = np.asarray(y, dtype=np.uint64)

    @property
    def survivors(self) -> list[int]:
        return sorted(self.masked)

    @property
    def dropped(self) -> list[int]:
        return sorted(set(self.public_keys) - set(self.masked))

    def unmask(self, revealed: dict[int, dict[int, bytes]]) -> np.ndarray:
        """revealed[i][k] = s_ik from each survivor i for each dropped k. Returns sum_i q(x_i) (uint64)."""
        if not self.masked:
            raise SecAggAbort("no masked inputs arrived this round")
        sizes = {y.size for y in self.masked.values()}
        if len(sizes) != 1:
            raise ValueError(f"masked inputs of different lengths: {sorted(sizes)}")
        total = np.zeros(sizes.pop(), dtype=np.uint64)
        for y in self.masked.values():
            total += y
        for k in self.dropped:
            for i in self.survivors:
                try:
                    seed = revealed[i][k]
                except KeyError:
                    raise SecAggAbort(f"survivor {i} did not reveal its seed with dropped client {k}") from None
                m = prg_mask(seed, total.size)
                # survivor i added +m_ik if k > i, -m_ik if k < i: undo it
                if k > i:
                    total -= m
                else:
                    total += m
        return total

    def unmask_mean(self, revealed, weight_index: int = -1) -> tuple[np.ndarray, float]:
        """For vectors [n_k * x_k..., n_k]: returns (sum n_k x_k / sum n_k, sum n_k)."""
        s = dequantize(self.unmask(revealed), self.scale_bits)
        n = s[weight_index]
        if n <= 0:
            raise SecAggAbort(f"the summed sample count is {n}; expected a positive count")
        return np.delete(s, weight_index) / n, float(n)
