"""`rtx automeasure bench`: the JSON (and PNG) it writes for a short selection of the suite."""
import json

import pytest

from rtx.automeasure import bench
from rtx.automeasure.cli import automeasure_command


def test_bench_writes_json_and_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out, png = tmp_path / "b.json", tmp_path / "b.png"
    assert automeasure_command(["bench", "--only", "matmul f32 256,linear", "--min-run-time", "0.05",
                                "--out", str(out), "--png", str(png)]) == 0
    doc = json.loads(out.read_text())
    assert doc["machine"]["cores"] >= 1 and "rtx-automeasure" in doc["versions"]
    names = [r["name"] for r in doc["results"]]
    assert names == ["matmul f32 256", "linear 784->512 b128 fwd+bwd"]
    for r in doc["results"]:
        assert 0 < r["median_s"] < 5 and r["iqr_s"] >= 0 and r["runs"] >= 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "matmul f32 256" in capsys.readouterr().out


def test_suite_rows_are_named_once():
    assert len(bench.SUITE) == len({n.lower() for n in bench.SUITE})
    assert {g for g, _ in bench.SUITE.values()} == {"op", "layer", "model"}
