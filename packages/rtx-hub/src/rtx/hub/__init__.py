"""rtx hub: a versioned model registry on the filesystem with stages, checksums and model cards.

    from rtx.hub import Registry
    reg = Registry("/mnt/models")            # default: $RTX_HOME/registry, else ~/.rtx/registry
    mv = reg.register("model.onnx", "mnist", "1.0.0", metadata={"accuracy": 0.98})
    reg.promote("mnist", "1.0.0", "production")
    path = reg.get("mnist").load()           # sha256 checked first; an ONNX model loads as its path
"""
from rtx.hub.errors import IntegrityError, ModelNotFoundError, RegistryError
from rtx.hub.model_version import ModelVersion
from rtx.hub.registry import STAGES, Registry, default_root
from rtx.hub.semver import sort_key as semver_key
from rtx.hub.signature import DATATYPES

__version__ = "0.1.0"
__all__ = ["Registry", "ModelVersion", "ModelNotFoundError", "IntegrityError", "RegistryError", "STAGES",
           "DATATYPES", "default_root", "semver_key"]
