"""Detection ops against brute-force NumPy (loops over boxes, pixels and samples), gradients by
finite differences in float64."""
import math

import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck, gradgradcheck
from rtx.vision import ops

RNG = np.random.default_rng(0)


def random_boxes(n, size=100.0, rng=RNG):
    xy = rng.random((n, 2)) * size
    wh = rng.random((n, 2)) * size / 3 + 1
    return np.concatenate([xy, xy + wh], axis=1)


def iou_loop(a, b):
    out = np.zeros((len(a), len(b)))
    for i, p in enumerate(a):
        for j, q in enumerate(b):
            w = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
            h = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
            inter = w * h
            out[i, j] = inter / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter)
    return out


def nms_loop(boxes, scores, thr):
    """The textbook greedy loop: repeatedly take the best remaining box, drop its overlaps."""
    remaining = sorted(range(len(boxes)), key=lambda i: (-scores[i], i))
    keep = []
    while remaining:
        best = remaining.pop(0)
        keep.append(best)
        remaining = [i for i in remaining if iou_loop(boxes[best:best + 1], boxes[i:i + 1])[0, 0] <= thr]
    return keep


def test_box_area_and_iou():
    a, b = random_boxes(7), random_boxes(5)
    np.testing.assert_allclose(ops.box_area(rtx.tensor(a)).numpy(), (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]))
    np.testing.assert_allclose(ops.box_iou(rtx.tensor(a), rtx.tensor(b)).numpy(), iou_loop(a, b), rtol=1e-12)


def test_generalized_box_iou():
    a, b = random_boxes(6), random_boxes(4)
    ref = iou_loop(a, b)
    for i in range(len(a)):
        for j in range(len(b)):
            p, q = a[i], b[j]
            enclose = (max(p[2], q[2]) - min(p[0], q[0])) * (max(p[3], q[3]) - min(p[1], q[1]))
            inter = max(0, min(p[2], q[2]) - max(p[0], q[0])) * max(0, min(p[3], q[3]) - max(p[1], q[1]))
            union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
            ref[i, j] -= (enclose - union) / enclose
    np.testing.assert_allclose(ops.generalized_box_iou(rtx.tensor(a), rtx.tensor(b)).numpy(), ref, rtol=1e-12)


def test_iou_is_differentiable():
    a = rtx.tensor(random_boxes(3), requires_grad=True)
    b = rtx.tensor(random_boxes(2) + np.array([-20, -20, 20, 20]))
    assert gradcheck(lambda x: ops.box_iou(x, b), (a,))
    assert gradcheck(lambda x: ops.generalized_box_iou(x, b), (a,))


@pytest.mark.parametrize("fmt", ["xywh", "cxcywh"])
def test_box_convert_round_trip(fmt):
    a = random_boxes(5)
    x1, y1, x2, y2 = a.T
    expected = {"xywh": np.stack([x1, y1, x2 - x1, y2 - y1], 1),
                "cxcywh": np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], 1)}[fmt]
    t = rtx.tensor(a)
    out = ops.box_convert(t, "xyxy", fmt)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(ops.box_convert(out, fmt, "xyxy").numpy(), a, rtol=1e-12)
    other = "cxcywh" if fmt == "xywh" else "xywh"
    np.testing.assert_allclose(ops.box_convert(ops.box_convert(out, fmt, other), other, "xyxy").numpy(), a,
                               rtol=1e-12)
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        ops.box_convert(t, "xyxy", "yxyx")


@pytest.mark.parametrize("thr", [0.0, 0.3, 0.5, 0.8])
def test_nms_against_the_greedy_loop(thr):
    rng = np.random.default_rng(int(thr * 10))
    boxes = random_boxes(60, size=50.0, rng=rng)
    scores = rng.random(60)
    scores[5] = scores[9]   # a tie: the lower index goes first
    keep = ops.nms(rtx.tensor(boxes), rtx.tensor(scores), thr)
    assert keep.dtype == rtx.int64
    assert keep.tolist() == nms_loop(boxes, scores, thr)


def test_batched_nms_never_crosses_categories():
    boxes = random_boxes(40, size=30.0)
    scores = RNG.random(40)
    idxs = RNG.integers(0, 3, 40)
    keep = ops.batched_nms(rtx.tensor(boxes), rtx.tensor(scores), rtx.tensor(idxs), 0.4).tolist()
    ref = []
    for c in range(3):
        members = np.nonzero(idxs == c)[0]
        ref += [int(members[k]) for k in nms_loop(boxes[members], scores[members], 0.4)]
    assert keep == sorted(ref, key=lambda i: -scores[i])
    empty = ops.batched_nms(rtx.zeros(0, 4), rtx.zeros(0), rtx.zeros(0, dtype=rtx.int64), 0.5)
    assert tuple(empty.shape) == (0,)


def test_nms_errors_and_small_box_helpers():
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        ops.nms(rtx.zeros(3, 5), rtx.zeros(3), 0.5)
    with pytest.raises(ValueError, match=r"scores must be a Tensor of shape \(3,\)"):
        ops.nms(rtx.zeros(3, 4), rtx.zeros(2), 0.5)
    b = rtx.tensor([[0.0, 0, 5, 5], [0, 0, 0.5, 9], [-3, 2, 12, 30]])
    assert ops.remove_small_boxes(b, 1.0).tolist() == [0, 2]
    assert ops.clip_boxes_to_image(b, (20, 10)).tolist()[2] == [0, 2, 10, 20]


