"""Transforms against Pillow (which torchvision's PIL path is) and NumPy references, on the three
image kinds (PIL, rtx tensor (C, H, W), NumPy (H, W, C)), plus seeding and errors."""
import colorsys

import numpy as np
import pytest
from PIL import Image

import rtx
import rtx.vision.transforms as T
import rtx.vision.transforms.functional as F
from rtx.vision.transforms.functional import InterpolationMode as IM

RNG = np.random.default_rng(0)
RGB = RNG.integers(0, 256, (37, 53, 3), dtype=np.uint8)   # (H, W, C), odd sizes on purpose
GRAY_F = RNG.random((37, 53)).astype(np.float32)


def as_tensor(hwc):
    return rtx.from_numpy(np.ascontiguousarray(np.moveaxis(hwc, -1, 0)))


def from_tensor(t):
    return np.moveaxis(t.numpy(), 0, -1)


def kinds(hwc):
    """The same image as NumPy, tensor and PIL."""
    return {"numpy": hwc, "tensor": as_tensor(hwc), "pil": Image.fromarray(hwc)}


def to_hwc(img):
    if isinstance(img, Image.Image):
        return np.asarray(img)
    if isinstance(img, np.ndarray):
        return img
    return from_tensor(img)


# ---- resize -----------------------------------------------------------------------------------

