"""Eager-mode quantization workflows, as torch.ao.quantization: propagate_qconfig_, prepare
(attach observers), convert (swap in quantized layers), prepare_qat, quantize_dynamic."""
from __future__ import annotations

import copy
import warnings

import rtx
import rtx.nn as nn
from rtx.compress import dynamic as nnqd
from rtx.compress import intrinsic as nni
from rtx.compress import qat as nnqat
from rtx.compress import quantized as nnq
from rtx.compress.observer import PlaceholderObserver
from rtx.compress.qconfig import QConfig, bfloat16_dynamic_qconfig, float16_dynamic_qconfig, per_channel_dynamic_qconfig
from rtx.compress.qtypes import qint8
from rtx.compress.stubs import DeQuantStub, QuantStub

__all__ = ["propagate_qconfig_", "prepare", "convert", "prepare_qat", "quantize", "quantize_dynamic",
           "quantize_qat", "get_default_static_quant_module_mappings", "get_default_qat_module_mappings",
           "get_default_dynamic_quant_module_mappings"]


def get_default_static_quant_module_mappings():
    return {nn.Linear: nnq.Linear, nn.Conv2d: nnq.Conv2d, nni.LinearReLU: nnq.LinearReLU,
            nni.ConvReLU2d: nnq.ConvReLU2d, nnqat.Linear: nnq.Linear, nnqat.LinearReLU: nnq.LinearReLU,
            nnqat.Conv2d: nnq.Conv2d, nnqat.ConvReLU2d: nnq.ConvReLU2d, nnqat.ConvBn2d: nnq.Conv2d,
            nnqat.ConvBnReLU2d: nnq.ConvReLU2d, QuantStub: nnq.Quantize,
            DeQuantStub: nnq.DeQuantize}


def get_default_qat_module_mappings():
    return {nn.Linear: nnqat.Linear, nn.Conv2d: nnqat.Conv2d, nni.LinearReLU: nnqat.LinearReLU,
            nni.ConvReLU2d: nnqat.ConvReLU2d, nni.ConvBn2d: nnqat.ConvBn2d, nni.ConvBnReLU2d: nnqat.ConvBnReLU2d}


def get_default_dynamic_quant_module_mappings():
    return {nn.Linear: nnqd.Linear, nn.LSTM: nnqd.LSTM, nn.MultiheadAttention: nnqd.MultiheadAttention}


def _not_supported(fn, **options):
    """PyTorch's custom-config arguments are in the signatures for compatibility; rtx has no custom
    modules, so a given one is an error rather than silently ignored."""
    given = [k for k, v in options.items() if v]
    if given:
        raise NotImplementedError(f"{fn}: {', '.join(given)} is not supported by rtx.compress")


def _check_module(model, fn):
    if not isinstance(model, nn.Module):
        raise TypeError(f"{fn} expects an rtx nn.Module, got {type(model).__name__}")


def propagate_qconfig_(module, qconfig_dict=None):
    """Give every submodule a .qconfig: its own if set (None excludes it), else its parent's.
    qconfig_dict maps a submodule name ("" for all) or a module type to a QConfig."""
    _check_module(module, "propagate_qconfig_")
    qconfig_dict = qconfig_dict or {}

    def visit(mod, name, parent_qconfig):
        qconfig = qconfig_dict.get(type(mod), parent_qconfig)
        qconfig = qconfig_dict.get(name, qconfig)
        qconfig = getattr(mod, "qconfig", qconfig)
        if qconfig is not None and not isinstance(qconfig, QConfig):
            raise TypeError(f"qconfig of {name or 'the model'} must be a QConfig, got {type(qconfig).__name__}")
        mod.qconfig = qconfig
        for child_name, child in mod.named_children():
            visit(child, f"{name}.{child_name}" if name else child_name, qconfig)

    visit(module, "", qconfig_dict.get(""))


# Module-level hooks (not closures): deepcopy and pickling of prepared models keep working.
def _observe_output(module, input, output):
    return module.activation_post_process(output)


def _observe_input(module, args):
    return (module.input_observer(args[0]),) + tuple(args[1:])


