"""write_atomic: the one way rtx replaces a file so that a crash leaves the old content or the new,
never a torn mix (used by rtx.config.dump, rtx.hub's registry, rtx.monitoring's CSV log,
rtx.distributed's checkpoints and rtx.etl's Arrow cache; tests/test_workspace.py finds new copies).

It lives here, in a standard-library-only foundation package, because its users include packages
that must stay free of NumPy (rtx-config, rtx-monitoring).

The steps, and why each one is needed:
1. write a temporary file in the destination's folder (os.replace is atomic only within one file
   system, and the folder is the one place sure to be on the destination's);
2. flush and fsync it: otherwise, after a power loss, the rename may be on disk before the data
   and the file comes back empty;
3. os.replace it over the destination (atomic on POSIX and Windows);
4. fsync the folder, so that the rename itself is durable (POSIX; Windows has no folder fsync).
"""
from __future__ import annotations

import contextlib
import os
import secrets

__all__ = ["write_atomic"]


def write_atomic(path, data, *, text: bool | None = None, encoding: str | None = "utf-8",
                 newline: str | None = None) -> None:
    """Replace the file `path` by `data` in one step (see the module's notes).

    data: bytes, a str (written as text in `encoding`), or a callable that is given the open
    temporary file and writes to it (binary unless text=True; with text=True it is opened with
    `encoding` and `newline`, as open() does). The file gets the mode a plain open() would give:
    the existing file's, or 0o666 less the umask for a new one. On any error (the callable's
    included) the destination is left as it was and the temporary file is removed."""
    path = os.fspath(path)
    if text is None:
        text = isinstance(data, str)
    if not callable(data) and not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"write_atomic: data must be bytes, a str or a callable(file), got {type(data).__name__}")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    # O_EXCL on a random name rather than tempfile.mkstemp: mkstemp makes 0o600 files, and a
    # config or checkpoint should be as readable as one written by open().
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        if mode is not None:
            os.chmod(tmp, mode)
        with (os.fdopen(fd, "w", encoding=encoding, newline=newline) if text else os.fdopen(fd, "wb")) as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    if os.name == "nt":  # Windows cannot open a folder to fsync it
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
