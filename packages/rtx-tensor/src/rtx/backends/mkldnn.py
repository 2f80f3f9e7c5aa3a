"""torch.backends.mkldnn (oneDNN): rtx does not use it; `enabled` is stored."""
enabled = True


def is_available():
    return False