def _is_quantizable(mod, mapping):
    return type(mod) in mapping and getattr(mod, "qconfig", None) is not None


def _add_observers(model, mapping):
    observed = 0
    for name, mod in list(model.named_modules()):
        if not _is_quantizable(mod, mapping) or isinstance(mod, DeQuantStub) or hasattr(mod, "activation_post_process"):
            continue
        activation = mod.qconfig.activation()
        if isinstance(activation, PlaceholderObserver):
            # a dynamic (or float16) qconfig: it has no range to calibrate, so convert could not quantize
            raise ValueError(f"prepare: the qconfig of {name or 'the model'} ({type(mod).__name__}) has a "
                             f"PlaceholderObserver (dtype {activation.dtype!r}) for activations, as dynamic "
                             "qconfigs do; static quantization calibrates its activations: use "
                             "get_default_qconfig('x86'), or quantize_dynamic for dynamic quantization")
        mod.activation_post_process = activation
        mod._observer_handles = [mod.register_forward_hook(_observe_output)]
        if not isinstance(mod, QuantStub):
            # rtx has no quantized tensors, so a quantized layer keeps the grid of its own input too
            mod.input_observer = mod.qconfig.activation()
            mod._observer_handles.append(mod.register_forward_pre_hook(_observe_input))
        observed += 1
    return observed


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """Attach observers (activation_post_process on each quantizable layer's output, and on its input)
    according to each submodule's qconfig; run calibration data through the result, then convert."""
    _not_supported("prepare", observer_non_leaf_module_list=observer_non_leaf_module_list,
                   prepare_custom_config_dict=prepare_custom_config_dict)
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    if _add_observers(model, allow_list or get_default_static_quant_module_mappings()) == 0:
        warnings.warn("prepare: no submodule got a qconfig, so nothing will be quantized; set model.qconfig "
                      "(e.g. rtx.compress.get_default_qconfig('x86'))", stacklevel=2)
    return model


def prepare_qat(model, mapping=None, inplace=False):
    """Swap layers for their QAT versions (fake-quantized weights) and attach fake-quantizing
    observers to activations. The model must be in training mode."""
    _check_module(model, "prepare_qat")
    if not model.training:
        raise ValueError("prepare_qat only works on models in training mode (call model.train())")
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    convert(model, mapping or get_default_qat_module_mappings(), inplace=True, remove_qconfig=False)
    prepare(model, inplace=True)
    return model


def _check_calibrated(child, name):
    """A static layer needs observers that saw data: one that saw none would give scale 1 and zero
    point 0 (PyTorch's silent default), a model that quietly outputs garbage."""
    if not hasattr(child, "activation_post_process"):
        raise ValueError(f"convert: {name} ({type(child).__name__}) has a qconfig but no observers; "
                         "run prepare (and calibration) first")
    observers = [("activation_post_process", child.activation_post_process),
                 ("input_observer", getattr(child, "input_observer", None)),
                 ("weight_fake_quant", getattr(child, "weight_fake_quant", None))]
    unseen = [attr for attr, obs in observers if obs is not None and not obs.has_observed()]
    if unseen:
        raise ValueError(f"convert: the observers of {name} ({type(child).__name__}: {', '.join(unseen)}) saw no "
                         "data; run calibration data through the prepared model (QAT: train it) before convert, "
                         "and check that the calibration reaches this layer")


def _swap(mod, mapping):
    new_cls = mapping[type(mod)]
    new = new_cls.from_float(mod)
    new.train(mod.training)
    return new


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None):
    """Replace every prepared (observed, or QAT) layer by its quantized version."""
    if is_reference:
        raise NotImplementedError("reference quantized modules (is_reference=True) are not implemented")
    _check_module(module, "convert")
    _not_supported("convert", convert_custom_config_dict=convert_custom_config_dict)
    mapping = mapping if mapping is not None else get_default_static_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)

    def visit(mod, prefix):
        for name, child in list(mod.named_children()):
            full = f"{prefix}.{name}" if prefix else name
            if _is_quantizable(child, mapping):
                static = mapping[type(child)] in (nnq.Linear, nnq.LinearReLU, nnq.Conv2d, nnq.ConvReLU2d, nnq.Quantize)
                if static:
                    _check_calibrated(child, full)
                setattr(mod, name, _swap(child, mapping))
            else:
                visit(child, full)

    visit(module, "")
    if remove_qconfig:
        for m in module.modules():
            if "qconfig" in m.__dict__:
                del m.qconfig
    return module


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """prepare, run_fn(model, *run_args) for calibration, convert: post-training static quantization."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_qat(model, run_fn, run_args, inplace=False):
    """prepare_qat, run_fn(model, *run_args) (training), convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    model.eval()
    convert(model, inplace=True)
    return model


