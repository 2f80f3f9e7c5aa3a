"""Ordinary PyTorch scripts (examples/pytorch, in the style of pytorch/examples) run unchanged
with `torch` resolving to rtx and reach PyTorch's results, recorded once with PyTorch 2.13 by
`python examples/pytorch/cases.py <torch-venv>/bin/python` (torch_results.json)."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent / "examples" / "pytorch"
_spec = importlib.util.spec_from_file_location("pytorch_cases", HERE / "cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
TORCH = json.loads((HERE / "torch_results.json").read_text())


@pytest.mark.parametrize("script", list(cases.CASES))
def test_script_runs_unchanged_and_matches_pytorch(script, tmp_path):
    result = cases.run_case(sys.executable, script, tmp_path, as_torch=True, seeds=cases.SUITE_SEEDS)
    failed = cases.close_enough(script, result, TORCH["results"][script])
    assert not failed, "\n".join(failed)
