"""Edge-of-domain cases for every loss (probabilities of exactly 0 and 1, ±inf and huge logits,
log(0), zero vectors, kinks at the margin), shared by tools/make_edge_grads.py (run once with
PyTorch 2.13 to write loss_edge_grads.json) and test_loss_edge_grads.py (rtx against it).

Each case: (function(F, lib, *tensors), inputs as (values, dtype), which inputs get gradients).
F is torch.nn.functional or rtx.nn.functional, lib is torch or rtx: the same code runs on both."""
import math

INF = math.inf
F32, I64 = "float32", "int64"

P = [0.0, 1.0, 0.0, 1.0, 1e-12, 1 - 1e-7, 0.5, 1e-30, 0.999]      # probabilities at and near the edges
T = [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.3, 1.0, 0.0]                  # their targets
W = [1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0, 1.0, 1.0]
X = [-INF, -1e4, -100.0, -30.0, -1e-8, 0.0, 30.0, 100.0, 1e4, INF]  # logits
Y = [1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
XF = [-1e4, -100.0, -30.0, -1e-8, 0.0, 30.0, 100.0, 1e4]             # finite logits
YF = [1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 1.0, 0.0]
LOGITS = [[-INF, 0.0, 1.0], [1e4, -1e4, 0.0], [100.0, 100.0, -100.0], [-INF, -INF, 0.0], [0.0, 0.0, 0.0]]
CLS = [0, 1, 2, 2, 1]
PROBS = [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0], [1 / 3, 1 / 3, 1 / 3]]


def _sigmoid_focal(F, lib, x, t, alpha=0.25, gamma=2.0):
    # torchvision.ops.sigmoid_focal_loss, written out (rtx's sigmoid_focal_loss follows it)
    p = lib.sigmoid(x)
    ce = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    p_t = p * t + (1 - p) * (1 - t)
    loss = ce * ((1 - p_t) ** gamma)
    return (alpha * t + (1 - alpha) * (1 - t)) * loss


