"""rtx.amp: automatic mixed precision (torch.amp), shipped by rtx-optim.

- GradScaler: loss scaling; skips optimizer steps whose gradients overflowed.
- autocast(device_type, dtype=None, enabled=True): inside the block, the ops below compute as
  PyTorch's autocast op lists say (default dtype float16 on cuda, bfloat16 on cpu). The state is
  thread-local and lives in rtx-tensor (rtx._tensor.autocast_state, re-exported as rtx.amp.state),
  so the ops read it without importing rtx-optim. Casts are ordinary differentiable ops: gradients
  reach float32 parameters in float32. float64, integer and bool inputs are never cast, nor are
  tensors on another device type than the block's.

Ops that honour autocast:
- lower precision (inputs cast to the autocast dtype), cpu and cuda: matmul / @, mm, bmm, addmm,
  baddbmm, nn.functional.linear (nn.Linear), prelu, scaled_dot_product_attention (and so
  multi_head_attention_forward's projections and attention), conv1d/2d/3d, conv_transpose1d/2d/3d.
- float32 (inputs cast to float32), cpu and cuda: cross_entropy, nll_loss, mse_loss, l1_loss,
  smooth_l1_loss, kl_div, binary_cross_entropy_with_logits, soft_margin_loss, multi_margin_loss,
  poisson_nll_loss, hinge_embedding_loss, margin_ranking_loss, cosine_embedding_loss,
  triplet_margin_loss, prod; cpu only: binary_cross_entropy, huber_loss, ctc_loss; cuda only:
  layer_norm, group_norm, softmax, log_softmax, softmin, softplus, sum, norm, normalize,
  cosine_similarity (PyTorch's CPU list leaves these in the lower dtype). softmax, log_softmax,
  sum and prod keep an explicit dtype= argument.
- promote (mixed floating inputs go to the widest): cat, stack, through rtx's type promotion.
Not yet: the ops in the float32 lists that rtx lacks or that live elsewhere (cdist, pdist, cumsum, cumprod,
linalg, fft).
"""
from rtx.amp.autocast_mode import autocast
from rtx.amp.grad_scaler import GradScaler, OptState
from rtx.amp.state import get_autocast_dtype, is_autocast_enabled, maybe_autocast


def autocast_dtype(device_type: str | None = None):
    """The dtype autocast asks ops to use on device_type (any device type, when None), or None."""
    from rtx.amp.state import _state
    if device_type is None:
        return next(iter(_state.dtypes.values()), None)
    return _state.dtypes.get(device_type)


__all__ = ["GradScaler", "OptState", "autocast", "autocast_dtype", "get_autocast_dtype", "is_autocast_enabled",
           "maybe_autocast"]
