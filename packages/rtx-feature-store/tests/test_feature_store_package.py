import tomllib
from pathlib import Path

import rtx.feature_store


def test_version_matches_pyproject():
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    with open(pyproject, "rb") as f:
        assert rtx.feature_store.__version__ == tomllib.load(f)["project"]["version"]
