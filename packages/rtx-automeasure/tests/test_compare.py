"""Compare's table: grouping, units, trimmed digits, colours, warnings."""
from rtx.automeasure import Compare, Measurement, TaskSpec
from rtx.automeasure.compare import BEST, VERY_BAD


def m(median, sub, desc, threads=1, label="ops", spread=0.0):
    times = [median * (1 - spread), median, median, median * (1 + spread)] * 2
    return Measurement(1, times, TaskSpec("f()", label=label, sub_label=sub, description=desc, num_threads=threads))


def test_table_layout_and_units():
    c = Compare([m(12.34e-6, "[8]", "rtx"), m(50.2e-6, "[8]", "numpy"), m(120e-6, "[64]", "rtx"),
                 m(6.1e-6, "[8]", "rtx", threads=2), m(1e-3, "x", "y", label="other")])
    lines = str(c).splitlines()
    assert lines[0].startswith("[") and " ops " in lines[0] and lines[0].endswith("]")
    assert "rtx" in lines[1] and "numpy" in lines[1] and lines[1].index("rtx") < lines[1].index("numpy")
    assert lines[2].startswith("1 threads: ")
    assert "[8]" in lines[3] and "12.3" in lines[3] and "50.2" in lines[3]
    assert "[64]" in lines[4] and "120.0" in lines[4]
    assert lines[5].startswith("2 threads: ") and "6.1" in lines[6]
    assert "Times are in microseconds (us)." in lines
    assert any(" other " in ln for ln in lines) and "Times are in milliseconds (ms)." in lines


def test_trim_colour_and_warnings():
    rows = [m(12.3456e-6, "a", "d"), m(80e-6, "b", "d", spread=0.5)]
    c = Compare(rows)
    c.trim_significant_figures()
    c.colorize()
    c.highlight_warnings()
    text = str(c)
    assert BEST in text and VERY_BAD in text      # 80 us is >5x the best of its column
    assert "12.0" in text and "12.3" not in text   # 25 ns floor on the CI: 2 figures of 12.35 us
    assert "(! " in text                          # the noisy row is flagged


def test_rejects_non_measurements():
    import pytest
    with pytest.raises(TypeError, match="Measurement"):
        Compare([1.0])


def test_report_command_lists_the_cache(tmp_path, monkeypatch, capsys):
    from rtx.automeasure.cli import automeasure_command
    from rtx.runtime import tuning
    monkeypatch.setenv("RTX_TUNING_CACHE", str(tmp_path / "t.json"))
    tuning.clear_memo()
    tuning.store("conv2d", (8, 64, 32, 32), "float32", "cpu", {"chunk_bytes": 1024}, speedup=1.25)
    assert automeasure_command(["report"]) == 0
    out = capsys.readouterr().out
    assert "1 entries" in out and "conv2d" in out and "8x64x32x32" in out and "1.250" in out
    tuning.clear_memo()
