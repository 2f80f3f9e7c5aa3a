"""CIFAR-10 and CIFAR-100 from the "python version" batches on disk (torchvision's layout:
root/cifar-10-batches-py/, root/cifar-100-python/). A downloaded archive
(cifar-10-python.tar.gz) in root is extracted in place on first use. Nothing is downloaded.

The batches are pickles; they are read with an unpickler that resolves only the NumPy array
constructors they need, so a tampered file cannot run code."""
from __future__ import annotations

import os
import pickle
import tarfile

import numpy as np

from rtx.vision.datasets.vision import ArrayImageDataset, download_note

__all__ = ["CIFAR10", "CIFAR100"]

_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"), ("_codecs", "encode"), ("copyreg", "_reconstructor"),
            ("builtins", "object")}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a CIFAR batch file refers to {module}.{name}, which is not one of the NumPy "
                                     "array constructors such files hold; refusing to load it")


def _load_batch(path):
    with open(path, "rb") as f:
        entry = _BatchUnpickler(f, encoding="latin1").load()
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: expected a pickled dict (a CIFAR python batch), got {type(entry).__name__}")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}


class CIFAR10(ArrayImageDataset):
    """CIFAR-10: 32x32 RGB images of 10 classes, 50,000 train / 10,000 test."""

    base_folder = "cifar-10-batches-py"
    archive = "cifar-10-python.tar.gz"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    train_list = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"]
    test_list = ["test_batch"]
    meta = {"filename": "batches.meta", "key": "label_names"}

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._download = download
        if self.root is None:
            raise ValueError(f"{type(self).__name__}: root must be the folder that holds the data")
        self.train = train
        folder = self._folder()
        data, targets = [], []
        for name in self.train_list if train else self.test_list:
            entry = _load_batch(os.path.join(folder, name))
            data.append(np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            targets.extend(int(t) for t in (entry["labels"] if "labels" in entry else entry["fine_labels"]))
        self.data = np.ascontiguousarray(np.vstack(data).transpose(0, 2, 3, 1))   # (N, 32, 32, 3), HWC
        self.targets = targets
        self.classes = list(_load_batch(os.path.join(folder, self.meta["filename"]))[self.meta["key"]])
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def _folder(self):
        folder = os.path.join(self.root, self.base_folder)
        archive = os.path.join(self.root, self.archive)
        if not os.path.isdir(folder) and os.path.isfile(archive):
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(self.root, filter="data")
        needed = self.train_list + self.test_list + [self.meta["filename"]]
        missing = [n for n in needed if not os.path.isfile(os.path.join(folder, n))]
        if missing:
            raise FileNotFoundError(
                f"{type(self).__name__}: {', '.join(missing)} not found in {folder}. Put the python-version batches "
                f"({', '.join(needed)}) there, or the archive {self.archive} in {self.root} (it is extracted on first "
                f"use); the archive is at {self.url}.{download_note(self._download)}")
        return folder

    def _images_and_labels(self):
        return self.data, self.targets


class CIFAR100(CIFAR10):
    """CIFAR-100: 32x32 RGB images of 100 fine classes (targets) grouped in 20 coarse ones."""

    base_folder = "cifar-100-python"
    archive = "cifar-100-python.tar.gz"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    train_list = ["train"]
    test_list = ["test"]
    meta = {"filename": "meta", "key": "fine_label_names"}
