"""Filesystem primitives of the registry: the writers' lock, atomic writes, streaming sha256.

Readers take no lock: everything they read is either a complete directory moved into place
by one rename, or a small file replaced by one os.replace, so they see the old state or the
new one, never a half-written one."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os

from rtx.config.files import write_atomic

_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks (artifacts can be larger than memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def copy_hashed(src: str | os.PathLike, dst: str | os.PathLike) -> tuple[str, int]:
    """Copy src to dst, hashing the bytes as they are written: (sha256, size) of what dst holds."""
    h, size = hashlib.sha256(), 0
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        while chunk := fi.read(_CHUNK):
            h.update(chunk)
            fo.write(chunk)
            size += len(chunk)
        fo.flush()
        os.fsync(fo.fileno())
    return h.hexdigest(), size


def write_json(path: str | os.PathLike, obj) -> None:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


@contextlib.contextmanager
def locked(lock_path: str | os.PathLike):
    """Hold the registry-wide writer lock (fcntl.flock on `lock_path`) for the block.

    flock locks belong to an open file description, so two threads of one process that each
    enter this block also exclude each other, as two processes do. The lock goes with the
    process if it dies, so a crashed writer never leaves the registry locked."""
    try:
        import fcntl  # POSIX only; imported here so that reading a registry works everywhere
    except ImportError:
        from rtx.hub.errors import RegistryError

        raise RegistryError("writing to a registry needs fcntl.flock (POSIX: Linux, macOS); this platform "
                            "can only read registries") from None

    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
