"""rtx hub: a versioned model registry on the filesystem with stages, checksums and model cards.

    from rtx.hub import Registry
    reg = Registry("/mnt/models")            # default: $RTX_HOME/registry, else ~/.rtx/registry
    mv = reg.register("model.onnx", "mnist", "1.0.0", metadata={"accuracy": 0.98})
    reg.promote("mnist", "1.0.0", "production")
    path = reg.get("mnist").load()           # sha256 checked first; an ONNX model loads as its path

A module checkpoint is rebuilt only from an allowed class (rtx's own, rtx.hub.register_class, the
entry point group rtx.hub.classes, or load(trust_remote_code=True)): see rtx.hub.trust.
"""
from rtx.hub.errors import IntegrityError, ModelNotFoundError, RegistryError, UntrustedClassError
from rtx.hub.model_version import ModelVersion
from rtx.hub.registry import STAGES, Registry, default_root
from rtx.hub.semver import sort_key as semver_key
from rtx.hub.signature import DATATYPES
from rtx.hub.trust import ENTRY_POINT_GROUP, register_class, registered_classes, unregister_class

__version__ = "0.1.0"
__all__ = ["Registry", "ModelVersion", "ModelNotFoundError", "IntegrityError", "RegistryError", "STAGES",
           "DATATYPES", "default_root", "semver_key", "UntrustedClassError", "register_class", "unregister_class",
           "registered_classes", "ENTRY_POINT_GROUP"]
