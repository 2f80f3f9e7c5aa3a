"""Several processes register and promote at once: the registry ends consistent.

Each process registers its own versions of one shared model (and of a private one), promoting
as it goes, and registers then removes versions of a scratch model; meanwhile a reader process
lists and verifies continuously and must never see a half-written version. Processes are
forked (the test's functions need not be importable)."""
import multiprocessing as mp
import os

import pytest

from rtx.hub import ModelNotFoundError, Registry

WRITERS, VERSIONS = 4, 4


def _writer(root, onnx_path, w, errors):
    try:
        reg = Registry(root)
        for i in range(VERSIONS):
            v = f"{w}.{i}.0"
            reg.register(onnx_path, "shared", v, metadata={"writer": w, "i": i})
            reg.register(onnx_path, f"own-{w}", v)
            reg.promote("shared", v, "production", archive_existing=(i % 2 == 1))
            reg.register(onnx_path, "scratch", v)  # appears and disappears while others read
            reg.remove("scratch", v)
    except BaseException as e:  # report to the parent instead of dying silently
        errors.put(f"writer {w}: {type(e).__name__}: {e}")


def _reader(root, stop, errors, seen):
    reg = Registry(root)
    n = 0
    try:
        while not stop.is_set():
            for mv in reg.list():
                try:
                    mv.verify()  # a listed version is complete: never a missing or short artifact
                except ModelNotFoundError:
                    assert mv.name == "scratch", mv  # only scratch versions are removed
                n += 1
            try:
                reg.get("shared")
            except ModelNotFoundError:
                pass
    except BaseException as e:
        errors.put(f"reader: {type(e).__name__}: {e}")
    seen.put(n)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_concurrent_writers_leave_a_consistent_registry(tmp_path, onnx_file):
    root = tmp_path / "registry"
    ctx = mp.get_context("fork")
    errors, seen, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    reader = ctx.Process(target=_reader, args=(root, stop, errors, seen))
    reader.start()
    writers = [ctx.Process(target=_writer, args=(root, onnx_file, w, errors)) for w in range(WRITERS)]
    for p in writers:
        p.start()
    for p in writers:
        p.join(60)
    stop.set()
    reader.join(60)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert not problems, problems
    assert all(p.exitcode == 0 for p in [*writers, reader])
    assert seen.get(timeout=5) > 0

    reg = Registry(root)
    shared = reg.list("shared")
    assert sorted(m.version for m in shared) == sorted(f"{w}.{i}.0" for w in range(WRITERS) for i in range(VERSIONS))
    assert reg.names() == ["own-0", "own-1", "own-2", "own-3", "shared"]
    for mv in reg.list():
        mv.verify()
    for mv in shared:
        assert mv.metadata == {"writer": int(mv.version[0]), "i": int(mv.version[2])}
    # every change counted once: 3 registrations, 1 promotion and 1 removal per step of each writer
    assert reg.revision() == WRITERS * VERSIONS * 5
    assert not any((root / ".tmp").iterdir())  # no half-written leftovers
    assert reg.get("shared").stage == "production"
