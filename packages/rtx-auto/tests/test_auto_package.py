import tomllib
from pathlib import Path

import rtx.auto


def test_version_matches_pyproject():
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    with open(pyproject, "rb") as f:
        assert rtx.auto.__version__ == tomllib.load(f)["project"]["version"]
