"""Scalers and encoders against scikit-learn; transforms against NumPy; seeded splits; and
augmentation reproducible inside DataLoader workers."""
import numpy as np
import pytest
from sklearn import preprocessing as skp

import rtx
from rtx.preprocessing import (
    Compose,
    LabelEncoder,
    MinMaxScaler,
    Normalize,
    OneHotEncoder,
    RandomFlip,
    RandomNoise,
    RandomShift,
    StandardScaler,
    ToTensor,
    train_test_split,
    train_val_test_split,
)
from rtx.utils.data import DataLoader, Dataset

rng = np.random.default_rng(0)
X = rng.standard_normal((50, 4)) * [1, 10, 0.1, 0] + [0, 5, -2, 3]


def test_standard_scaler_matches_sklearn_and_inverts():
    ours = StandardScaler().fit(X)
    ref = skp.StandardScaler().fit(X)
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), atol=1e-12)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)), X, atol=1e-12)
    t = ours.transform(rtx.tensor(X))
    assert isinstance(t, rtx.Tensor)
    np.testing.assert_allclose(t.numpy(), ref.transform(X), atol=1e-12)
    with pytest.raises(ValueError, match="features"):
        ours.transform(X[:, :3])
    with pytest.raises(RuntimeError, match="not fitted"):
        StandardScaler().transform(X)


def test_minmax_scaler_matches_sklearn():
    ours = MinMaxScaler((-1, 2)).fit(X)
    ref = skp.MinMaxScaler((-1, 2)).fit(X)
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), atol=1e-12)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)), X, atol=1e-12)


def test_encoders_match_sklearn():
    y = np.array(["b", "a", "c", "a"])
    ours = LabelEncoder().fit(y)
    np.testing.assert_array_equal(ours.transform(y), skp.LabelEncoder().fit_transform(y))
    np.testing.assert_array_equal(ours.inverse_transform(ours.transform(y)), y)
    with pytest.raises(ValueError, match="unseen labels"):
        ours.transform(np.array(["z"]))
    cats = np.array([["x", 1], ["y", 2], ["x", 3]], dtype=object)
    ref = skp.OneHotEncoder(sparse_output=False).fit(cats)
    np.testing.assert_array_equal(OneHotEncoder().fit(cats).transform(cats), ref.transform(cats))
    with pytest.raises(ValueError, match="unknown categories"):
        OneHotEncoder().fit(cats).transform(np.array([["q", 1]], dtype=object))
    ignored = OneHotEncoder(handle_unknown="ignore").fit(cats).transform(np.array([["q", 1]], dtype=object))
    assert ignored.sum() == 1


def test_transforms():
    img = rng.integers(0, 256, (3, 4, 5)).astype(np.uint8)
    t = Compose([ToTensor(), Normalize([0.5, 0.5, 0.5], [0.25, 0.5, 1.0])])(img)
    expected = (img / 255.0 - 0.5) / np.array([0.25, 0.5, 1.0])[:, None, None]
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6, atol=1e-6)
    assert t.dtype == rtx.float32
    flipped = RandomFlip(p=1.0)(img)
    np.testing.assert_array_equal(flipped, img[..., ::-1])
    g1, g2 = rtx.Generator().manual_seed(3), rtx.Generator().manual_seed(3)
    a = RandomNoise(0.1, generator=g1)(img.astype(np.float32))
    b = RandomNoise(0.1, generator=g2)(img.astype(np.float32))
    np.testing.assert_array_equal(a, b)
    shifted = RandomShift(2, generator=rtx.Generator().manual_seed(0))(np.ones((1, 6, 6)))
    assert shifted.shape == (1, 6, 6) and shifted.sum() <= 36
    with pytest.raises(ValueError, match="division by zero"):
        Normalize([0.0], [0.0])


def test_seeded_and_stratified_splits():
    x = np.arange(100)
    y = np.array([0] * 80 + [1] * 20)
    a = train_val_test_split(x, y, fractions=(0.6, 0.2, 0.2), seed=1)
    b = train_val_test_split(x, y, fractions=(0.6, 0.2, 0.2), seed=1)
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)
    assert [len(p) for p in a[:3]] == [60, 20, 20]
    assert sorted(np.concatenate(a[:3]).tolist()) == list(range(100))
    strat = train_val_test_split(x, y, fractions=(0.5, 0.25, 0.25), seed=0, stratify=y)
    for part in strat[3:]:
        assert (part == 1).mean() == pytest.approx(0.2)
    xt, xv = train_test_split(rtx.arange(10), test_size=0.3, seed=0)
    assert isinstance(xt, rtx.Tensor) and len(xt) == 7 and len(xv) == 3


class Noisy(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return RandomNoise(1.0)(np.zeros(3, dtype=np.float32))


def test_augmentation_is_reproducible_in_workers():
    def run():
        return [b.numpy().copy() for b in DataLoader(Noisy(), batch_size=4, num_workers=2,
                                                     generator=rtx.Generator().manual_seed(5))]
    first, second = run(), run()
    for p, q in zip(first, second):
        np.testing.assert_array_equal(p, q)
    assert not np.array_equal(first[0][0], first[0][1])
