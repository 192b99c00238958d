"""Learning-rate schedules as pure functions of (updates done, epoch).

fairseq semantics: the lr used for an update is lr(n) with n = updates done before it, so with
a warm-up from 0 the very first update has lr = warmup_init_lr. Epochs are 1-based.
"""
import math
from dataclasses import dataclass

SCHEDULES = ("inverse_sqrt", "step", "step_inverse_sqrt", "linear", "constant")


@dataclass(frozen=True)
class Schedule:
    kind: str
    lr: float                    # lr_max
    warmup: int = 0              # T_warmup in updates; 0 or 1 = no warm-up
    warmup_init_lr: float = 0.0  # where a linear warm-up starts
    decay_epoch: int = 0         # step*: multiply by decay_factor from this epoch on
    decay_factor: float = 0.1
    total_updates: int = 0       # linear: reaches end_lr here
    end_lr: float = 0.0

    def __post_init__(self):
        if self.kind not in SCHEDULES:
            raise ValueError(f"schedule {self.kind!r}: expected one of {SCHEDULES}")
        if self.kind == "linear" and self.total_updates <= 0:
            raise ValueError("linear schedule needs total_updates > 0")

    def __call__(self, n, epoch=1, updates_at_decay=None):
        """lr for the update after n updates, in `epoch`. updates_at_decay: updates done when
        decay_epoch began (step_inverse_sqrt decays as sqrt(updates_at_decay / n) from there)."""
        if self.warmup > 0 and n < self.warmup and self.kind != "constant":
            return self.warmup_init_lr + n * (self.lr - self.warmup_init_lr) / self.warmup
        if self.kind == "inverse_sqrt":  # lr * sqrt(W) / sqrt(n); W = 1 gives lr / sqrt(n)
            return self.lr * math.sqrt(max(self.warmup, 1)) / math.sqrt(max(n, 1))
        if self.kind == "constant":
            return self.lr
        if self.kind == "linear":
            frac = min(1.0, (n - self.warmup) / max(1, self.total_updates - self.warmup))
            return self.lr + frac * (self.end_lr - self.lr)
        decayed = self.decay_epoch > 0 and epoch >= self.decay_epoch
        if not decayed:
            return self.lr
        if self.kind == "step":
            return self.lr * self.decay_factor
        # step_inverse_sqrt: decay at decay_epoch, then inverse square root from there
        anchor = max(updates_at_decay or n, 1)
        return self.lr * self.decay_factor * math.sqrt(anchor / max(n, 1))
