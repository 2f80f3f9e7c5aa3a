"""Data sets: the bundled digits against scikit-learn, ImageFolder over files written here, and the
MNIST (idx) and CIFAR (python batches) readers over small files written here in the official
formats."""
import gzip
import os
import pickle
import struct
import tarfile

import numpy as np
import pytest
from PIL import Image

import rtx
import rtx.vision.transforms as T
from rtx.data import DataLoader
from rtx.vision import datasets

RNG = np.random.default_rng(0)


# ---- digits -----------------------------------------------------------------------------------

def test_digits_split_and_values():
    from sklearn.datasets import load_digits
    ref = load_digits()
    train, test = datasets.Digits(train=True), datasets.Digits(train=False)
    assert (len(train), len(test)) == (1438, 359)
    assert train.data.dtype == rtx.uint8 and tuple(train.data.shape) == (1438, 8, 8)
    both = np.concatenate([train.data.numpy(), test.data.numpy()]).reshape(1797, -1)
    expected = np.rint(ref.images * 255 / 16).astype(np.uint8).reshape(1797, -1)
    # every image exactly once across the two splits
    assert sorted(map(bytes, both)) == sorted(map(bytes, expected))
    img, label = test[3]
    assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (8, 8)
    assert label == int(test.targets[3]) and 0 <= label <= 9
    again = datasets.Digits(train=False)
    assert np.array_equal(again.data.numpy(), test.data.numpy())
    assert not np.array_equal(datasets.Digits(train=False, split_seed=1).targets.numpy(), test.targets.numpy())
    assert "Number of datapoints: 359" in repr(test) and "Split: Test" in repr(test)


def test_digits_through_a_dataloader():
    ds = datasets.Digits(transform=T.Compose([T.Resize(12), T.ToTensor()]), target_transform=lambda y: y + 100)
    x, y = next(iter(DataLoader(ds, batch_size=16)))
    assert tuple(x.shape) == (16, 1, 12, 12) and x.dtype == rtx.float32
    assert int(y.min()) >= 100
    with pytest.raises(ValueError, match="test_fraction"):
        datasets.Digits(test_fraction=1.5)


# ---- ImageFolder ------------------------------------------------------------------------------

def make_folder(root):
    layout = {"cat": ["b.png", "a.PNG", "notes.txt"], "dog": ["z.jpg", "sub/x.png"], "empty_but_ok": ["c.bmp"]}
    for cls, names in layout.items():
        for name in names:
            path = root / cls / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if name.endswith(".txt"):
                path.write_text("not an image")
            else:
                Image.fromarray(RNG.integers(0, 255, (5, 7), dtype=np.uint8)).save(path)
    return layout


def test_image_folder(tmp_path):
    make_folder(tmp_path)
    ds = datasets.ImageFolder(tmp_path, transform=T.ToTensor())
    assert ds.classes == ["cat", "dog", "empty_but_ok"]
    assert ds.class_to_idx == {"cat": 0, "dog": 1, "empty_but_ok": 2}
    rel = [(os.path.relpath(p, tmp_path), t) for p, t in ds.samples]
    assert rel == [("cat/a.PNG", 0), ("cat/b.png", 0), ("dog/z.jpg", 1), ("dog/sub/x.png", 1),   # folder by folder
                   ("empty_but_ok/c.bmp", 2)]
    assert ds.targets == [0, 0, 1, 1, 2] and ds.imgs is ds.samples
    x, y = ds[0]
    assert tuple(x.shape) == (3, 5, 7) and y == 0   # loaded as RGB
    only_png = datasets.ImageFolder(tmp_path, is_valid_file=lambda p: p.lower().endswith(".png"), allow_empty=True)
    assert len(only_png) == 3
    txt = datasets.DatasetFolder(tmp_path, loader=lambda p: open(p).read(), extensions=(".txt",), allow_empty=True)
    assert txt[0] == ("not an image", 0)


