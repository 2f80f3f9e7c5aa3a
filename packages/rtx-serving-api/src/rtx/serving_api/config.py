"""ServeConfig: every knob of the server, one dataclass loaded with rtx.config.load_config.

Priority (rtx.config's): dataclass defaults < TOML file < RTX_SERVE_* environment < overrides
(the `rtx serve` flags). A serve.toml looks like

    host = "0.0.0.0"
    port = 8000
    registry = "/srv/models"
    max_body_bytes = 8388608
    [batching]
    max_batch_size = 32
    max_wait_ms = 2.0
    [[routes]]
    model = "digits"
    split = {"1.0.0" = 90, "2.0.0" = 10}
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ENV_PREFIX = "RTX_SERVE_"


@dataclass
class BatchingConfig:
    """Dynamic batching through rtx.inference.DynamicBatcher (models whose inputs all have a
    dynamic leading dimension; the others run one request at a time)."""
    enabled: bool = True
    max_batch_size: int = 32
    max_wait_ms: float = 2.0


@dataclass
class RouteConfig:
    """An A/B split of one model's traffic between versions, by weight (any positive numbers:
    {"1.0.0": 90, "2.0.0": 10} sends 90 % to 1.0.0). Used when a request names no version."""
    model: str = ""
    split: dict[str, float] = field(default_factory=dict)


@dataclass
class ServeConfig:
    """The server's settings. Sizes are bytes, times seconds unless the name says otherwise."""
    host: str = "127.0.0.1"
    port: int = 8000
    grpc_port: Optional[int] = None        # the gRPC endpoint's port (inference.GRPCInferenceService); None: off
    backend: str = "auto"                  # what runs ONNX artifacts: auto (onnxruntime if installed), onnxruntime, rtx
    workers: int = 1                       # server processes sharing the port (SO_REUSEPORT)
    registry: Optional[Path] = None        # None: rtx.hub's default ($RTX_HOME/registry or ~/.rtx/registry)
    max_body_bytes: int = 8 * 1024 * 1024  # larger requests get 413
    request_timeout_s: float = 30.0        # slower requests get 504 (the computation is not interrupted)
    max_concurrency: int = 256             # more requests in flight get 503 with Retry-After
    retry_after_s: int = 1                 # the Retry-After header of those 503s
    sticky_header: str = "x-client-id"     # requests with the same value always get the same A/B version
    poll_interval_s: float = 1.0           # how often the registry's revision is checked (hot promotion)
    shutdown_timeout_s: float = 30.0       # SIGTERM waits this long for in-flight requests
    max_new_tokens: int = 1024             # the most tokens one :generate request may ask for
    log_level: str = "info"
    auth_token_file: Optional[Path] = None  # accepted bearer tokens, one a line; None: no authentication
    ssl_certfile: Optional[Path] = None     # TLS for HTTP and gRPC: the certificate chain (PEM)...
    ssl_keyfile: Optional[Path] = None      # ...and its private key (PEM); both or neither
    batching: BatchingConfig = field(default_factory=BatchingConfig)
    routes: list[RouteConfig] = field(default_factory=list)

    def __post_init__(self):
        # Values that would make the server misbehave are refused here, whatever their source.
        for name in ("max_body_bytes", "max_concurrency", "max_new_tokens", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"ServeConfig.{name} must be >= 1, got {getattr(self, name)}")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("ServeConfig: TLS needs both ssl_certfile and ssl_keyfile, got only one")
        from rtx.serving_api.backends import BACKENDS
        if self.backend not in BACKENDS:
            raise ValueError(f"ServeConfig.backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        for name in ("request_timeout_s", "poll_interval_s"):
            v = getattr(self, name)
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"ServeConfig.{name} must be a positive number of seconds, got {v}")
        for name in ("port", "grpc_port"):
            v = getattr(self, name)
            if v is not None and not 0 <= v <= 65535:
                raise ValueError(f"ServeConfig.{name} must be in 0..65535, got {v}")
        if self.batching.max_batch_size < 1 or self.batching.max_wait_ms < 0:
            raise ValueError("ServeConfig.batching: max_batch_size must be >= 1 and max_wait_ms >= 0, got "
                             f"{self.batching.max_batch_size} and {self.batching.max_wait_ms}")
        seen = set()
        for r in self.routes:
            if isinstance(r, dict):  # tolerated for callers that build the config by hand
                raise TypeError("ServeConfig.routes must hold RouteConfig objects, got a dict; "
                                "use RouteConfig(model=..., split={...})")
            if not r.model:
                raise ValueError("ServeConfig.routes: every route needs a model name")
            if r.model in seen:
                raise ValueError(f"ServeConfig.routes: model {r.model!r} has two routes; give it one split")
            seen.add(r.model)
            if not r.split:
                raise ValueError(f"ServeConfig.routes: the route of {r.model!r} has an empty split")
            for version, w in r.split.items():
                if not (w >= 0 and math.isfinite(w)):
                    raise ValueError(f"ServeConfig.routes: weight of {r.model}:{version} must be >= 0, got {w}")
            if sum(r.split.values()) <= 0:
                raise ValueError(f"ServeConfig.routes: the weights of {r.model!r} sum to 0")

    @classmethod
    def load(cls, path=None, *, env=None, overrides=None) -> "ServeConfig":
        """Defaults < TOML file `path` < RTX_SERVE_* environment variables < `overrides`."""
        from rtx.config import load_config
        return load_config(cls, path, env_prefix=ENV_PREFIX, env=os.environ if env is None else env,
                           overrides=overrides)