def ref_bilinear(x, oh, ow):
    """interpolate(mode='bilinear', align_corners=False) without antialias, written out: source
    coordinate (i + 0.5) * in / out - 0.5, clamped at 0, two taps."""
    def axis(n_in, n_out):
        src = np.maximum((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0)
        i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0
    y0, y1, ly = axis(x.shape[0], oh)
    x0, x1, lx = axis(x.shape[1], ow)
    top = x[y0][:, x0] * (1 - lx) + x[y0][:, x1] * lx
    bot = x[y1][:, x0] * (1 - lx) + x[y1][:, x1] * lx
    return top * (1 - ly[:, None]) + bot * ly[:, None]


@pytest.mark.parametrize("size", [(20, 30), (60, 80), (10, 100), (5, 3)])
@pytest.mark.parametrize("mode,pil", [("bilinear", Image.Resampling.BILINEAR), ("bicubic", Image.Resampling.BICUBIC)])
def test_resize_antialias_equals_pillow_in_float(size, mode, pil):
    ref = np.asarray(Image.fromarray(GRAY_F).resize(size[::-1], pil))
    np.testing.assert_allclose(F.resize(GRAY_F, size, mode), ref, atol=1e-6)
    t = F.resize(rtx.from_numpy(GRAY_F[None]), size, mode, antialias=True)
    np.testing.assert_allclose(t.numpy()[0], ref, atol=1e-6)


@pytest.mark.parametrize("size", [(20, 30), (60, 80), (74, 26)])
def test_resize_uint8_within_one_of_pillow(size):
    ref = np.asarray(Image.fromarray(RGB).resize(size[::-1], Image.Resampling.BILINEAR)).astype(int)
    for kind, img in kinds(RGB).items():
        out = to_hwc(T.Resize(size)(img)).astype(int)
        assert out.shape == ref.shape, kind
        assert np.abs(out - ref).max() <= 1, kind


@pytest.mark.parametrize("size", [(20, 30), (60, 80), (37, 106)])
def test_resize_without_antialias_is_interpolate_bilinear(size):
    out = F.resize(GRAY_F, size, "bilinear", antialias=False)
    np.testing.assert_allclose(out, ref_bilinear(GRAY_F.astype(np.float64), *size), atol=1e-6)


@pytest.mark.parametrize("size", [(20, 30), (60, 80), (37, 106)])
def test_resize_nearest_rules(size):
    oh, ow = size
    ys = np.minimum((np.arange(oh) * 37 / oh).astype(int), 36)
    xs = np.minimum((np.arange(ow) * 53 / ow).astype(int), 52)
    np.testing.assert_array_equal(to_hwc(F.resize(as_tensor(RGB), size, IM.NEAREST)), RGB[ys][:, xs])
    # nearest-exact samples pixel centres, which is Pillow's NEAREST
    pil = np.asarray(Image.fromarray(RGB).resize(size[::-1], Image.Resampling.NEAREST))
    np.testing.assert_array_equal(F.resize(RGB, size, IM.NEAREST_EXACT), pil)


def test_resize_shorter_edge_and_max_size():
    assert F.get_dimensions(T.Resize(20)(RGB)) == [3, 20, 28]           # 53 * 20 / 37 = 28.6 -> 28
    assert F.get_image_size(T.Resize(20)(Image.fromarray(RGB))) == [28, 20]
    assert F.get_dimensions(T.Resize(20, max_size=25)(as_tensor(RGB))) == [3, 17, 25]
    with pytest.raises(ValueError, match="max_size = 20 must be strictly greater"):
        F.resize(RGB, 20, max_size=20)
    with pytest.raises(TypeError, match="Size should be int or sequence"):
        T.Resize("20")


def test_resize_keeps_batch_dims_and_dtype():
    x = rtx.rand(2, 3, 3, 16, 16, dtype=rtx.float64)
    y = F.resize(x, (8, 8))
    assert tuple(y.shape) == (2, 3, 3, 8, 8) and y.dtype == rtx.float64
    # each (H, W) slice as Pillow resizes it, in float32
    ref = [np.asarray(Image.fromarray(s.astype(np.float32)).resize((8, 8), Image.Resampling.BILINEAR))
           for s in x.numpy().reshape(-1, 16, 16)]
    np.testing.assert_allclose(y.numpy(), np.reshape(ref, (2, 3, 3, 8, 8)), atol=1e-6)


# ---- crops, flips, padding --------------------------------------------------------------------

def test_center_crop_and_padding_when_larger():
    for kind, img in kinds(RGB).items():
        out = to_hwc(T.CenterCrop((20, 31))(img))
        top, left = int(round((37 - 20) / 2)), int(round((53 - 31) / 2))
        np.testing.assert_array_equal(out, RGB[top:top + 20, left:left + 31], err_msg=kind)
        big = to_hwc(T.CenterCrop((41, 60))(img))
        ref = np.zeros((41, 60, 3), np.uint8)
        ref[2:39, 3:56] = RGB
        np.testing.assert_array_equal(big, ref, err_msg=kind)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_modes_against_numpy(mode):
    padding = (1, 2, 3, 4)   # left, top, right, bottom
    kw = {"constant_values": 7} if mode == "constant" else {}
    ref = np.pad(RGB, ((2, 4), (1, 3), (0, 0)), mode=mode, **kw)
    for kind, img in kinds(RGB).items():
        np.testing.assert_array_equal(to_hwc(T.Pad(padding, fill=7, padding_mode=mode)(img)), ref, err_msg=kind)


def test_pad_forms_and_per_channel_fill():
    assert F.get_dimensions(F.pad(RGB, 2)) == [3, 41, 57]
    assert F.get_dimensions(F.pad(RGB, (1, 2))) == [3, 41, 55]
    out = F.pad(as_tensor(RGB), [1, 0, 0, 0], fill=(1, 2, 3))
    assert out[:, 0, 0].tolist() == [1, 2, 3]
    np.testing.assert_array_equal(to_hwc(F.pad(as_tensor(RGB), [-2, -1, 0, -3])), RGB[1:-3, 2:])
    with pytest.raises(ValueError, match="1, 2, or 4 element"):
        T.Pad((1, 2, 3))


def test_flips():
    for kind, img in kinds(RGB).items():
        np.testing.assert_array_equal(to_hwc(F.hflip(img)), RGB[:, ::-1], err_msg=kind)
        np.testing.assert_array_equal(to_hwc(F.vflip(img)), RGB[::-1], err_msg=kind)
        np.testing.assert_array_equal(to_hwc(T.RandomHorizontalFlip(p=1.0)(img)), RGB[:, ::-1])
        np.testing.assert_array_equal(to_hwc(T.RandomHorizontalFlip(p=0.0)(img)), RGB)


def test_random_crop_is_a_window_and_seeded():
    a = T.RandomCrop(16, padding=4, generator=rtx.Generator().manual_seed(3))
    b = T.RandomCrop(16, padding=4, generator=rtx.Generator().manual_seed(3))
    img = as_tensor(RGB)
    padded = np.pad(RGB, ((4, 4), (4, 4), (0, 0)))
    for _ in range(5):
        out = to_hwc(a(img))
        np.testing.assert_array_equal(out, to_hwc(b(img)))
        hits = [(i, j) for i in range(padded.shape[0] - 15) for j in range(padded.shape[1] - 15)
                if np.array_equal(padded[i:i + 16, j:j + 16], out)]
        assert hits
    assert F.get_dimensions(T.RandomCrop(50, pad_if_needed=True)(RGB[:20, :20])) == [3, 50, 50]
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop(60)(RGB)


def test_random_crop_uses_the_default_generator():
    rtx.manual_seed(5)
    first = to_hwc(T.RandomCrop(10)(RGB))
    rtx.manual_seed(5)
    np.testing.assert_array_equal(to_hwc(T.RandomCrop(10)(RGB)), first)


def test_random_resized_crop_params_and_output():
    g = rtx.Generator().manual_seed(0)
    for _ in range(50):
        i, j, h, w = T.RandomResizedCrop.get_params(RGB, (0.08, 1.0), (3 / 4, 4 / 3), g)
        assert 0 <= i and 0 <= j and i + h <= 37 and j + w <= 53
        assert 0.08 * 37 * 53 * 0.8 <= h * w <= 37 * 53
    # impossible scale: the centre crop fallback
    assert T.RandomResizedCrop.get_params(RGB, (2.0, 3.0), (1.0, 1.0), g) == (0, 8, 37, 37)
    t = T.RandomResizedCrop(24, generator=rtx.Generator().manual_seed(1))
    for kind, img in kinds(RGB).items():
        assert F.get_dimensions(t(img)) == [3, 24, 24], kind


def test_resized_crop_matches_pillow():
    ref = np.asarray(Image.fromarray(GRAY_F).crop((5, 3, 5 + 30, 3 + 20)).resize((12, 9), Image.Resampling.BILINEAR))
    np.testing.assert_allclose(F.resized_crop(GRAY_F, 3, 5, 20, 30, (9, 12)), ref, atol=1e-6)


# ---- rotation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("angle", [90, 180, 270, -90])
@pytest.mark.parametrize("expand", [False, True])
def test_rotate_right_angles_exactly(angle, expand):
    ref = np.asarray(Image.fromarray(RGB).rotate(angle, expand=expand))
    for kind in ("numpy", "tensor"):
        np.testing.assert_array_equal(to_hwc(F.rotate(kinds(RGB)[kind], angle, expand=expand)), ref)
    if expand:
        np.testing.assert_array_equal(to_hwc(F.rotate(RGB, angle, expand=True)), np.rot90(RGB, angle // 90))


@pytest.mark.parametrize("angle,center", [(10, None), (33.3, None), (-20, (5, 7)), (123, None)])
@pytest.mark.parametrize("expand", [False, True])
def test_rotate_nearest_matches_pillow(angle, center, expand):
    ref = np.asarray(Image.fromarray(RGB).rotate(angle, Image.Resampling.NEAREST, expand, center,
                                                 fillcolor=(9, 8, 7)))
    out = to_hwc(F.rotate(as_tensor(RGB), angle, IM.NEAREST, expand, center, fill=[9, 8, 7]))
    assert out.shape == ref.shape
    # Pillow maps coordinates in 16.16 fixed point: a pixel centre that falls within rounding of a
    # pixel edge may go either way; anything beyond a handful of such pixels is a real difference.
    assert (out != ref).any(axis=-1).mean() < 0.003


@pytest.mark.parametrize("angle", [10, -33.3, 45])
@pytest.mark.parametrize("expand", [False, True])
def test_rotate_bilinear_equals_pillow_in_float(angle, expand):
    ref = np.asarray(Image.fromarray(GRAY_F).rotate(angle, Image.Resampling.BILINEAR, expand, fillcolor=0.5))
    np.testing.assert_allclose(F.rotate(GRAY_F, angle, IM.BILINEAR, expand, fill=0.5), ref, atol=1e-6)


def test_random_rotation_range_and_seed():
    g = rtx.Generator().manual_seed(0)
    angles = [T.RandomRotation.get_params([-10.0, 10.0], g) for _ in range(200)]
    assert -10 <= min(angles) < -8 and 8 < max(angles) <= 10
    a = T.RandomRotation(15, generator=rtx.Generator().manual_seed(2))(Image.fromarray(RGB))
    b = T.RandomRotation(15, generator=rtx.Generator().manual_seed(2))(Image.fromarray(RGB))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="must be positive"):
        T.RandomRotation(-5)


# ---- colour -----------------------------------------------------------------------------------

def test_grayscale_against_pillow_and_weights():
    ref = np.asarray(Image.fromarray(RGB).convert("L")).astype(int)
    out = to_hwc(T.Grayscale()(as_tensor(RGB)))[..., 0].astype(int)
    assert np.abs(out - ref).max() <= 1
    f = RGB.astype(np.float32) / 255
    expected = 0.2989 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    np.testing.assert_allclose(T.Grayscale(3)(f), np.dstack([expected] * 3), atol=1e-6)
    pil3 = np.asarray(T.Grayscale(3)(Image.fromarray(RGB)))
    assert pil3.shape == (37, 53, 3) and (pil3[..., 0] == pil3[..., 2]).all()


@pytest.mark.parametrize("name", ["brightness", "contrast", "saturation"])
@pytest.mark.parametrize("factor", [0.0, 0.5, 1.3, 2.0])
def test_color_adjustments_against_pillow(name, factor):
    fn = getattr(F, f"adjust_{name}")
    ref = np.asarray(fn(Image.fromarray(RGB), factor)).astype(int)   # ImageEnhance
    for kind in ("numpy", "tensor"):
        out = to_hwc(fn(kinds(RGB)[kind], factor)).astype(int)
        assert np.abs(out - ref).max() <= 1, kind


def test_color_adjustments_float_formulas():
    f = RGB.astype(np.float64) / 255
    gray = 0.2989 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    np.testing.assert_allclose(F.adjust_brightness(f, 1.5), np.clip(1.5 * f, 0, 1))
    np.testing.assert_allclose(F.adjust_contrast(f, 0.7), np.clip(0.7 * f + 0.3 * gray.mean(), 0, 1))
    np.testing.assert_allclose(F.adjust_saturation(f, 1.7), np.clip(1.7 * f - 0.7 * gray[..., None], 0, 1))


@pytest.mark.parametrize("hue", [-0.5, -0.2, 0.1, 0.33])
def test_adjust_hue_against_colorsys(hue):
    f = RGB[:6, :7].astype(np.float64) / 255
    ref = np.empty_like(f)
    for i in range(f.shape[0]):
        for j in range(f.shape[1]):
            h, s, v = colorsys.rgb_to_hsv(*f[i, j])
            ref[i, j] = colorsys.hsv_to_rgb((h + hue) % 1.0, s, v)
    np.testing.assert_allclose(F.adjust_hue(f, hue), ref, atol=1e-12)
    # uint8 against Pillow, whose HSV is quantised to 256 levels: close on average
    pil = np.asarray(F.adjust_hue(Image.fromarray(RGB), hue)).astype(int)
    assert np.abs(F.adjust_hue(RGB, hue).astype(int) - pil).mean() < 2.5
    with pytest.raises(ValueError, match="is not in"):
        F.adjust_hue(RGB, 0.6)


def test_color_jitter_params_order_and_seed():
    cj = T.ColorJitter(brightness=0.4, contrast=(0.5, 1.5), saturation=0.2, hue=0.1)
    assert cj.brightness == (0.6, 1.4) and cj.hue == (-0.1, 0.1)
    g = rtx.Generator().manual_seed(0)
    idx, b, c, s, h = T.ColorJitter.get_params(cj.brightness, cj.contrast, cj.saturation, cj.hue, g)
    assert sorted(idx.tolist()) == [0, 1, 2, 3]
    assert 0.6 <= b <= 1.4 and 0.5 <= c <= 1.5 and 0.8 <= s <= 1.2 and -0.1 <= h <= 0.1
    out1 = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=rtx.Generator().manual_seed(4))(as_tensor(RGB))
    out2 = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=rtx.Generator().manual_seed(4))(as_tensor(RGB))
    np.testing.assert_array_equal(out1.numpy(), out2.numpy())
    assert T.ColorJitter().brightness is None
    with pytest.raises(ValueError, match="hue values should be between"):
        T.ColorJitter(hue=0.7)


