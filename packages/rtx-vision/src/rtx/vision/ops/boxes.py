"""Box operations as torchvision.ops.boxes. Boxes are (N, 4) tensors; "xyxy" is
(x1, y1, x2, y2) with 0 <= x1 < x2 and 0 <= y1 < y2. Area, IoU and the format conversions are
written in rtx tensor ops, so they are differentiable (a GIoU loss trains through them); nms
and batched_nms return int64 indices, computed on the boxes' arrays."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.extend import Tensor

__all__ = ["nms", "batched_nms", "box_area", "box_iou", "generalized_box_iou", "box_convert",
           "clip_boxes_to_image", "remove_small_boxes"]

_FORMATS = ("xyxy", "xywh", "cxcywh")


def _check_boxes(boxes, name, op):
    if type(boxes) is not Tensor:
        raise TypeError(f"{op}(): {name} must be a Tensor of shape (N, 4), got {type(boxes).__name__}")
    if boxes.ndim != 2 or boxes.shape[-1] != 4:
        raise ValueError(f"{op}(): {name} must have shape (N, 4), got {tuple(boxes.shape)}")


def box_area(boxes):
    """Area of each xyxy box: (x2 - x1) * (y2 - y1), shape (N,)."""
    _check_boxes(boxes, "boxes", "box_area")
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = rtx.maximum(boxes1[:, None, :2], boxes2[None, :, :2])   # (N, M, 2)
    rb = rtx.minimum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, area1[:, None] + area2[None, :] - inter


def box_iou(boxes1, boxes2):
    """Intersection over union of every pair of xyxy boxes: (N, M)."""
    _check_boxes(boxes1, "boxes1", "box_iou")
    _check_boxes(boxes2, "boxes2", "box_iou")
    inter, union = _box_inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    """GIoU (Rezatofighi et al., 2019) of every pair: IoU - (enclosing area - union) / enclosing area."""
    _check_boxes(boxes1, "boxes1", "generalized_box_iou")
    _check_boxes(boxes2, "boxes2", "generalized_box_iou")
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lt = rtx.minimum(boxes1[:, None, :2], boxes2[None, :, :2])
    rb = rtx.maximum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[..., 0] * wh[..., 1]
    return iou - (area - union) / area


def box_convert(boxes, in_fmt, out_fmt):
    """Convert between 'xyxy' (corners), 'xywh' (top-left corner, size) and 'cxcywh' (centre, size)."""
    if in_fmt not in _FORMATS or out_fmt not in _FORMATS:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt!r} and out_fmt "
                         f"{out_fmt!r}: expected each to be one of {_FORMATS}")
    if type(boxes) is not Tensor or boxes.shape[-1:] != (4,):
        shape = tuple(boxes.shape) if type(boxes) is Tensor else type(boxes).__name__
        raise ValueError(f"box_convert(): boxes must be a Tensor of shape (..., 4), got {shape}")
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        x1, y1, x2, y2 = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        x1, y1, x2, y2 = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    else:
        x1, y1, x2, y2 = a, b, c, d
    if out_fmt == "xywh":
        out = (x1, y1, x2 - x1, y2 - y1)
    elif out_fmt == "cxcywh":
        out = ((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1)
    else:
        out = (x1, y1, x2, y2)
    return rtx.stack(out, dim=-1)


def clip_boxes_to_image(boxes, size):
    """Clip xyxy boxes to an image of size (height, width)."""
    if type(boxes) is not Tensor or boxes.shape[-1:] != (4,):
        raise ValueError("clip_boxes_to_image(): boxes must be a Tensor of shape (..., 4)")
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return rtx.stack((x, y), dim=-1).reshape(boxes.shape)


def remove_small_boxes(boxes, min_size):
    """Indices (int64) of the xyxy boxes whose width and height are both at least min_size."""
    _check_boxes(boxes, "boxes", "remove_small_boxes")
    b = _host(boxes)
    return _indices(np.nonzero(((b[:, 2] - b[:, 0]) >= min_size) & ((b[:, 3] - b[:, 1]) >= min_size))[0], boxes)


def _host(t):
    """A tensor's values as a NumPy array (NMS is a sequential loop: it runs on the host)."""
    return t.detach().cpu().numpy()


def _indices(keep, like):
    return rtx.as_tensor(np.ascontiguousarray(keep, dtype=np.int64)).to(like.device)


def _nms_array(b, s, iou_threshold):
    """Greedy NMS on NumPy arrays: visit boxes by decreasing score (ties: lower index first), keep
    one, drop every later box whose IoU with it exceeds the threshold."""
    order = np.argsort(-s, kind="stable")
    b = b[order].astype(np.float64)
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    n = b.shape[0]
    suppressed = np.zeros(n, dtype=bool)
    keep = []
    for i in range(n):
        if suppressed[i]:
            continue
        keep.append(i)
        rest = b[i + 1:]
        w = np.clip(np.minimum(b[i, 2], rest[:, 2]) - np.maximum(b[i, 0], rest[:, 0]), 0, None)
        h = np.clip(np.minimum(b[i, 3], rest[:, 3]) - np.maximum(b[i, 1], rest[:, 1]), 0, None)
        inter = w * h
        suppressed[i + 1:] |= inter / (area[i] + area[i + 1:] - inter) > iou_threshold
    return order[np.asarray(keep, dtype=np.int64)]


def _check_nms(boxes, scores, op):
    _check_boxes(boxes, "boxes", op)
    if type(scores) is not Tensor or scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        got = tuple(scores.shape) if type(scores) is Tensor else type(scores).__name__
        raise ValueError(f"{op}(): scores must be a Tensor of shape ({boxes.shape[0]},) to match boxes, got {got}")


def nms(boxes, scores, iou_threshold):
    """Non-maximum suppression: indices (int64) of the kept boxes, by decreasing score. A box is
    dropped when its IoU with a higher-scoring kept box is greater than iou_threshold."""
    _check_nms(boxes, scores, "nms")
    return _indices(_nms_array(_host(boxes), _host(scores), float(iou_threshold)), boxes)


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS within each category of idxs (boxes of different categories never suppress each other);
    indices (int64) of the kept boxes, by decreasing score."""
    _check_nms(boxes, scores, "batched_nms")
    if type(idxs) is not Tensor or tuple(idxs.shape) != tuple(scores.shape):
        got = tuple(idxs.shape) if type(idxs) is Tensor else type(idxs).__name__
        raise ValueError(f"batched_nms(): idxs must be a Tensor of shape {tuple(scores.shape)}, got {got}")
    b, s, c = _host(boxes), _host(scores), _host(idxs)
    kept = [np.zeros(0, dtype=np.int64)]
    for k in np.unique(c):
        members = np.nonzero(c == k)[0]
        kept.append(members[_nms_array(b[members], s[members], float(iou_threshold))])
    keep = np.concatenate(kept)
    return _indices(keep[np.argsort(-s[keep], kind="stable")], boxes)
