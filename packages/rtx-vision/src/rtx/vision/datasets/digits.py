"""The 8x8 handwritten digits bundled with scikit-learn (1,797 images, 10 classes, UCI optdigits
test set): no file and no download needed."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.vision.datasets.mnist import GreyDigitImages

__all__ = ["Digits"]


class Digits(GreyDigitImages):
    """scikit-learn's digits as a torchvision-style data set of 8x8 'L' PIL images (the 0..16
    intensities scaled to 0..255) and int labels.

    train/test: a fixed split, the same for a given split_seed: a seeded permutation puts
    int(test_fraction * 1797) images (359 by default) in the test set, the rest (1,438) in train.
    """

    def __init__(self, root=None, train=True, transform=None, target_transform=None, test_fraction=0.2,
                 split_seed=0):
        super().__init__(root, transform=transform, target_transform=target_transform)
        if not 0.0 < test_fraction < 1.0:
            raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
        from sklearn.datasets import load_digits
        digits = load_digits()
        images = np.rint(digits.images * (255.0 / 16.0)).astype(np.uint8)
        labels = digits.target.astype(np.int64)
        perm = np.random.default_rng(split_seed).permutation(len(labels))
        n_test = int(len(labels) * test_fraction)
        idx = np.sort(perm[n_test:] if train else perm[:n_test])
        self.train = train
        self._images, self._labels = np.ascontiguousarray(images[idx]), labels[idx]
        self.data = rtx.from_numpy(self._images)           # (N, 8, 8) uint8, as MNIST.data
        self.targets = rtx.from_numpy(self._labels)        # (N,) int64
