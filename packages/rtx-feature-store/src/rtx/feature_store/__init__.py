"""Point-in-time correct features: Feast-shaped definitions and a SQLite registry, DuckDB-over-Parquet historical
retrieval, materialization into SQLite or Redis online stores, a feature server."""
from .definitions import (
                          Bool,
                          Entity,
                          FeatureService,
                          FeatureView,
                          Field,
                          FileSource,
                          Float32,
                          Float64,
                          Int32,
                          Int64,
                          OnDemandFeatureView,
                          PushSource,
                          RequestSource,
                          String,
                          UnixTimestamp,
)
from .online import OnlineStore, RedisOnlineStore, SqliteOnlineStore
from .registry import BreakingChangeError
from .store import NOT_FOUND, NULL_VALUE, OUTSIDE_MAX_AGE, PRESENT, FeatureStore, OnlineResponse, RetrievalJob

__version__ = "0.1.0"

__all__ = ["Entity", "Field", "FileSource", "PushSource", "RequestSource", "FeatureView", "OnDemandFeatureView",
           "FeatureService", "FeatureStore", "RetrievalJob", "OnlineResponse", "OnlineStore", "SqliteOnlineStore",
           "RedisOnlineStore", "BreakingChangeError", "PRESENT", "NOT_FOUND", "OUTSIDE_MAX_AGE", "NULL_VALUE",
           "Int32", "Int64", "Float32", "Float64", "String", "Bool", "UnixTimestamp"]