# ---- tensors: ToTensor, Normalize, RandomErasing ----------------------------------------------

def test_to_tensor_and_back():
    t = T.ToTensor()(Image.fromarray(RGB))
    assert t.dtype == rtx.float32 and tuple(t.shape) == (3, 37, 53)
    np.testing.assert_allclose(t.numpy(), np.moveaxis(RGB, -1, 0) / 255.0, atol=1e-7)
    np.testing.assert_allclose(T.ToTensor()(RGB).numpy(), t.numpy())
    assert tuple(T.ToTensor()(GRAY_F).shape) == (1, 37, 53)          # float arrays keep their values
    np.testing.assert_array_equal(T.PILToTensor()(Image.fromarray(RGB)).numpy(), np.moveaxis(RGB, -1, 0))
    np.testing.assert_array_equal(np.asarray(T.ToPILImage()(t)), RGB)
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()(t)


def test_normalize_tensor_array_and_gradient():
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    x = T.ToTensor()(RGB)
    ref = (np.moveaxis(RGB, -1, 0) / 255.0 - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(T.Normalize(mean, std)(x).numpy(), ref, atol=1e-6)
    np.testing.assert_allclose(T.Normalize(mean, std)(RGB / 255.0), np.moveaxis(ref, 0, -1), atol=1e-12)
    leaf = rtx.rand(3, 4, 4, requires_grad=True)
    T.Normalize(mean, std)(leaf).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.broadcast_to(1 / np.array(std)[:, None, None], (3, 4, 4)),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="float tensor"):
        T.Normalize(mean, std)(as_tensor(RGB))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize(mean, (1, 0, 1))(x)
    with pytest.raises(TypeError, match="Tensor Image"):
        T.Normalize(mean, std)(Image.fromarray(RGB))


