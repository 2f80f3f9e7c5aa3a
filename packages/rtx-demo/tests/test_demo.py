"""`rtx demo` end to end: accuracy goal, save/reload, determinism, flags."""
import subprocess
import sys

import pytest

from rtx.demo.cli import demo_command
from rtx.demo.train import train


def test_demo_reaches_goal_and_is_deterministic(tmp_path):
    a = train(out=str(tmp_path / "a.safetensors"), progress=False, log=lambda *_: None)
    assert a.accuracy >= 0.97, a.history
    assert a.file_bytes > 10_000 and a.parameters == 13_706
    b = train(out=str(tmp_path / "b.safetensors"), progress=False, log=lambda *_: None)
    assert a.history == b.history  # same seed, same losses and accuracies, epoch by epoch


def test_cli_prints_summary(tmp_path, capsys):
    assert demo_command(["--epochs", "1", "--out", str(tmp_path / "m.safetensors"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "test accuracy" in out and "reloaded" in out and "parameters      13,706" in out
    with pytest.raises(SystemExit):
        demo_command(["--epochs", "0"])


def test_rtx_command_finds_demo_through_its_entry_point():
    out = subprocess.run([sys.executable, "-c", "from rtx.runtime.cli import main; raise SystemExit(main())",
                          "--help"], capture_output=True, text=True)
    assert "demo" in out.stdout and "pip install rtx-demo" not in out.stdout