CASES = {
    # binary cross entropy at p = 0 and 1 (the NaN), with weight, and mean reduction
    "bce": (lambda F, lib, x, t: F.binary_cross_entropy(x, t, reduction="none"), [(P, F32), (T, F32)], [0, 1]),
    "bce_weight_mean": (lambda F, lib, x, t, w: F.binary_cross_entropy(x, t, weight=w),
                        [(P, F32), (T, F32), (W, F32)], [0]),
    "bce_sum_input_only": (lambda F, lib, x, t: F.binary_cross_entropy(x, t, reduction="sum"),
                           [(P, F32), (T, F32)], [0]),
    "bce_with_logits": (lambda F, lib, x, t: F.binary_cross_entropy_with_logits(x, t, reduction="none"),
                        [(X, F32), (Y, F32)], [0, 1]),
    "bce_with_logits_pos_weight": (
        lambda F, lib, x, t, pw: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction="none"),
        [(XF, F32), (YF, F32), ([3.0] * 8, F32)], [0, 1]),
    "sigmoid_focal": (lambda F, lib, x, t: _sigmoid_focal(F, lib, x, t), [(XF, F32), (YF, F32)], [0]),
    "cross_entropy": (lambda F, lib, x, y: F.cross_entropy(x, y, reduction="none"), [(LOGITS, F32), (CLS, I64)],
                      [0]),
    "cross_entropy_smoothing": (lambda F, lib, x, y: F.cross_entropy(x, y, label_smoothing=0.1, reduction="none"),
                                [(LOGITS[1:3] + LOGITS[4:], F32), ([1, 2, 1], I64)], [0]),
    "cross_entropy_probs": (lambda F, lib, x, p: F.cross_entropy(x, p, reduction="none"),
                            [(LOGITS[1:3] + LOGITS[4:], F32), (PROBS[1:3] + PROBS[4:], F32)], [0, 1]),
    "nll": (lambda F, lib, x, y: F.nll_loss(x, y, reduction="none"),
            [([[-INF, 0.0], [0.0, -INF], [-1e30, -1.0]], F32), ([0, 0, 0], I64)], [0]),
    "kl_div": (lambda F, lib, x, t: F.kl_div(x, t, reduction="none"),
               [([-INF, -1e4, -1.0, 0.0, -2.0, -0.5], F32), ([0.0, 0.0, 0.5, 1.0, 1e-30, 0.25], F32)], [0, 1]),
    "kl_div_log_target": (lambda F, lib, x, t: F.kl_div(x, t, reduction="none", log_target=True),
                          [([-1e4, -1.0, 0.0, -2.0], F32), ([-INF, -1e4, 0.0, -100.0], F32)], [0, 1]),
    "poisson_nll_log": (lambda F, lib, x, t: F.poisson_nll_loss(x, t, reduction="none"),
                        [([-1e4, -100.0, 0.0, 50.0, 80.0], F32), ([0.0, 1.0, 2.0, 0.0, 3.0], F32)], [0, 1]),
    "poisson_nll_full": (lambda F, lib, x, t: F.poisson_nll_loss(x, t, log_input=False, full=True, reduction="none"),
                         [([0.0, 1e-12, 1.0, 3.0, 0.0], F32), ([0.0, 1.0, 2.0, 5.0, 1.5], F32)], [0, 1]),
    "gaussian_nll": (lambda F, lib, x, t, v: F.gaussian_nll_loss(x, t, v, reduction="none"),
                     [([0.0, 1.0, 2.0, -3.0], F32), ([0.0, 2.0, 2.0, 1.0], F32), ([0.0, 1e-9, 1.0, 1e-6], F32)],
                     [0, 1, 2]),
    "mse": (lambda F, lib, x, t: F.mse_loss(x, t, reduction="none"),
            [([0.0, 1e20, -3.0, 1e-30], F32), ([0.0, -1e20, -3.0, 0.0], F32)], [0, 1]),
    "l1": (lambda F, lib, x, t: F.l1_loss(x, t, reduction="none"),
           [([0.0, 1.0, -3.0, INF], F32), ([0.0, 2.0, -3.0, 0.0], F32)], [0, 1]),
    "smooth_l1": (lambda F, lib, x, t: F.smooth_l1_loss(x, t, reduction="none", beta=1.0),
                  [([0.0, 1.0, -3.0, 0.5, 2.0], F32), ([0.0, 0.0, -3.0, 0.0, 1.0], F32)], [0, 1]),
    "smooth_l1_beta0": (lambda F, lib, x, t: F.smooth_l1_loss(x, t, reduction="none", beta=0.0),
                        [([0.0, 1.0, -3.0], F32), ([0.0, 0.0, -3.0], F32)], [0, 1]),
    "huber": (lambda F, lib, x, t: F.huber_loss(x, t, reduction="none", delta=0.5),
              [([0.0, 0.5, -3.0, 0.25, 1e30], F32), ([0.0, 0.0, -3.0, 0.0, 0.0], F32)], [0, 1]),
    "soft_margin": (lambda F, lib, x, y: F.soft_margin_loss(x, y, reduction="none"),
                    [(XF, F32), ([1.0, -1.0] * 4, F32)], [0]),
    "multilabel_soft_margin": (lambda F, lib, x, y: F.multilabel_soft_margin_loss(x, y, reduction="none"),
                               [([XF[:4], XF[4:]], F32), ([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]], F32)], [0]),
    "hinge_embedding": (lambda F, lib, x, y: F.hinge_embedding_loss(x, y, margin=1.0, reduction="none"),
                        [([1.0, 0.0, 2.0, -1e30, 0.5], F32), ([-1.0, 1.0, -1.0, -1.0, 1.0], F32)], [0]),
    "margin_ranking_kink": (lambda F, lib, a, b, y: F.margin_ranking_loss(a, b, y, margin=0.5, reduction="none"),
                            [([1.0, 0.0, 2.0, 1e30], F32), ([0.5, 0.5, 1.0, 0.0], F32), ([1.0, -1.0, 1.0, -1.0], F32)],
                            [0, 1]),
    "multi_margin_kink": (lambda F, lib, x, y: F.multi_margin_loss(x, y, reduction="none"),
                          [([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0], [1e30, 0.0, -1e30]], F32), ([0, 1, 2], I64)], [0]),
    "multi_margin_p2": (lambda F, lib, x, y: F.multi_margin_loss(x, y, p=2, reduction="none"),
                        [([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0]], F32), ([0, 1], I64)], [0]),
    "cosine_embedding_zero": (lambda F, lib, a, b, y: F.cosine_embedding_loss(a, b, y, reduction="none"),
                              [([[0.0, 0.0], [1.0, 0.0], [1e-20, 0.0], [1.0, 1.0]], F32),
                               ([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [-1.0, -1.0]], F32),
                               ([1.0, -1.0, 1.0, -1.0], F32)], [0, 1]),
    "triplet_identical": (lambda F, lib, a, p, n: F.triplet_margin_loss(a, p, n, reduction="none"),
                          [([[1.0, 2.0], [0.0, 0.0]], F32), ([[1.0, 2.0], [0.0, 0.0]], F32),
                           ([[1.0, 2.0], [3.0, 4.0]], F32)], [0, 1, 2]),
    "triplet_with_distance": (lambda F, lib, a, p, n: F.triplet_margin_with_distance_loss(a, p, n, reduction="none"),
                              [([[1.0, 2.0], [0.0, 0.0]], F32), ([[1.0, 2.0], [0.5, 0.0]], F32),
                               ([[1.0, 2.0], [0.0, 0.0]], F32)], [0, 1, 2]),
    "ctc_impossible": (lambda F, lib, x: F.ctc_loss(F.log_softmax(x, 2), lib.tensor([[1, 1, 1], [1, 2, 0]]),
                                                    [2, 4], [3, 2], reduction="none"),
                       [([[[0.0, 1.0, -1.0], [2.0, 0.0, 0.0]], [[0.5, 0.0, 1.0], [0.0, -1e4, 0.0]],
                          [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], [[0.0, 3.0, 0.0], [0.0, 0.0, 30.0]]], F32)], [0]),
    "ctc_zero_infinity": (lambda F, lib, x: F.ctc_loss(F.log_softmax(x, 2), lib.tensor([[1, 1, 1], [1, 2, 0]]),
                                                       [2, 4], [3, 2], reduction="none", zero_infinity=True),
                          [([[[0.0, 1.0, -1.0], [2.0, 0.0, 0.0]], [[0.5, 0.0, 1.0], [0.0, -1e4, 0.0]],
                             [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], [[0.0, 3.0, 0.0], [0.0, 0.0, 30.0]]], F32)], [0]),
}


def grad_output(shape_numel):
    """A fixed upstream gradient (not all ones, so sign and scale errors show)."""
    return [(-1.0) ** i * (0.5 + 0.25 * (i % 4)) for i in range(shape_numel)]
