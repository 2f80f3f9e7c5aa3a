"""EMAModel: an exponential moving average of a model's weights (diffusers.training_utils.EMAModel), the
weights diffusion models are sampled with."""
from __future__ import annotations

import rtx


class EMAModel:
    def __init__(self, parameters, decay=0.9999, min_decay=0.0, update_after_step=0, use_ema_warmup=False,
                 inv_gamma=1.0, power=2 / 3):
        if hasattr(parameters, "parameters"):
            parameters = parameters.parameters()
        parameters = list(parameters)
        self.shadow_params = [p.detach().clone() for p in parameters]
        self.decay, self.min_decay = decay, min_decay
        self.update_after_step = update_after_step
        self.use_ema_warmup, self.inv_gamma, self.power = use_ema_warmup, inv_gamma, power
        self.optimization_step = 0
        self.cur_decay_value = None
        self.collected_params = None

    def get_decay(self, optimization_step):
        """0 until update_after_step; then (1 + s)/(10 + s), or 1 - (1 + s/inv_gamma)^-power with warmup,
        capped at `decay` and floored at `min_decay`."""
        step = max(0, optimization_step - self.update_after_step - 1)
        if step <= 0:
            return 0.0
        if self.use_ema_warmup:
            cur = 1 - (1 + step / self.inv_gamma) ** -self.power
        else:
            cur = (1 + step) / (10 + step)
        return max(min(cur, self.decay), self.min_decay)

    def step(self, parameters):
        if hasattr(parameters, "parameters"):
            parameters = parameters.parameters()
        self.optimization_step += 1
        decay = self.get_decay(self.optimization_step)
        self.cur_decay_value = decay
        with rtx.no_grad():
            for s, p in zip(self.shadow_params, parameters):
                if p.requires_grad:
                    s.sub_((1 - decay) * (s - p.detach()))
                else:
                    s.copy_(p.detach())

    def copy_to(self, parameters):
        if hasattr(parameters, "parameters"):
            parameters = parameters.parameters()
        with rtx.no_grad():
            for s, p in zip(self.shadow_params, parameters):
                p.copy_(s)

    def store(self, parameters):
        """Keep the current (training) weights, to put back with `restore` after sampling with the EMA."""
        self.collected_params = [p.detach().clone() for p in parameters]

    def restore(self, parameters):
        if self.collected_params is None:
            raise RuntimeError("This ExponentialMovingAverage has no `store()`ed weights to `restore()`")
        with rtx.no_grad():
            for c, p in zip(self.collected_params, parameters):
                p.copy_(c)
        self.collected_params = None

    def to(self, device=None, dtype=None):
        self.shadow_params = [p.to(device=device, dtype=dtype) if p.is_floating_point() else p.to(device=device)
                              for p in self.shadow_params]

    def state_dict(self):
        return {"decay": self.decay, "min_decay": self.min_decay, "optimization_step": self.optimization_step,
                "update_after_step": self.update_after_step, "use_ema_warmup": self.use_ema_warmup,
                "inv_gamma": self.inv_gamma, "power": self.power, "shadow_params": self.shadow_params}

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        shadow = state.pop("shadow_params")
        if len(shadow) != len(self.shadow_params):
            raise ValueError(f"shadow_params: expected {len(self.shadow_params)} tensors, got {len(shadow)}")
        for k, v in state.items():
            setattr(self, k, v)
        self.shadow_params = [rtx.as_tensor(s) for s in shadow]
