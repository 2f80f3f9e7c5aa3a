"""rtx etl: data pipelines from raw files to training shards.

Embedded by default (Apache Arrow for columns and memory-mapped caches, DuckDB for SQL), the same
pipeline on Dask distributed at scale. Anchors: Hugging Face datasets (fingerprinted Arrow cache,
map/filter/shard), WebDataset (tar shards), Great Expectations / pandera (validation with quarantine).
"""
__version__ = "0.1.0"

from rtx.etl.dataset import Dataset, concatenate_datasets
from rtx.etl.validate import Column, Schema

__all__ = ["Dataset", "concatenate_datasets", "Column", "Schema"]

from rtx.etl.outputs import ShardedIterableDataset, ShardedLoader  # noqa: E402
from rtx.etl.pipeline import Pipeline  # noqa: E402

__all__ += ["ShardedIterableDataset", "ShardedLoader", "Pipeline"]
