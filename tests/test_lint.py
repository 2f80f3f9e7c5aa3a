"""The code the project ships and tests with passes ruff (the settings in the root pyproject): new packages copy
the patterns they see, so the whole tree is kept clean, not only the files a change touched."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).parent / "ruff"


def test_the_tree_passes_ruff():
    r = subprocess.run([str(RUFF), "check", "--no-cache", "packages", "tools", "tests", "examples", "ci"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff_reports_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")  # F401: unused import
    r = subprocess.run([str(RUFF), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "F401" in r.stdout, r.stdout + r.stderr