def test_image_folder_errors(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes a"):
        datasets.ImageFolder(tmp_path)
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.ImageFolder(tmp_path / "a")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        datasets.ImageFolder(tmp_path / "missing")


# ---- MNIST / Fashion-MNIST (idx) --------------------------------------------------------------

def write_idx(path, arr, compress=False):
    header = struct.pack(">BBBB", 0, 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}i", *arr.shape)
    data = header + arr.astype(np.uint8).tobytes()
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(data)


def make_mnist(root, name="MNIST", compress=False, n_train=12, n_test=5):
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    arrays = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        images = RNG.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = RNG.integers(0, 10, n, dtype=np.uint8)
        ext = ".gz" if compress else ""
        write_idx(raw / f"{split}-images-idx3-ubyte{ext}", images, compress)
        write_idx(raw / f"{split}-labels-idx1-ubyte{ext}", labels, compress)
        arrays[split] = (images, labels)
    return arrays


@pytest.mark.parametrize("compress", [False, True])
def test_mnist_reads_idx_files(tmp_path, compress):
    arrays = make_mnist(tmp_path, compress=compress)
    train = datasets.MNIST(tmp_path, train=True)
    test = datasets.MNIST(str(tmp_path), train=False, transform=T.ToTensor())
    assert len(train) == 12 and len(test) == 5
    np.testing.assert_array_equal(train.data.numpy(), arrays["train"][0])
    assert train.targets.dtype == rtx.int64 and train.targets.tolist() == arrays["train"][1].tolist()
    img, label = train[4]
    assert img.mode == "L" and np.array_equal(np.asarray(img), arrays["train"][0][4])
    assert label == int(arrays["train"][1][4])
    x, _ = test[0]
    np.testing.assert_allclose(x.numpy()[0], arrays["t10k"][0][0] / 255.0, atol=1e-7)


def test_fashion_mnist_and_files_directly_in_root(tmp_path):
    arrays = make_mnist(tmp_path, name="FashionMNIST")
    ds = datasets.FashionMNIST(tmp_path)
    assert ds.classes[9] == "Ankle boot" and len(ds) == 12
    flat = tmp_path / "flat"
    flat.mkdir()
    for f in (tmp_path / "FashionMNIST" / "raw").iterdir():
        f.rename(flat / f.name)
    np.testing.assert_array_equal(datasets.MNIST(flat, train=False).data.numpy(), arrays["t10k"][0])


def test_download_true_with_the_files_in_place_just_loads_them(tmp_path):
    """torchvision downloads only what is missing: scripts pass download=True on every run."""
    arrays = make_mnist(tmp_path, compress=True)
    np.testing.assert_array_equal(datasets.MNIST(tmp_path, download=True).data.numpy(), arrays["train"][0])
    fashion = make_mnist(tmp_path / "f", name="FashionMNIST")
    ds = datasets.FashionMNIST(tmp_path / "f", train=False, download=True)
    np.testing.assert_array_equal(ds.data.numpy(), fashion["t10k"][0])
    _, written = make_cifar(tmp_path / "c")
    assert datasets.CIFAR10(tmp_path / "c", train=False, download=True).targets == written["test_batch"][1]
    _, written = make_cifar(tmp_path / "h", hundred=True)
    assert datasets.CIFAR100(tmp_path / "h", download=True).targets == written["train"][1]
    with pytest.raises(FileNotFoundError, match="download=True cannot fetch them"):
        datasets.CIFAR100(tmp_path / "empty", download=True)


def test_mnist_missing_files_say_where(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        datasets.MNIST(tmp_path)
    msg = str(err.value)
    assert os.path.join(str(tmp_path), "MNIST", "raw") in msg and "train-images-idx3-ubyte" in msg
    assert "downloads nothing" in msg
    with pytest.raises(FileNotFoundError, match="download=True cannot fetch them: rtx downloads nothing"):
        datasets.MNIST(tmp_path, download=True)


def test_idx_reader_checks_the_format(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(ValueError, match="not an idx file"):
        datasets.read_idx(bad)
    short = tmp_path / "short"
    short.write_bytes(struct.pack(">BBBBi", 0, 0, 0x08, 1, 10) + b"\x00" * 3)
    with pytest.raises(ValueError, match="holds 3 bytes"):
        datasets.read_idx(short)
    ints = tmp_path / "ints"
    ints.write_bytes(struct.pack(">BBBBi", 0, 0, 0x0C, 1, 2) + struct.pack(">ii", -5, 70000))
    assert datasets.read_idx(ints).tolist() == [-5, 70000]


# ---- CIFAR (python batches) -------------------------------------------------------------------

def make_cifar(root, hundred=False, per_batch=4):
    folder = root / ("cifar-100-python" if hundred else "cifar-10-batches-py")
    folder.mkdir(parents=True)
    names = ["train", "test"] if hundred else ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
                                               "data_batch_5", "test_batch"]
    written = {}
    for name in names:
        data = RNG.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        labels = RNG.integers(0, 100 if hundred else 10, per_batch).tolist()
        entry = {"data": data, ("fine_labels" if hundred else "labels"): labels, "batch_label": name}
        if hundred:
            entry["coarse_labels"] = [t // 5 for t in labels]
        with open(folder / name, "wb") as f:
            pickle.dump(entry, f, protocol=2)
        written[name] = (data, labels)
    meta = {"fine_label_names": [f"c{i}" for i in range(100)]} if hundred else \
        {"label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]}
    with open(folder / ("meta" if hundred else "batches.meta"), "wb") as f:
        pickle.dump(meta, f, protocol=2)
    return folder, written


def test_cifar10(tmp_path):
    _, written = make_cifar(tmp_path)
    train, test = datasets.CIFAR10(tmp_path), datasets.CIFAR10(tmp_path, train=False)
    assert len(train) == 20 and len(test) == 4
    assert train.classes[1] == "automobile" and train.class_to_idx["truck"] == 9
    data, labels = written["data_batch_2"]
    np.testing.assert_array_equal(train.data[4:8], data.reshape(4, 3, 32, 32).transpose(0, 2, 3, 1))
    assert train.targets[4:8] == labels
    img, label = test[1]
    assert img.mode == "RGB" and np.array_equal(np.asarray(img), written["test_batch"][0][1].reshape(3, 32, 32)
                                                .transpose(1, 2, 0))
    assert label == written["test_batch"][1][1]


def test_cifar100_and_archive_extraction(tmp_path):
    src = tmp_path / "src"
    folder, written = make_cifar(src, hundred=True)
    root = tmp_path / "root"
    root.mkdir()
    with tarfile.open(root / "cifar-100-python.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname="cifar-100-python")
    ds = datasets.CIFAR100(root, transform=T.ToTensor())
    assert (root / "cifar-100-python" / "train").is_file()
    assert len(ds) == 4 and ds.classes[7] == "c7" and ds.targets == written["train"][1]
    assert tuple(ds[0][0].shape) == (3, 32, 32)


def test_cifar_missing_and_unsafe_files(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        datasets.CIFAR10(tmp_path)
    assert os.path.join(str(tmp_path), "cifar-10-batches-py") in str(err.value)
    assert "cifar-10-python.tar.gz" in str(err.value)
    folder, _ = make_cifar(tmp_path / "evil")

    class Boom:
        def __reduce__(self):
            return (os.system, ("echo hacked",))
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({"data": Boom(), "labels": []}, f, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        datasets.CIFAR10(tmp_path / "evil", train=False)
