"""Data pipelines from raw files to training shards: Arrow caches with fingerprints, DuckDB SQL, validation with quarantine, sharded streaming into rtx.data.DataLoader, Dask distributed at scale."""
__version__ = "0.1.0"
