"""The README's first python example runs as written."""
import re
from pathlib import Path


def test_readme_example(capsys):
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out.splitlines()
    name, err = out[0].split()
    assert name == "FlashAttention"
    assert float(err) < 1e-5
    assert out[1] == "rtx.Size([2, 512, 8, 64])"
