"""`rtx etl`: run a pipeline declared in TOML, or look inside a data file.

    rtx etl run pipeline.toml [--engine dask --address tcp://host:8786]
    rtx etl inspect data.parquet [--rows 5]

pipeline.toml:
    engine = "local"
    [[steps]]
    op = "read_csv"
    paths = "raw/*.csv"
    [[steps]]
    op = "validate"
    quarantine = "out/bad"
    schema = { age = { dtype = "int64", min = 0 } }
    [[steps]]
    op = "write_parquet"
    dir = "out/shards"

Exit status: 0 on success, 1 on an error, 2 on a usage error."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, Literal, Optional

PROG = "rtx etl"


@dataclasses.dataclass
class PipelineConfig:
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    engine: Literal["local", "dask"] = "local"
    address: Optional[str] = None

    def __post_init__(self):
        if not self.steps:
            raise ValueError("the pipeline has no [[steps]]")
        from rtx.etl.pipeline import Pipeline
        Pipeline(self.steps)  # unknown ops, a missing source: reported as config errors


def _bar(done, total, width=30):
    fill = int(width * done / max(total, 1))
    print(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} partitions", end="", file=sys.stderr, flush=True)
    if done == total:
        print(file=sys.stderr)


def etl_command(argv: list[str]) -> int:
    """Data pipelines: run a TOML pipeline (local or Dask), inspect a data file."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd")
    r = sub.add_parser("run", help="run the steps of a pipeline.toml and print the row report")
    r.add_argument("config")
    r.add_argument("--engine", choices=("local", "dask"), default=None)
    r.add_argument("--address", default=None, help="Dask scheduler address (default: a LocalCluster)")
    i = sub.add_parser("inspect", help="schema, row count and sample rows of a Parquet/CSV/JSON-lines/Arrow file")
    i.add_argument("path")
    i.add_argument("--rows", type=int, default=5)
    args = p.parse_args(argv)
    if args.cmd is None:
        p.print_usage(sys.stderr)
        print(f"{PROG}: error: a command is required (run, inspect)", file=sys.stderr)
        return 2
    from rtx.config import ConfigError, load_config
    try:
        if args.cmd == "inspect":
            return _inspect(args.path, args.rows)
        over = {k: v for k, v in (("engine", args.engine), ("address", args.address)) if v is not None}
        cfg = load_config(PipelineConfig, args.config, env_prefix=None, overrides=over)
        from rtx.etl.pipeline import Pipeline
        rep = Pipeline(cfg.steps).run(engine=cfg.engine, address=cfg.address, progress=_bar)
    except (ConfigError, ValueError, FileNotFoundError, TypeError) as e:
        print(f"{PROG} {args.cmd}: error: {e}", file=sys.stderr)
        return 1
    print(f"{'step':<16}{'read':>10}{'kept':>10}{'quarantined':>13}{'filtered':>10}")
    for s in rep["steps"]:
        print(f"{s['step']:<16}{s['read']:>10}{s['kept']:>10}{s['quarantined']:>13}{s['filtered']:>10}")
    print(f"{'total':<16}{rep['read']:>10}{rep['kept']:>10}{rep['quarantined']:>13}{rep['filtered']:>10}")
    print(f"{len(rep['outputs'])} shard(s) written")
    return 0


def _inspect(path: str, rows: int) -> int:
    import pyarrow.parquet as pq

    from rtx.etl.dataset import Dataset
    if path.endswith(".parquet"):
        f = pq.ParquetFile(path)
        schema, n, sample = f.schema_arrow, f.metadata.num_rows, (f.read_row_group(0).slice(0, rows).to_pylist()
                                                                  if f.num_row_groups else [])
    else:
        if path.endswith((".jsonl", ".json")):
            ds = Dataset.from_json(path, cache_dir=False)
        elif path.endswith((".arrow", ".feather", ".ipc")):
            import pyarrow as pa
            ds = Dataset.from_arrow(pa.ipc.open_file(pa.memory_map(path, "r")).read_all(), cache_dir=False)
        else:
            ds = Dataset.from_csv(path, cache_dir=False)
        schema, n, sample = ds.schema, ds.num_rows, ds.data.slice(0, rows).to_pylist()
    print(f"{path}: {n} rows")
    for field in schema:
        print(f"  {field.name}: {field.type}")
    for row in sample:
        print(json.dumps(row, default=str))
    return 0
