"""Training shards out, rows back in: Parquet / WebDataset tar / safetensors writers, and
ShardedIterableDataset, which streams shards into rtx.data.DataLoader with every row exactly once per
epoch across ranks x workers, a seeded shuffle buffer, and mid-epoch resume.

How rows are split: the unit of work is a Parquet row group (or a slice of an in-memory table). Each
epoch the units are put in one order that every process computes alike (a permutation seeded by
seed + epoch when shuffling), and consumer c of C (C = world_size * num_workers, c = rank * num_workers
+ worker_id) takes units c, c + C, c + 2C, ... So each unit, and each row, goes to exactly one consumer,
whatever the shard sizes. Each consumer's row stream is deterministic (its shuffle buffer is seeded by
(seed, epoch, c)), so resuming means skipping the rows a consumer already delivered.
"""
from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rtx.data import DataLoader, IterableDataset, get_worker_info

_POS = "__pos__"      # the tag a row carries through a ShardedLoader: consumer << 40 | sequence number
_SEQ_BITS = 40


# A column whose dictionary outgrows 64 KiB in a row group (ids, measurements) falls back to plain
# encoding early instead of after 1 MiB (pyarrow's default): building a dictionary that is then dropped
# was a sixth of the writer's time in tools/bench/etl.py. Same values out; files about the same size.
PARQUET_OPTIONS = {"dictionary_pagesize_limit": 64 << 10}


