"""rtx config: typed configuration from TOML files with environment-variable overrides.

    @dataclasses.dataclass
    class ServerConfig:
        host: str = "127.0.0.1"
        port: int = field_doc(8000, "TCP port")

    cfg = load_config(ServerConfig, "serve.toml", section="server", env_prefix="RTX_SERVE_")

Priority: dataclass defaults < TOML file < environment < overrides. Every bad value raises
ConfigError (a ValueError) naming the key path, the expected type, the value and its source.
"""
from rtx.config.describe import describe, keys
from rtx.config.dump import dump, to_toml
from rtx.config.errors import ConfigError
from rtx.config.fields import field_doc
from rtx.config.loader import load_config, read_toml

__version__ = "0.1.0"
__all__ = ["load_config", "ConfigError", "field_doc", "describe", "keys", "to_toml", "dump", "read_toml"]
