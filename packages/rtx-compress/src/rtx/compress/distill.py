"""Knowledge distillation (Hinton et al., 2015): the student matches the teacher's softened
distribution, KL(softmax(t / T) || softmax(s / T)) * T^2, mixed with the usual cross-entropy."""
from __future__ import annotations

import rtx
import rtx.nn as nn
import rtx.nn.functional as F

__all__ = ["distillation_loss", "DistillationLoss", "distill"]


def distillation_loss(student_logits, teacher_logits, target=None, temperature=4.0, alpha=0.9,
                      reduction="batchmean"):
    """alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) * CE(student, target).

    T^2 keeps the soft term's gradients the size of the hard term's as T grows (Hinton et al.).
    target None (or alpha 1) leaves only the soft term. The teacher gets no gradient."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if tuple(student_logits.shape) != tuple(teacher_logits.shape):
        raise ValueError(f"student and teacher logits must have the same shape, got {tuple(student_logits.shape)} "
                         f"and {tuple(teacher_logits.shape)}")
    if target is None and alpha != 1:
        raise ValueError("distillation_loss: alpha < 1 mixes in cross-entropy, which needs target")
    log_p_student = F.log_softmax(student_logits / temperature, dim=-1)
    log_p_teacher = F.log_softmax(teacher_logits.detach() / temperature, dim=-1)
    soft = F.kl_div(log_p_student, log_p_teacher, reduction=reduction, log_target=True) * temperature ** 2
    if alpha == 1:
        return soft
    return alpha * soft + (1 - alpha) * F.cross_entropy(student_logits, target)


class DistillationLoss(nn.Module):
    """Module form of distillation_loss: loss_fn(student_logits, teacher_logits, target)."""

    def __init__(self, temperature=4.0, alpha=0.9, reduction="batchmean"):
        super().__init__()
        self.temperature, self.alpha, self.reduction = temperature, alpha, reduction

    def forward(self, student_logits, teacher_logits, target=None):
        return distillation_loss(student_logits, teacher_logits, target, self.temperature, self.alpha,
                                 self.reduction)

    def extra_repr(self):
        return f"temperature={self.temperature}, alpha={self.alpha}"


def distill(student, teacher, loader, optimizer, epochs=1, temperature=4.0, alpha=0.9, device="cpu",
            scheduler=None, log=None):
    """Train `student` on batches (x, y) from `loader` against the frozen `teacher` (in eval mode).
    Returns the mean loss of each epoch."""
    loss_fn = DistillationLoss(temperature, alpha)
    teacher.eval()
    history = []
    for epoch in range(1, epochs + 1):
        student.train()
        total, seen = 0.0, 0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            with rtx.no_grad():
                t_logits = teacher(x)
            loss = loss_fn(student(x), t_logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
            seen += len(y)
        if scheduler is not None:
            scheduler.step()
        history.append(total / max(seen, 1))
        if log:
            log(f"distill epoch {epoch}: loss {history[-1]:.4f}")
    return history
