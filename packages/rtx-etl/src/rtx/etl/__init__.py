"""rtx etl: data pipelines from raw files to training shards.

Embedded by default (Apache Arrow for columns and memory-mapped caches, DuckDB for SQL), the same
pipeline on Dask distributed at scale. Anchors: Hugging Face datasets (fingerprinted Arrow cache,
map/filter/shard), WebDataset (tar shards), Great Expectations / pandera (validation with quarantine).
"""
__version__ = "0.1.0"

from rtx.etl.dataset import Dataset, concatenate_datasets
from rtx.etl.validate import Column, Schema

__all__ = ["Dataset", "concatenate_datasets", "Column", "Schema"]
