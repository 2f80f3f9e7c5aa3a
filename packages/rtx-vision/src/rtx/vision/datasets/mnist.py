"""MNIST and Fashion-MNIST from their idx files on disk (torchvision's layout,
root/<Name>/raw/, or the files directly in root/<Name>/ or root/; plain or .gz). Nothing is
downloaded: a missing file gives a message that says where to put which files."""
from __future__ import annotations

import gzip
import os

import numpy as np

import rtx
from rtx.vision.datasets.vision import ArrayImageDataset, download_note

__all__ = ["MNIST", "FashionMNIST", "read_idx"]

# idx type codes -> big-endian NumPy dtypes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT")
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """The array in an idx file (optionally gzip-compressed)."""
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"{path} is not an idx file: it should start with two zero bytes, a type code "
                         f"({', '.join(hex(t) for t in _IDX_TYPES)}) and the number of dimensions; got "
                         f"{data[:4].hex()}")
    dtype, ndim = np.dtype(_IDX_TYPES[data[2]]), data[3]
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">i4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - offset != expected:
        raise ValueError(f"{path}: the header says shape {shape} of {dtype} ({expected} bytes) but the file holds "
                         f"{len(data) - offset} bytes of data")
    return np.frombuffer(data, dtype=dtype, offset=offset).reshape(shape).astype(dtype.newbyteorder("="))


class GreyDigitImages(ArrayImageDataset):
    """What MNIST and Digits share: uint8 (N, H, W) images in self._images served as 'L' PIL images with int labels
    from self._labels, ten digit classes, a train/test split."""

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def _images_and_labels(self):
        return self._images, self._labels


class MNIST(GreyDigitImages):
    """The MNIST digits (28x28 'L' images, 60,000 train / 10,000 test) from the idx files."""

    files = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
    source = "https://ossci-datasets.s3.amazonaws.com/mnist/ (torchvision's mirror of http://yann.lecun.com/exdb/mnist/)"
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._download = download
        if self.root is None:
            raise ValueError(f"{type(self).__name__}: root must be the folder that holds the data")
        self.train = train
        images_path, labels_path = (self._find(name) for name in self.files[train])
        images, labels = read_idx(images_path), read_idx(labels_path)
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(f"{type(self).__name__}: expected images (N, H, W) and labels (N,), got {images.shape} "
                             f"from {images_path} and {labels.shape} from {labels_path}")
        self._images, self._labels = np.ascontiguousarray(images, dtype=np.uint8), labels.astype(np.int64)
        self.data = rtx.from_numpy(self._images)
        self.targets = rtx.from_numpy(self._labels)

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    def _find(self, name):
        folders = (self.raw_folder, os.path.join(self.root, type(self).__name__), self.root)
        for folder in folders:
            for candidate in (name, name + ".gz"):
                path = os.path.join(folder, candidate)
                if os.path.isfile(path):
                    return path
        needed = ", ".join(self.files[True] + self.files[False])
        raise FileNotFoundError(
            f"{type(self).__name__}: {name} (or {name}.gz) not found. Put the idx files ({needed}; plain or .gz) in "
            f"{self.raw_folder} (torchvision's layout); they are at {self.source}.{download_note(self._download)}")


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST (same idx files and layout as MNIST, ten clothing classes)."""

    source = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
