"""Each member's README example (its first ```python block) runs as written."""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import workspace as ws  # noqa: E402

MEMBERS = ws.members()


@pytest.mark.parametrize("name", sorted(MEMBERS))
def test_readme_example_runs(name, tmp_path):
    example = ws.readme_example(MEMBERS[name]["path"] / "README.md")
    assert example, f"{name}'s README has no ```python block"
    script = tmp_path / "example.py"
    script.write_text(example)
    # cwd is a bare temp dir, so the example sees the installed packages, not files beside it.
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{name}'s README example failed:\n{r.stdout}{r.stderr}"
