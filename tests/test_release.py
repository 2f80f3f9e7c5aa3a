"""ci/release in a small throwaway git repository: first release, patch, feature, range propagation."""
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}

MEMBER = '''[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = [
{deps}
]

[tool.rtx]
layer = "foundation"

[tool.uv.sources]
{sources}

[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"
'''


def sh(repo, *cmd):
    r = subprocess.run([str(c) for c in cmd], cwd=repo, env=GIT_ENV, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"{cmd} failed:\n{r.stdout}{r.stderr}"
    return r.stdout


def add_member(repo, short, deps=()):
    path = repo / "packages" / f"rtx-{short}"
    (path / "src" / "rtx" / short).mkdir(parents=True)
    (path / "src" / "rtx" / short / "__init__.py").write_text('__version__ = "0.1.0"\n')
    (path / "pyproject.toml").write_text(MEMBER.format(
        name=f"rtx-{short}", deps="\n".join(f'    "{d}>=0.1,<0.2",' for d in deps),
        sources="\n".join(f"{d} = {{ workspace = true }}" for d in deps)))


def commit(repo, path, text, message):
    path = repo / path
    path.write_text(path.read_text() + text)
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-q", "-m", message)


def version(repo, name):
    with open(repo / "packages" / name / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


@pytest.fixture
def repo(tmp_path):
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "ci").mkdir()
    shutil.copy(ROOT / "ci" / "release", tmp_path / "ci" / "release")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    add_member(tmp_path, "runtime")
    add_member(tmp_path, "kernel", deps=["rtx-runtime"])
    sh(tmp_path, sys.executable, tmp_path / "tools" / "sync-workspace")  # the `rtx` meta-package
    sh(tmp_path, "git", "init", "-q")
    sh(tmp_path, "git", "add", "-A")
    sh(tmp_path, "git", "commit", "-q", "-m", "initial")
    return tmp_path


def release(repo, *args):
    return sh(repo, sys.executable, repo / "ci" / "release", *args)


def test_release_flow(repo):
    out = release(repo)
    assert "never released" in out
    assert "rtx-kernel-v0.1.0 rtx-runtime-v0.1.0 rtx-v0.1.0" in out
    assert sh(repo, "git", "tag").split() == []  # a dry run changes nothing

    release(repo, "--apply", "--no-lock")
    assert sh(repo, "git", "tag").split() == ["rtx-kernel-v0.1.0", "rtx-runtime-v0.1.0", "rtx-v0.1.0"]
    assert "nothing to release" in release(repo)

    commit(repo, "packages/rtx-kernel/src/rtx/kernel/__init__.py", "# fixed\n", "fix: a kernel bug")
    out = release(repo)
    assert re.search(r"rtx-kernel +0\.1\.0 -> 0\.1\.1 \(patch\)", out), out
    assert "packages/rtx-kernel/src/rtx/kernel/__init__.py" in out
    assert "would create tags: rtx-kernel-v0.1.1\n" in out

    # A feature in the runtime is a minor bump; the kernel's range moves and the meta-package follows.
    commit(repo, "packages/rtx-runtime/src/rtx/runtime/__init__.py", "# new\n", "feat(runtime): something new")
    release(repo, "--apply", "--no-lock")
    assert version(repo, "rtx-runtime") == "0.2.0"
    assert version(repo, "rtx-kernel") == "0.1.1"
    assert version(repo, "rtx") == "0.1.1"
    assert '__version__ = "0.2.0"' in (repo / "packages/rtx-runtime/src/rtx/runtime/__init__.py").read_text()
    assert '"rtx-runtime>=0.2,<0.3"' in (repo / "packages/rtx-kernel/pyproject.toml").read_text()
    assert '"rtx-runtime>=0.2,<0.3"' in (repo / "packages/rtx/pyproject.toml").read_text()
    assert {"rtx-runtime-v0.2.0", "rtx-kernel-v0.1.1", "rtx-v0.1.1"} <= set(sh(repo, "git", "tag").split())
    assert sh(repo, "git", "status", "--porcelain") == ""  # the bump is committed, the tags sit on it
    assert sh(repo, "git", "rev-parse", "rtx-runtime-v0.2.0^{commit}") == sh(repo, "git", "rev-parse", "HEAD")
    sh(repo, sys.executable, repo / "tools" / "sync-workspace", "--check")

    commit(repo, "packages/rtx-kernel/src/rtx/kernel/__init__.py", "# x\n", "refactor!: drop the old API")
    out = release(repo)
    assert re.search(r"rtx-kernel +0\.1\.1 -> 0\.2\.0 \(minor\)", out), out  # breaking below 1.0: minor


def test_apply_refuses_a_dirty_tree(repo):
    (repo / "packages/rtx-kernel/README.md").write_text("uncommitted\n")
    r = subprocess.run([sys.executable, repo / "ci" / "release", "--apply", "--no-lock"], cwd=repo, env=GIT_ENV,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "clean working tree" in r.stderr
    assert sh(repo, "git", "tag") == ""
