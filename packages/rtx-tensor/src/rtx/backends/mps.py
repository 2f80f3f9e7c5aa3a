"""torch.backends.mps: rtx has no Apple Metal backend."""


def is_available():
    return False


def is_built():
    return False