def test_random_erasing():
    x = T.ToTensor()(RGB)
    g = rtx.Generator().manual_seed(0)
    out = T.RandomErasing(p=1.0, value=(0.1, 0.2, 0.3), generator=g)(x)
    changed = (out.numpy() != x.numpy()).any(axis=0)
    ys, xs = np.nonzero(changed)
    box = out.numpy()[:, ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    np.testing.assert_allclose(box, np.broadcast_to(np.array([0.1, 0.2, 0.3])[:, None, None], box.shape),
                               atol=1e-7)
    area = box.shape[1] * box.shape[2]
    assert 0.02 * 37 * 53 * 0.8 <= area <= 0.33 * 37 * 53 * 1.2
    assert np.array_equal(T.RandomErasing(p=0.0)(x).numpy(), x.numpy())
    noisy = T.RandomErasing(p=1.0, value="random", generator=g)(x)
    assert (noisy.numpy() != x.numpy()).any() and x.numpy().max() <= 1.0
    arr = T.RandomErasing(p=1.0, value=0, generator=g)(RGB)
    assert arr.shape == RGB.shape and (arr == 0).all(axis=-1).sum() >= 0.02 * 37 * 53 * 0.8
    with pytest.raises(TypeError, match="apply ToTensor first"):
        T.RandomErasing(p=1.0)(Image.fromarray(RGB))
    with pytest.raises(ValueError, match="either a single value or 3"):
        T.RandomErasing(p=1.0, value=(1, 2))(x)


# ---- composition, reprs, errors ---------------------------------------------------------------

def test_compose_pipeline_and_repr():
    pipeline = T.Compose([T.Resize(16), T.CenterCrop(16), T.RandomHorizontalFlip(), T.ToTensor(),
                          T.Normalize((0.5,) * 3, (0.5,) * 3)])
    out = pipeline(Image.fromarray(RGB))
    assert tuple(out.shape) == (3, 16, 16) and -1.0 <= float(out.min()) and float(out.max()) <= 1.0
    text = repr(pipeline)
    assert text.startswith("Compose(") and "Resize(size=16, interpolation=bilinear" in text
    seq = rtx.nn.Sequential(T.CenterCrop(8), T.RandomHorizontalFlip(p=1.0))
    assert tuple(seq(rtx.rand(3, 16, 16)).shape) == (3, 8, 8)


def test_interpolation_spellings_and_errors():
    for mode in (IM.BILINEAR, "bilinear", Image.Resampling.BILINEAR):
        assert T.Resize(8, interpolation=mode).interpolation is IM.BILINEAR
    with pytest.raises(TypeError, match="InterpolationMode"):
        T.Resize(8, interpolation="trilinear")
    with pytest.raises(TypeError, match="PIL image, an rtx tensor or a NumPy array"):
        F.hflip([1, 2, 3])
    with pytest.raises(ValueError, match=r"\(H, W\) or \(H, W, C\)"):
        F.hflip(np.zeros((1, 2, 3, 4)))
    with pytest.raises(ValueError, match="1 or 3 channels"):
        F.rgb_to_grayscale(rtx.zeros(2, 4, 4))


def test_dataloader_workers_make_reproducible_augmentation():
    from rtx.data import DataLoader, Dataset

    class Images(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return T.Compose([T.RandomCrop(16, padding=2), T.ToTensor()])(RGB[:20, :20])

    def run():
        loader = DataLoader(Images(), batch_size=2, num_workers=2, generator=rtx.Generator().manual_seed(0))
        rtx.manual_seed(0)
        return np.concatenate([b.numpy() for b in loader])
    first = run()
    np.testing.assert_array_equal(first, run())
    # the workers draw different crops (each is seeded differently): not all 8 samples alike
    assert len({first[k].tobytes() for k in range(8)}) > 1


# ---- utils ------------------------------------------------------------------------------------

def test_make_grid_layout_and_save_image(tmp_path):
    from rtx.vision.utils import make_grid, save_image
    imgs = RNG.random((5, 1, 4, 6)).astype(np.float32)
    grid = make_grid(rtx.from_numpy(imgs), nrow=3, padding=1, pad_value=0.5).numpy()
    assert grid.shape == (3, 2 * 5 + 1, 3 * 7 + 1)
    for k in range(5):
        y, x = divmod(k, 3)
        for c in range(3):
            np.testing.assert_array_equal(grid[c, 1 + 5 * y:5 + 5 * y, 1 + 7 * x:7 + 7 * x], imgs[k, 0])
    assert (grid[:, 6:, 15:] == 0.5).all() and (grid[:, 0, :] == 0.5).all()   # the empty sixth cell, the border
    norm = make_grid(rtx.from_numpy(imgs * 4 - 1), normalize=True).numpy()
    assert norm.min() == 0.0 and abs(norm.max() - 1.0) < 1e-6
    save_image(rtx.from_numpy(imgs), tmp_path / "g.png", nrow=3, padding=1)
    back = np.asarray(Image.open(tmp_path / "g.png"))
    assert back.shape == (11, 22, 3) and back[1, 1, 0] == int(imgs[0, 0, 0, 0] * 255 + 0.5)
