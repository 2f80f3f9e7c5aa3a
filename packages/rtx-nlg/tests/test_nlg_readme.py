"""The README's first python example runs as written and prints what it says."""
import ast
import re
from pathlib import Path


def test_readme_example(capsys):
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    env = {"__name__": "__readme__"}
    exec(compile(code, "README.md", "exec"), env)
    shape, texts = capsys.readouterr().out.split("]) ", 1)
    assert shape == f"rtx.Size([2, {env['batch'].input_ids.shape[1] + 8}"
    texts = ast.literal_eval(texts.strip())
    assert len(texts) == 2 and all(isinstance(t, str) and t for t in texts)
