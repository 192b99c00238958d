"""A run's arithmetic: fp32, bf16 autocast, or fp16 autocast with fairseq's dynamic loss scaling.

fp16 follows fairseq 0.9 as Liu et al. trained with it: Transformer-Clinic's fork, whose
fairseq/optim/fp16_optimizer.py is fairseq v0.9.0's (the line numbers below are the fork's;
v0.9.0's trainer.py has the same code at 428-438 and 479, its options.py at 182):

- backward runs on the loss sum times the loss scale (fp16_optimizer.py:102); the gradients are then
  divided by the scale and normalized by the update's tokens in fp32 (:119, trainer.py:422), clipped,
  and their norm checked: inf or NaN is an overflow (fp16_optimizer.py:50-54, 132-137);
- an overflowed update is skipped: no optimizer step, the update count and so the lr schedule do not
  advance (trainer.py:425-430 raise OverflowError before set_num_updates, which steps the schedule at
  :590-593; caught at :461-464); its batches are consumed all the same;
- the scale starts at fp16_init_scale (options.py:184, 2**7), halves on an overflow (with tolerance 0,
  fairseq's default, on every one), never below threshold_loss_scale when set (fp16_optimizer.py:44-47),
  and doubles after fp16_scale_window updates without one (:39-41); the window defaults to
  2**14 / (processes x update_freq) (:182-190);
- an overflow that leaves the scale at or below min_loss_scale (1e-4) stops the run with "Minimum
  loss scale reached" (:139-146). Here that run is recorded as diverged. With a threshold above
  min_loss_scale (the recipes': 0.03125) the floor is never reached: the run skips updates instead.

Our reading: fairseq keeps fp16 weights and an fp32 master copy (FP16Optimizer), so its whole
forward (residual sums, LayerNorm) runs in fp16; we use torch.autocast(float16) over fp32 weights,
where matmuls run in fp16 and LayerNorm, softmax and the residual stream stay fp32, and an update's
micro-batch gradients are summed in fp32 (fairseq sums them in fp16). The optimizer updates fp32
weights in both, from fp16-computed gradients under the same scale rules; autocast overflows less
often. torch's GradScaler is not used: its rules differ (initial scale 2**16, growth every 2000
steps, no threshold, no floor that stops the run).
"""
import dataclasses
from contextlib import nullcontext
from dataclasses import dataclass

import torch

PRECISIONS = ("fp32", "bf16", "fp16")
# the settings only fp16 reads (fairseq's flag names); other runs' fingerprints leave them out
FP16_SETTINGS = ("fp16_init_scale", "fp16_scale_window", "fp16_scale_tolerance", "threshold_loss_scale",
                 "min_loss_scale")
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class MinimumLossScaleReached(FloatingPointError):
    """fairseq's FloatingPointError that ends the run (fp16_optimizer.py:142)."""


@dataclass
class DynamicLossScaler:
    """fairseq's DynamicLossScaler (fp16_optimizer.py:13-47) with FP16Optimizer's floor check (:139-146).
    `iter` counts every update, skipped ones included, as fairseq's _iter does."""
    loss_scale: float = 2.0 ** 7
    scale_window: float = 2 ** 14
    tolerance: float = 0.0
    threshold: float = 0.0  # 0 = none (fairseq's None: max(scale, 0) changes nothing either)
    min_loss_scale: float = 1e-4
    factor: float = 2.0
    iter: int = 0
    last_overflow_iter: int = -1
    last_rescale_iter: int = -1
    overflows_since_rescale: int = 0

    def update(self, overflow):
        """The scale after one update's verdict; raises MinimumLossScaleReached where fairseq stops."""
        if overflow:
            self.last_overflow_iter = self.iter
            self.overflows_since_rescale += 1
            if self.overflows_since_rescale / (self.iter - self.last_rescale_iter) >= self.tolerance:
                self.loss_scale = max(self.loss_scale / self.factor, self.threshold)
                self.last_rescale_iter = self.iter
                self.overflows_since_rescale = 0
        elif (self.iter - self.last_overflow_iter) % self.scale_window == 0:
            self.loss_scale *= self.factor
            self.last_rescale_iter = self.iter
        self.iter += 1
        if overflow and self.loss_scale <= self.min_loss_scale:
            raise MinimumLossScaleReached(f"minimum loss scale reached ({self.min_loss_scale:g}): the fp16 "
                                          f"gradients overflow at every scale")

    def state_dict(self):
        # the whole state, not fairseq's loss_scale alone (:80): a resumed run replays an uninterrupted one
        return dataclasses.asdict(self)


def fp16_scaler(cfg, world):
    """The run's scaler, from fairseq's settings (FP16Optimizer.__init__, fp16_optimizer.py:182-198)."""
    window = cfg.fp16_scale_window or 2 ** 14 / world / cfg.update_freq  # fairseq's float division
    return DynamicLossScaler(loss_scale=float(cfg.fp16_init_scale), scale_window=window,
                             tolerance=cfg.fp16_scale_tolerance, threshold=cfg.threshold_loss_scale,
                             min_loss_scale=cfg.min_loss_scale)


class Precision:
    """What the loop asks of a run's arithmetic: the autocast, the factor of each micro-batch's loss
    before backward, and the update's end (unscale, clip, overflow check)."""

    def __init__(self, cfg, device, world):
        self.name, self.device = cfg.precision, device
        self.scaler = fp16_scaler(cfg, world) if cfg.precision == "fp16" else None

    def autocast(self):
        if self.name == "fp32":
            return nullcontext()
        return torch.autocast(self.device.type, dtype=AUTOCAST_DTYPES[self.name])

    def loss_factor(self, normalizer):
        """fp32 and bf16 normalize the loss before backward (the loop's order since its start); fp16 scales
        it only, as fairseq, so its fp16 gradients have fairseq's magnitudes, and normalizes in finish."""
        return self.scaler.loss_scale if self.scaler else normalizer

    def finish(self, params, normalizer, clip_norm):
        """Clip the update's gradients: (their norm before clipping, whether to step). fp16 first divides
        them by scale / normalizer and skips the step on an overflow (one host sync per update, as
        fairseq's Python check of the norm)."""
        params = [p for p in params if p.grad is not None]
        if self.scaler:
            torch._foreach_mul_([p.grad for p in params], normalizer / self.scaler.loss_scale)
        norm = torch.nn.utils.clip_grad_norm_(params, clip_norm or float("inf"))
        if not self.scaler:
            return norm, True
        overflow = not torch.isfinite(norm).item()
        self.scaler.update(overflow)
        return norm, not overflow

    def state_dict(self):
        return self.scaler.state_dict() if self.scaler else None

    def load_state_dict(self, state):
        if self.scaler and state:
            self.scaler = DynamicLossScaler(**state)
