"""Split inputs across devices along a dimension (scatter) and join outputs back (gather). Both
are differentiable: chunk and .to() carry gradients, so backward flows to the original inputs."""
import rtx


def _device(d):
    return rtx.device("cuda", d) if isinstance(d, int) else rtx.device(d)


def scatter(inputs, target_gpus, dim=0):
    """Tensors are cut into len(target_gpus) chunks along `dim`, one per device; tuples, lists and
    dicts are scattered element-wise; anything else is handed to every device unchanged."""
    devices = [_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, rtx.Tensor):
            return [c.to(dev) for c, dev in zip(obj.chunk(len(devices), dim), devices)]
        if isinstance(obj, tuple) and obj:
            return [type(obj)(*args) if hasattr(obj, "_fields") else tuple(args)
                    for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, list) and obj:
            return [list(x) for x in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(zip(obj.keys(), vals)) for vals in zip(*map(scatter_map, obj.values()))]
        return [obj for _ in devices]

    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """Scatter positional and keyword inputs; the shorter list is padded so both have one entry per
    replica that gets work (a batch smaller than the device count uses fewer devices)."""
    inputs = scatter(inputs, target_gpus, dim) if inputs else []
    kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(inputs) < len(kwargs):
        inputs.extend(() for _ in range(len(kwargs) - len(inputs)))
    elif len(kwargs) < len(inputs):
        kwargs.extend({} for _ in range(len(inputs) - len(kwargs)))
    return tuple(inputs), tuple(kwargs)


def gather(outputs, target_device, dim=0):
    """Concatenate the replicas' outputs on target_device along `dim` (tensors), element-wise for
    tuples, lists and dicts."""
    target = _device(target_device)

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, rtx.Tensor):
            if out.dim() == 0:  # scalars (a loss per replica) become a vector, as PyTorch warns and does
                return rtx.stack([o.to(target) for o in outs])
            return rtx.cat([o.to(target) for o in outs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            return type(out)((k, gather_map([o[k] for o in outs])) for k in out)
        if isinstance(out, (tuple, list)):
            parts = [gather_map(x) for x in zip(*outs)]
            return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)
        raise TypeError(f"gather: outputs must be tensors, tuples, lists or dicts of them, got {type(out).__name__}")

    return gather_map(outputs)
