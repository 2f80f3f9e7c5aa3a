"""torch.nn.DataParallel: one process drives several GPUs, splitting each batch among them. On a
machine with no GPU it is a passthrough around the module (as PyTorch's), so scripts written for
it run unchanged; its state_dict keys carry the `module.` prefix either way."""
import rtx
from rtx.nn.modules.module import Module
from rtx.nn.parallel.parallel_apply import parallel_apply
from rtx.nn.parallel.replicate import replicate
from rtx.nn.parallel.scatter_gather import gather, scatter_kwargs


def _index(d):
    if isinstance(d, int):
        return d
    d = rtx.device(d)
    if d.type != "cuda":
        raise ValueError(f"DataParallel device_ids must be CUDA devices, got {d}")
    return d.index or 0


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        if not rtx.cuda.is_available():
            self.device_ids, self.output_device = [], None
            return
        if device_ids is None:
            device_ids = list(range(rtx.cuda.device_count()))
        self.device_ids = [_index(d) for d in device_ids]
        self.output_device = self.device_ids[0] if output_device is None else _index(output_device)
        self.src_device_obj = rtx.device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        inputs, kwargs = scatter_kwargs(inputs, kwargs, self.device_ids, self.dim)
        if not inputs and not kwargs:  # a forward without arguments still runs once
            inputs, kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **kwargs[0])
        used = self.device_ids[:len(inputs)]
        replicas = replicate(self.module, used, not rtx.is_grad_enabled())
        outputs = parallel_apply(replicas, inputs, kwargs, used)
        return gather(outputs, self.output_device, self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional form: one forward of `module` split over device_ids."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    dp = DataParallel(module, device_ids, output_device, dim)
    return dp(*inputs, **(module_kwargs or {}))
