"""The registry's exceptions: every one says what was expected, what was found and what to do."""


class RegistryError(Exception):
    """A registry operation that cannot be done (bad name or version, duplicate, bad file, ...)."""


class ModelNotFoundError(RegistryError, LookupError):
    """No model, or no such version or stage of it; the message lists what the registry holds."""


class IntegrityError(RegistryError):
    """An artifact whose bytes no longer match the sha256 recorded when it was registered
    (tampered, truncated or missing). Attributes: path, expected, found (hex digests; found is
    None for a missing file)."""

    def __init__(self, message: str, *, path=None, expected: str | None = None, found: str | None = None):
        super().__init__(message)
        self.path, self.expected, self.found = path, expected, found


class UntrustedClassError(RegistryError):
    """A checkpoint names a class that may not be built from a registry file: not rtx's own, not
    registered (rtx.hub.register_class or the entry point group rtx.hub.classes), and no
    trust_remote_code=True; or the name resolves to something that is not an rtx.nn.Module
    subclass. Raised before anything is imported or called. Attribute: class_path (the text)."""

    def __init__(self, message: str, *, class_path=None):
        super().__init__(message)
        self.class_path = class_path