def quantize_dynamic(model, qconfig_spec=None, dtype=qint8, mapping=None, inplace=False):
    """Swap the layers named by qconfig_spec (a set of types such as {nn.Linear, nn.LSTM} and/or submodule
    names such as {"encoder"}, or a dict of those to QConfigs; a name covers its submodules, None
    excludes) for dynamically quantized ones: int8 weights (per output channel),
    activations quantized per call. dtype rtx.float16 / rtx.bfloat16 store the weights in that
    dtype instead. Exact types match (as PyTorch): a subclass such as MultiheadAttention's
    NonDynamicallyQuantizableLinear out_proj is left alone, unless nn.MultiheadAttention itself is
    in the set (an rtx addition: its projections become int8 too)."""
    _check_module(model, "quantize_dynamic")
    if dtype is qint8:
        default = per_channel_dynamic_qconfig
    elif dtype is rtx.float16:
        default = float16_dynamic_qconfig
    elif dtype is rtx.bfloat16:
        default = bfloat16_dynamic_qconfig
    else:
        raise ValueError(f"quantize_dynamic: dtype must be rtx.qint8, rtx.float16 or rtx.bfloat16, got "
                         f"{dtype!r}")
    mapping = mapping or get_default_dynamic_quant_module_mappings()
    if qconfig_spec is None:
        qconfig_spec = {nn.Linear, nn.LSTM}     # PyTorch's default set; attention only when named
    if isinstance(qconfig_spec, (set, frozenset, list, tuple)):
        qconfig_spec = dict.fromkeys(qconfig_spec, default)
    if not isinstance(qconfig_spec, dict):
        raise TypeError(f"quantize_dynamic: qconfig_spec must be a set of module types and/or submodule names, or a "
                        f"dict of them to QConfigs, got {type(qconfig_spec).__name__}")
    names = dict(model.named_modules())
    for key, qconfig in qconfig_spec.items():
        if isinstance(key, str):
            if key not in names:
                raise ValueError(f"quantize_dynamic: {type(model).__name__} has no submodule named {key!r}")
        elif key not in mapping:
            raise ValueError(f"quantize_dynamic: no dynamic quantized version of {getattr(key, '__name__', key)}; "
                             f"supported: {', '.join(k.__name__ for k in mapping)}")
        if qconfig is not None and not isinstance(qconfig, QConfig):
            raise TypeError(f"quantize_dynamic: the qconfig for {getattr(key, '__name__', key)} must be a QConfig "
                            f"(e.g. rtx.compress.per_channel_dynamic_qconfig), got {type(qconfig).__name__}")
    if not inplace:
        model = copy.deepcopy(model)

    def visit(mod, prefix, inherited):
        # as propagate_qconfig_: a submodule's name beats its type, which beats its parent's qconfig
        for name, child in list(mod.named_children()):
            full = f"{prefix}.{name}" if prefix else name
            qconfig = qconfig_spec.get(full, qconfig_spec.get(type(child), inherited))
            if type(child) in mapping and qconfig is not None:
                weight_dtype = qconfig.weight().dtype
                if weight_dtype is qint8:
                    new = mapping[type(child)].from_float(child, qint8, qconfig.weight)
                else:
                    new = mapping[type(child)].from_float(child, weight_dtype)
                setattr(mod, name, new)
            else:
                visit(child, full, qconfig)

    visit(model, "", qconfig_spec.get(""))
    return model


