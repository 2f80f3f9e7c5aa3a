"""`rtx etl run` on a TOML pipeline and `rtx etl inspect`, through the rtx console entry point."""
import numpy as np
import pandas as pd

from rtx.runtime.cli import main


def test_run_and_inspect(tmp_path, capsys):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"id": rng.integers(0, 50, 200), "age": rng.integers(-3, 100, 200)})
    df.to_csv(tmp_path / "raw.csv", index=False)
    cfg = tmp_path / "p.toml"
    cfg.write_text(f'''engine = "local"
[[steps]]
op = "read_csv"
paths = "{tmp_path / 'raw.csv'}"
partition_bytes = 500
[[steps]]
op = "validate"
quarantine = "{tmp_path / 'bad'}"
schema = {{ age = {{ dtype = "int64", min = 0 }} }}
[[steps]]
op = "dedup"
columns = ["id"]
[[steps]]
op = "write_parquet"
dir = "{tmp_path / 'out'}"
rows_per_shard = 10
''')
    assert main(["etl", "run", str(cfg)]) == 0
    out = capsys.readouterr()
    ok = df[df.age >= 0]
    kept = ok.id.nunique()
    total = [ln for ln in out.out.splitlines() if ln.startswith("total")][0].split()
    assert total[1:] == [str(len(df)), str(kept), str(len(df) - len(ok)), str(len(ok) - kept)]
    assert "partitions" in out.err
    shard = sorted((tmp_path / "out").glob("*.parquet"))[0]
    assert main(["etl", "inspect", str(shard), "--rows", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == ["  id: int64", "  age: int64"] and len(lines) == 5
    (tmp_path / "bad.toml").write_text('[[steps]]\nop = "read_csv"\npaths = "x"\n[[steps]]\nop = "explode"\n')
    assert main(["etl", "run", str(tmp_path / "bad.toml")]) == 1
    assert "unknown step op 'explode'" in capsys.readouterr().err
