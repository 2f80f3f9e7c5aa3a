"""The README's first python example runs as written."""
import os
import re
from pathlib import Path


def test_readme_example(tmp_path):
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    finally:
        os.chdir(cwd)
    assert (tmp_path / "model.dot").read_text().startswith("digraph")
