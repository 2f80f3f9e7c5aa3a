"""The README's export example (its python block that calls rtx.onnx.export) runs as written."""
import re
from pathlib import Path


def test_readme_export_example():
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "rtx.onnx.export(" in b]
    assert blocks
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "__readme__"})
