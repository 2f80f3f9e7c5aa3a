"""rtx compress: int8 quantization (dynamic, static, QAT), pruning, distillation, low-rank factorization.

Quantization follows torch.ao.quantization (QConfig, observers, fuse_modules, prepare, convert,
prepare_qat, quantize_dynamic); pruning follows torch.nn.utils.prune (rtx.compress.prune).
"""
# ruff: noqa: F401
__version__ = "0.1.0"

from rtx.compress import dynamic, functional, intrinsic, prune, qat, quantized
from rtx.compress.distill import DistillationLoss, distill, distillation_loss
from rtx.compress.fake_quantize import (
                                        FakeQuantize,
                                        default_fake_quant,
                                        default_per_channel_weight_fake_quant,
                                        default_weight_fake_quant,
                                        disable_fake_quant,
                                        disable_observer,
                                        enable_fake_quant,
                                        enable_observer,
)
from rtx.compress.functional import (
                                        dequantize,
                                        fake_quantize_per_channel_affine,
                                        fake_quantize_per_tensor_affine,
                                        quantize_per_channel,
                                        quantize_per_tensor,
)
from rtx.compress.fuse import fuse_conv_bn_eval, fuse_linear_bn_eval, fuse_modules, fuse_modules_qat
from rtx.compress.lowrank import LowRankLinear, factorize_linears, low_rank_linear
from rtx.compress.observer import (
                                        HistogramObserver,
                                        MinMaxObserver,
                                        MovingAverageMinMaxObserver,
                                        MovingAveragePerChannelMinMaxObserver,
                                        ObserverBase,
                                        PercentileObserver,
                                        PerChannelMinMaxObserver,
                                        PlaceholderObserver,
                                        default_histogram_observer,
                                        default_observer,
                                        default_per_channel_weight_observer,
                                        default_weight_observer,
                                        per_channel_affine,
                                        per_channel_symmetric,
                                        per_tensor_affine,
                                        per_tensor_symmetric,
)
from rtx.compress.qconfig import (
                                        QConfig,
                                        default_dynamic_qconfig,
                                        default_per_channel_qconfig,
                                        default_qat_qconfig,
                                        default_qconfig,
                                        float16_dynamic_qconfig,
                                        get_default_qat_qconfig,
                                        get_default_qconfig,
                                        per_channel_dynamic_qconfig,
)
from rtx.compress.qtypes import qint8, qint32, quint8
from rtx.compress.quantize import (
                                        convert,
                                        prepare,
                                        prepare_qat,
                                        propagate_qconfig_,
                                        quantize,
                                        quantize_dynamic,
                                        quantize_qat,
)
from rtx.compress.size import state_dict_bytes
from rtx.compress.stubs import DeQuantStub, QuantStub, QuantWrapper
