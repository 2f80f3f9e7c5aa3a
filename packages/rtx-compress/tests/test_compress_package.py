import tomllib
from pathlib import Path

import rtx.compress


def test_version_matches_pyproject():
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    with open(pyproject, "rb") as f:
        assert rtx.compress.__version__ == tomllib.load(f)["project"]["version"]


def test_quantized_dtypes_are_rtx_s():
    import rtx
    from rtx.compress.qtypes import qrange, storage
    assert rtx.compress.qint8 is rtx.qint8 and rtx.compress.quint8 is rtx.quint8 and rtx.compress.qint32 is rtx.qint32
    # the ranges and storage come from NumPy's integer types
    assert [qrange(d) for d in (rtx.qint8, rtx.quint8, rtx.qint32)] == [(-128, 127), (0, 255), (-2 ** 31, 2 ** 31 - 1)]
    assert storage(rtx.qint8) == "int8" and storage("quint8") == "uint8"
