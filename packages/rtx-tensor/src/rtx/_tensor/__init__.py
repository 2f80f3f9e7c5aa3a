"""rtx-tensor: the Tensor and its ops. Its public names are re-exported by the root `rtx`."""
__version__ = "0.1.0"
