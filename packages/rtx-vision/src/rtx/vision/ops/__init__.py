"""Detection and model-building ops as torchvision.ops: box utilities (nms, batched_nms, box_iou,
box_convert, ...), roi_align, sigmoid_focal_loss, and the blocks the model families share."""
# ruff: noqa: F401
from rtx.vision.ops.boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    generalized_box_iou,
    nms,
    remove_small_boxes,
)
from rtx.vision.ops.focal_loss import sigmoid_focal_loss
from rtx.vision.ops.misc import MLP, Conv2dNormActivation, SqueezeExcitation, StochasticDepth, stochastic_depth
from rtx.vision.ops.roi_align import RoIAlign, roi_align

__all__ = ["nms", "batched_nms", "box_area", "box_iou", "generalized_box_iou", "box_convert", "clip_boxes_to_image",
           "remove_small_boxes", "roi_align", "RoIAlign", "sigmoid_focal_loss", "Conv2dNormActivation",
           "SqueezeExcitation", "MLP", "StochasticDepth", "stochastic_depth"]