def roi_align_loop(x, rois, ph, pw, scale, sampling, aligned):
    """torchvision's CPU kernel, loop for loop."""
    N, C, H, W = x.shape
    out = np.zeros((len(rois), C, ph, pw))

    def bilinear(img, y, xx):
        if y < -1.0 or y > H or xx < -1.0 or xx > W:
            return 0.0
        y, xx = max(y, 0.0), max(xx, 0.0)
        y_low, x_low = int(y), int(xx)
        if y_low >= H - 1:
            y_high = y_low = H - 1
            y = float(y_low)
        else:
            y_high = y_low + 1
        if x_low >= W - 1:
            x_high = x_low = W - 1
            xx = float(x_low)
        else:
            x_high = x_low + 1
        ly, lx = y - y_low, xx - x_low
        hy, hx = 1 - ly, 1 - lx
        return (hy * hx * img[y_low, x_low] + hy * lx * img[y_low, x_high] + ly * hx * img[y_high, x_low]
                + ly * lx * img[y_high, x_high])

    off = 0.5 if aligned else 0.0
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        sw, sh, ew, eh = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
        rw, rh = ew - sw, eh - sh
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling if sampling > 0 else math.ceil(rh / ph)
        gw = sampling if sampling > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for c in range(C):
            for i in range(ph):
                for j in range(pw):
                    acc = 0.0
                    for iy in range(gh):
                        y = sh + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = sw + j * bw + (ix + 0.5) * bw / gw
                            acc += bilinear(x[int(b), c], y, xx)
                    out[k, c, i, j] = acc / count
    return out


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling", [-1, 2])
def test_roi_align_against_the_loop(aligned, sampling):
    x = RNG.standard_normal((2, 3, 10, 12))
    rois = np.array([[0, 1.2, 0.7, 8.9, 6.1], [1, 0, 0, 11.5, 9.5], [1, -3, -2, 4, 5], [0, 5, 5, 5.3, 5.2],
                     [0, 9, 7, 30, 25]])
    out = ops.roi_align(rtx.tensor(x), rtx.tensor(rois), (3, 4), spatial_scale=0.9, sampling_ratio=sampling,
                        aligned=aligned)
    np.testing.assert_allclose(out.numpy(), roi_align_loop(x, rois, 3, 4, 0.9, sampling, aligned), atol=1e-12)


def test_roi_align_box_list_module_and_gradients():
    x = rtx.tensor(RNG.standard_normal((2, 2, 6, 6)), requires_grad=True)
    per_image = [rtx.tensor([[0.5, 0.5, 4.0, 5.0]]), rtx.tensor([[1.0, 0.0, 5.5, 3.0], [0, 0, 6, 6.0]])]
    flat = rtx.tensor([[0, 0.5, 0.5, 4.0, 5.0], [1, 1.0, 0.0, 5.5, 3.0], [1, 0, 0, 6, 6.0]])
    a = ops.roi_align(x, per_image, 2, 1.0, 2)
    b = ops.RoIAlign(2, 1.0, 2)(x, flat)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert gradcheck(lambda t: ops.roi_align(t, flat, 2, 1.0, -1, True), (x,))
    assert gradgradcheck(lambda t: ops.roi_align(t, flat, 2, 1.0, 2), (x,))
    with pytest.raises(ValueError, match="image indices"):
        ops.roi_align(x, rtx.tensor([[2, 0, 0, 1, 1.0]]), 2)
    with pytest.raises(ValueError, match=r"\(K, 5\)"):
        ops.roi_align(x, rtx.zeros(3, 4), 2)


def test_sigmoid_focal_loss():
    logits = RNG.standard_normal((4, 5))
    targets = (RNG.random((4, 5)) > 0.5).astype(np.float64)
    p = 1 / (1 + np.exp(-logits))
    ce = -(targets * np.log(p) + (1 - targets) * np.log(1 - p))
    p_t = p * targets + (1 - p) * (1 - targets)
    ref = (0.25 * targets + 0.75 * (1 - targets)) * ce * (1 - p_t) ** 2
    out = ops.sigmoid_focal_loss(rtx.tensor(logits), rtx.tensor(targets))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(float(ops.sigmoid_focal_loss(rtx.tensor(logits), rtx.tensor(targets),
                                                            alpha=-1, gamma=0, reduction="mean")), ce.mean())
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction'"):
        ops.sigmoid_focal_loss(rtx.tensor(logits), rtx.tensor(targets), reduction="avg")


def test_stochastic_depth():
    x = rtx.ones(1000, 3)
    rtx.manual_seed(0)
    out = ops.stochastic_depth(x, 0.3, "row").numpy()
    rows = out[:, 0]
    assert np.all(np.isclose(rows, 0.0) | np.isclose(rows, 1 / 0.7)) and (out == out[:, :1]).all()
    assert 0.6 < (rows > 0).mean() < 0.8
    assert ops.stochastic_depth(x, 0.3, "row", training=False) is x
    with pytest.raises(ValueError, match="mode has to be"):
        ops.stochastic_depth(x, 0.3, "col")
