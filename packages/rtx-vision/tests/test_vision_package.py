import contextlib
import io
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import rtx.vision

ROOT = Path(__file__).resolve().parent.parent


def test_version_matches_pyproject():
    with open(ROOT / "pyproject.toml", "rb") as f:
        assert rtx.vision.__version__ == tomllib.load(f)["project"]["version"]


def test_readme_example_runs_and_prints_what_it_says():
    text = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("(1, 32, 32) ")
    assert lines[1:] == ["11181642", "['conv1.weight', 'bn1.weight']", "[0, 2]"]


def test_submodules_load_lazily():
    code = ("import sys, rtx.vision; assert 'rtx.vision.models' not in sys.modules; "
            "import rtx; m = rtx.vision.models; assert 'rtx.vision.models' in sys.modules; "
            "print(sorted(n for n in ('datasets', 'models', 'ops', 'transforms') if hasattr(rtx.vision, n)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['datasets', 'models', 'ops', 'transforms']"
