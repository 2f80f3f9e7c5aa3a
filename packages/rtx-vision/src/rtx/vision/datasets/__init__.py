"""Data sets as torchvision.datasets, read from local files (or, for Digits, from
scikit-learn's bundled copy); nothing is downloaded."""
# ruff: noqa: F401
from rtx.vision.datasets.cifar import CIFAR10, CIFAR100
from rtx.vision.datasets.digits import Digits
from rtx.vision.datasets.folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, pil_loader
from rtx.vision.datasets.mnist import MNIST, FashionMNIST, read_idx
from rtx.vision.datasets.vision import VisionDataset

__all__ = ["CIFAR10", "CIFAR100", "Digits", "DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "MNIST", "FashionMNIST",
           "VisionDataset", "default_loader", "pil_loader", "read_idx"]
