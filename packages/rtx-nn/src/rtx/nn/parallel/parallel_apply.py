"""Run each replica on its inputs in its own thread (CuPy launches kernels without holding the
GIL for long, so the devices compute side by side); the first exception is re-raised."""
import threading

import rtx


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    if len(modules) != len(inputs):
        raise ValueError(f"parallel_apply: {len(modules)} modules but {len(inputs)} inputs")
    kwargs_tup = kwargs_tup if kwargs_tup is not None else ({},) * len(modules)
    grad_enabled = rtx.is_grad_enabled()
    results = [None] * len(modules)

    def work(i, module, inp, kw):
        try:
            with rtx.set_grad_enabled(grad_enabled):  # grad mode is per thread
                if not isinstance(inp, (list, tuple)):
                    inp = (inp,)
                results[i] = ("ok", module(*inp, **kw))
        except BaseException as e:  # re-raised in the caller's thread
            results[i] = ("error", e)

    if len(modules) == 1:
        work(0, modules[0], inputs[0], kwargs_tup[0])
    else:
        threads = [threading.Thread(target=work, args=(i, m, x, kw))
                   for i, (m, x, kw) in enumerate(zip(modules, inputs, kwargs_tup))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    outputs = []
    for i, (status, value) in enumerate(results):
        if status == "error":
            raise RuntimeError(f"Caught {type(value).__name__} in replica {i}: {value}") from value
        outputs.append(value)
    return outputs
