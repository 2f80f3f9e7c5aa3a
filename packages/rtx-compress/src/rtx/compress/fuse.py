"""fuse_modules: replace conv+bn(+relu) and linear(+bn)(+relu) runs of submodules by one fused
module (torch.ao.quantization.fuse_modules), folding BatchNorm into the weights in eval mode."""
from __future__ import annotations

import copy

import rtx.nn as nn
from rtx.compress import intrinsic as nni
from rtx.nn.utils.fusion import fuse_conv_bn_weights  # re-exported: torch.ao.quantization has it too

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_conv_bn_eval", "fuse_linear_bn_eval", "fuse_conv_bn_weights"]


def fuse_conv_bn_eval(conv, bn):
    """A copy of conv with bn (eval mode: running statistics) folded in."""
    if conv.training or bn.training:
        raise ValueError("fusing BatchNorm into the weights needs eval mode (model.eval()); for "
                         "training use fuse_modules_qat")
    if not bn.track_running_stats or bn.running_mean is None:
        raise ValueError("BatchNorm without running statistics cannot be folded into the weights")
    if bn.num_features != conv.out_channels:
        raise ValueError(f"BatchNorm has {bn.num_features} features but the conv has {conv.out_channels} "
                         "output channels")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of linear with a BatchNorm1d over its outputs folded in."""
    if linear.training or bn.training:
        raise ValueError("fusing BatchNorm into the weights needs eval mode (model.eval())")
    if bn.num_features != linear.out_features:
        raise ValueError(f"BatchNorm1d has {bn.num_features} features but the Linear has {linear.out_features} "
                         "outputs")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_conv_bn_weights(linear.weight, linear.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias)
    return fused


def _fuse_eval(mods):
    kinds = tuple(type(m) for m in mods)
    if kinds == (nn.Conv2d, nn.BatchNorm2d):
        return fuse_conv_bn_eval(*mods)
    if kinds == (nn.Conv2d, nn.BatchNorm2d, nn.ReLU):
        return nni.ConvReLU2d(fuse_conv_bn_eval(mods[0], mods[1]), mods[2])
    if kinds == (nn.Conv2d, nn.ReLU):
        return nni.ConvReLU2d(*mods)
    if kinds == (nn.Linear, nn.ReLU):
        return nni.LinearReLU(*mods)
    if kinds == (nn.Linear, nn.BatchNorm1d):
        return fuse_linear_bn_eval(*mods)
    if kinds == (nn.BatchNorm2d, nn.ReLU):
        return nn.Sequential(*mods)
    return None


def _fuse_qat(mods):
    kinds = tuple(type(m) for m in mods)
    if kinds == (nn.Conv2d, nn.BatchNorm2d):
        return nni.ConvBn2d(*mods)
    if kinds == (nn.Conv2d, nn.BatchNorm2d, nn.ReLU):
        return nni.ConvBnReLU2d(*mods)
    if kinds == (nn.Conv2d, nn.ReLU):
        return nni.ConvReLU2d(*mods)
    if kinds == (nn.Linear, nn.ReLU):
        return nni.LinearReLU(*mods)
    return None


def _parent_and_name(model, path):
    *parents, name = path.split(".")
    parent = model
    for p in parents:
        parent = getattr(parent, p)
    return parent, name


def _fuse(model, modules_to_fuse, inplace, fuser):
    if not isinstance(model, nn.Module):
        raise TypeError(f"fuse_modules expects an rtx nn.Module, got {type(model).__name__}")
    if isinstance(modules_to_fuse, str) or not isinstance(modules_to_fuse, (list, tuple)) or not modules_to_fuse:
        raise TypeError("fuse_modules: modules_to_fuse must be a list of submodule names (['conv', 'bn', 'relu']) "
                        f"or a list of such lists, got {modules_to_fuse!r}")
    if not inplace:
        model = copy.deepcopy(model)
    groups = modules_to_fuse
    if groups and isinstance(groups[0], str):
        groups = [groups]
    for group in groups:
        mods = []
        for path in group:
            try:
                mods.append(model.get_submodule(path))
            except AttributeError:
                raise ValueError(f"fuse_modules: {type(model).__name__} has no submodule {path!r}") from None
        fused = fuser(mods)
        if fused is None:
            raise ValueError("fuse_modules: no fusion for the sequence "
                             f"{[type(m).__name__ for m in mods]}; supported: Conv2d+BatchNorm2d(+ReLU), "
                             "Conv2d+ReLU, Linear+ReLU, Linear+BatchNorm1d (eval only), BatchNorm2d+ReLU "
                             "(eval only)")
        # the first module becomes the fused one, the rest identities (the forward code is unchanged)
        parent, name = _parent_and_name(model, group[0])
        setattr(parent, name, fused)
        for path in group[1:]:
            parent, name = _parent_and_name(model, path)
            setattr(parent, name, nn.Identity())
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuse_custom_config_dict=None):
    """Fuse each list of submodule names, e.g. fuse_modules(model, [["conv1", "bn1", "relu1"]]).
    The model must be in eval mode when a BatchNorm is folded."""
    if fuse_custom_config_dict:
        raise NotImplementedError("fuse_modules: fuse_custom_config_dict is not supported by rtx.compress")
    return _fuse(model, modules_to_fuse, inplace, _fuse_eval)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuse_custom_config_dict=None):
    """As fuse_modules, for quantization-aware training: Conv2d+BatchNorm2d(+ReLU) keep the
    BatchNorm live (folded in on the fly by qat.ConvBn2d), Conv2d+ReLU and Linear+ReLU."""
    if fuse_custom_config_dict:
        raise NotImplementedError("fuse_modules_qat: fuse_custom_config_dict is not supported by rtx.compress")
    return _fuse(model, modules_to_fuse, inplace, _fuse_qat)
