"""VisionDataset: the base of the data sets (root, transform, target_transform, repr), and the
rule every reader here keeps: files come from a local path; nothing is downloaded."""
from __future__ import annotations

import os

from rtx.data import Dataset


class VisionDataset(Dataset):
    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        if isinstance(root, (str, bytes, os.PathLike)):
            root = os.path.expanduser(os.fspath(root))
        self.root = root
        has_transforms = transforms is not None
        has_separate = transform is not None or target_transform is not None
        if has_transforms and has_separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        if not has_transforms:
            transforms = _StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def extra_repr(self):
        return ""

    def __repr__(self):
        head = "Dataset " + self.__class__.__name__
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transform is not None:
            body += _indent(f"Transform: {self.transform!r}")
        if self.target_transform is not None:
            body += _indent(f"Target transform: {self.target_transform!r}")
        return "\n".join([head] + [" " * self._repr_indent + line for line in body])


def _indent(text):
    lines = text.splitlines()
    return [lines[0]] + [" " * 4 + line for line in lines[1:]]


class _StandardTransform:
    def __init__(self, transform=None, target_transform=None):
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input, target):
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target


class ArrayImageDataset(VisionDataset):
    """A data set held in memory as one uint8 image array ((N, H, W) or (N, H, W, C)) and a label
    sequence, served as PIL images with int labels (what MNIST, Digits and CIFAR share).
    Subclasses say where the two live through `_images_and_labels()` and set `self.train`."""

    def _images_and_labels(self):
        raise NotImplementedError(f"{type(self).__name__} must implement _images_and_labels")

    def __getitem__(self, index):
        from PIL import Image  # Pillow only when an item is read

        images, labels = self._images_and_labels()
        img, target = Image.fromarray(images[index]), int(labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self._images_and_labels()[1])

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


def download_note(download):
    """What a missing-file error adds. As torchvision, download=True with the files in place just
    loads them; only files that are missing would be fetched, and rtx cannot fetch them."""
    if download:
        return (" download=True cannot fetch them: rtx downloads nothing at run time (these machines may have no "
                "network); download them yourself and put them there.")
    return " rtx downloads nothing at run time; download them yourself and put them there."