def write_parquet_shards(table: pa.Table, directory, rows_per_shard=100_000, row_group_size=None,
                         prefix="part") -> list[str]:
    if rows_per_shard < 1:
        raise ValueError(f"rows_per_shard must be >= 1, got {rows_per_shard}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, start in enumerate(range(0, max(table.num_rows, 1), rows_per_shard)):
        p = d / f"{prefix}-{i:05d}.parquet"
        pq.write_table(table.slice(start, rows_per_shard), str(p),
                       row_group_size=row_group_size or min(rows_per_shard, 64 * 1024), **PARQUET_OPTIONS)
        paths.append(str(p))
    return paths


def _encode(v):
    if isinstance(v, bytes):
        return v, ""
    if isinstance(v, str):
        return v.encode(), ""
    if isinstance(v, (bool, int, float)):
        return str(v).encode(), ""
    return json.dumps(v, default=str).encode(), ".json"


def write_tar_shards(table: pa.Table, directory, rows_per_shard=10_000, key_column=None) -> list[str]:
    """WebDataset layout: shard-000000.tar, ...; sample k is the files `<key>.<column>` (bytes as they
    are, text UTF-8, numbers as text; lists/dicts as `<key>.<column>.json`); nulls write no file."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths, n = [], table.num_rows
    cols = [c for c in table.column_names if c != key_column]
    for i, start in enumerate(range(0, max(n, 1), rows_per_shard)):
        p = d / f"shard-{i:06d}.tar"
        part = table.slice(start, rows_per_shard).to_pylist()
        with tarfile.open(p, "w") as tar:
            for j, row in enumerate(part):
                key = str(row[key_column]) if key_column else f"{start + j:09d}"
                if "." in key or "/" in key:
                    raise ValueError(f"tar shard keys may not contain '.' or '/' (WebDataset splits on them): {key!r}")
                for c in cols:
                    if row[c] is None:
                        continue
                    data, ext = _encode(row[c])
                    info = tarfile.TarInfo(f"{key}.{c}{ext}")
                    info.size = len(data)
                    info.mtime = 0  # reproducible shards: same rows, same bytes
                    tar.addfile(info, io.BytesIO(data))
        paths.append(str(p))
    return paths


def write_safetensors(table: pa.Table, path) -> str:
    """One tensor per column (numeric or bool; fixed-size lists become 2-D). Text columns are refused."""
    from safetensors.numpy import save_file
    arrays = {}
    for name in table.column_names:
        col = table[name].combine_chunks()
        if col.null_count:
            raise ValueError(f"to_safetensors: column {name!r} has {col.null_count} nulls; fill or drop them first")
        t = col.type
        if pa.types.is_fixed_size_list(t):
            arrays[name] = col.flatten().to_numpy(zero_copy_only=False).reshape(len(col), t.list_size)
        elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
            arrays[name] = col.to_numpy(zero_copy_only=False)
        else:
            raise TypeError(f"to_safetensors: column {name!r} has type {t}; only numbers, bools and "
                            f"fixed-size lists become tensors (tokenize or encode it first)")
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path))
    return str(path)


def _env_rank():
    for r, w in (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                 ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS")):
        if r in os.environ and w in os.environ:
            return int(os.environ[r]), int(os.environ[w])
    return 0, 1


class ShardedIterableDataset(IterableDataset):
    """Rows (dicts) of Parquet shards (or Arrow IPC files, or in-memory tables) for rtx.data.DataLoader.

    rank/world_size: from the arguments, else RANK/WORLD_SIZE, Open MPI, MPICH (PMI_*) or Slurm variables.
    shuffle_buffer > 0 shuffles units each epoch and rows within a buffer of that many rows; set_epoch(e)
    changes the order, as DistributedSampler. state_dict()/load_state_dict() resume mid-epoch: iterate the
    dataset directly, or through `.loader(...)` (a DataLoader that keeps the account across workers)."""

    def __init__(self, paths, *, shuffle_buffer: int = 0, seed: int = 0, rank: int | None = None,
                 world_size: int | None = None, columns=None, table_unit_rows: int = 4096):
        er, ew = _env_rank()
        self.rank = er if rank is None else int(rank)
        self.world_size = ew if world_size is None else int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank must be in [0, world_size), got rank={self.rank}, world_size={self.world_size}")
        if isinstance(paths, (str, os.PathLike, pa.Table)):
            paths = [paths]
        self.sources = [p if isinstance(p, pa.Table) else str(p) for p in paths]
        self.shuffle_buffer, self.seed, self.columns = int(shuffle_buffer), int(seed), columns
        self.units = []  # (source index, row group or (offset, length))
        for i, s in enumerate(self.sources):
            if isinstance(s, pa.Table):
                self.units += [(i, (o, table_unit_rows)) for o in range(0, s.num_rows, table_unit_rows)]
            elif s.endswith((".arrow", ".feather", ".ipc")):
                n = pa.ipc.open_file(pa.memory_map(s, "r")).num_record_batches
                self.units += [(i, ("batch", b)) for b in range(n)]
            else:
                try:
                    n = pq.ParquetFile(s).num_row_groups
                except (pa.ArrowInvalid, OSError) as e:
                    raise ValueError(f"{s}: not a readable Parquet file: {e}") from None
                self.units += [(i, g) for g in range(n)]
        self.epoch = 0
        self.num_workers = 0
        self.consumed: dict[int, int] = {}  # consumer -> rows it has delivered this epoch
        self._tag = False

    def set_epoch(self, epoch: int):
        self.epoch = int(epoch)
        self.consumed = {}

    def _read_unit(self, unit) -> pa.Table:
        i, u = unit
        s = self.sources[i]
        if isinstance(s, pa.Table):
            t = s.slice(*u)
        elif isinstance(u, tuple):
            t = pa.Table.from_batches([pa.ipc.open_file(pa.memory_map(s, "r")).get_batch(u[1])])
        else:
            t = pq.ParquetFile(s).read_row_group(u, columns=self.columns)
        return t.select(self.columns) if self.columns is not None and t.column_names != list(self.columns) else t

    def _consumer(self):
        info = get_worker_info()
        if info is None:
            return self.rank, self.world_size
        return self.rank * info.num_workers + info.id, self.world_size * info.num_workers

    def _stream(self, c, C):
        order = np.arange(len(self.units))
        if self.shuffle_buffer > 0:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.units))
        mine = [self.units[k] for k in order[c::C]]
        rng = np.random.default_rng([self.seed, self.epoch, c, C])
        buf = []
        for unit in mine:
            for row in self._read_unit(unit).to_pylist():
                if self.shuffle_buffer <= 0:
                    yield row
                elif len(buf) < self.shuffle_buffer:
                    buf.append(row)
                else:
                    j = rng.integers(len(buf))
                    yield buf[j]
                    buf[j] = row
        rng.shuffle(buf)
        yield from buf

    def __iter__(self):
        c, C = self._consumer()
        if self.consumed and get_worker_info() is not None and self.num_workers and \
                C != self.world_size * self.num_workers:
            raise ValueError(f"cannot resume with a different number of workers: the state was saved with "
                             f"{self.num_workers}, this DataLoader has {C // self.world_size}")
        skip = self.consumed.get(c, 0)
        for seq, row in enumerate(self._stream(c, C)):
            if seq < skip:
                continue
            if self._tag:
                row[_POS] = (c << _SEQ_BITS) | seq
            else:
                self.consumed[c] = seq + 1
            yield row
        if not self._tag:
            self.consumed.pop(c, None)  # this consumer's epoch is complete: a new iteration starts over

    def __len__(self):
        raise TypeError("ShardedIterableDataset has no len(): rows per rank depend on the shards")

    def num_rows(self) -> int:
        total = 0
        for s in self.sources:
            if isinstance(s, pa.Table):
                total += s.num_rows
            elif s.endswith((".arrow", ".feather", ".ipc")):
                total += pa.ipc.open_file(pa.memory_map(s, "r")).read_all().num_rows
            else:
                total += pq.ParquetFile(s).metadata.num_rows
        return total

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "seed": self.seed, "rank": self.rank, "world_size": self.world_size,
                "num_workers": self.num_workers, "num_units": len(self.units),
                "consumed": {str(k): v for k, v in self.consumed.items()}}

    def load_state_dict(self, state: dict):
        for key in ("seed", "rank", "world_size", "num_units"):
            mine = self.seed if key == "seed" else self.rank if key == "rank" else \
                self.world_size if key == "world_size" else len(self.units)
            if state[key] != mine:
                raise ValueError(f"load_state_dict: the state has {key}={state[key]}, this dataset {mine}")
        self.epoch, self.num_workers = state["epoch"], state["num_workers"]
        self.consumed = {int(k): v for k, v in state["consumed"].items()}

    def loader(self, batch_size=1, num_workers=0, **kwargs) -> "ShardedLoader":
        return ShardedLoader(self, batch_size=batch_size, num_workers=num_workers, **kwargs)


class ShardedLoader:
    """rtx.data.DataLoader over a ShardedIterableDataset that records which rows the training loop has
    received, so `state_dict()` is exact even though workers read ahead (prefetched batches that were
    never handed out are delivered again after a resume)."""

    def __init__(self, dataset: ShardedIterableDataset, batch_size=1, num_workers=0, **kwargs):
        if not isinstance(dataset, ShardedIterableDataset):
            raise TypeError(f"ShardedLoader needs a ShardedIterableDataset, got {type(dataset).__name__}")
        if kwargs.get("persistent_workers"):
            raise ValueError("ShardedLoader starts fresh workers each epoch (they copy the resume state)")
        self.dataset, self.batch_size, self.num_workers, self.kwargs = dataset, batch_size, num_workers, kwargs

    def __iter__(self):
        ds = self.dataset
        if ds.consumed and ds.num_workers != self.num_workers:
            raise ValueError(f"cannot resume with a different number of workers: the state was saved with "
                             f"{ds.num_workers}, this loader has {self.num_workers}")
        ds.num_workers, ds._tag = self.num_workers, True
        try:
            loader = DataLoader(ds, batch_size=self.batch_size, num_workers=self.num_workers, **self.kwargs)
            for batch in loader:
                p = batch.pop(_POS)
                pos = np.atleast_1d(np.asarray(p.numpy() if hasattr(p, "numpy") else p, dtype=np.int64))
                for c, seq in zip(pos >> _SEQ_BITS, pos & ((1 << _SEQ_BITS) - 1)):
                    ds.consumed[int(c)] = max(ds.consumed.get(int(c), 0), int(seq) + 1)
                yield batch
            ds.consumed = {}  # the epoch is complete
        finally:
            ds._tag = False

    def state_dict(self) -> dict:
        return self.dataset.state_dict()

    def load_state_dict(self, state: dict):
        self.dataset.load_state_dict(state)
