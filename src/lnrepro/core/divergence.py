"""When a run counts as diverged: its train loss NaN/inf or above divergence_factor x log2(V), checked
on a schedule of updates (lnrepro.core.loop's fit asks after each update)."""
import math

import torch


class DivergenceCheck:
    """The train loss's verdict on a schedule of updates: every `interval` updates of a round and at its
    end, on the mean loss of the updates since the last check. Machine speed and log_interval do not
    move it, and every worker all-reduces the same sum at the same updates, so one process and DDP
    agree. The sum stays on the device between checks: one host sync per check."""

    def __init__(self, interval, limit, env, device):
        self.interval, self.limit, self.env = interval, limit, env
        self.loss, self.tokens = torch.zeros((), device=device), 0

    def add(self, loss):
        """This worker's loss sum (nats) of one micro-batch."""
        self.loss += loss

    def after_update(self, tokens, step, round_end):
        """Counts the update's tokens (all workers'); the verdict where one is due, else ''. step: the
        update's place in its round from 1, an fp16 update skipped for an overflow included."""
        self.tokens += tokens
        return self.verdict() if round_end or step % self.interval == 0 else ""

    def verdict(self):
        """Why the run diverged ('' if it has not): NaN/inf, or above divergence_factor x log2(V).
        Starts the next window."""
        mean = self.env.total(self.loss).item() / self.tokens / math.log(2)  # bits
        self.loss.zero_()
        self.tokens = 0
        if not math.isfinite(mean):
            return f"train loss {mean} is not finite"
        if mean > self.limit:
            return f"train loss {mean:.2f} above divergence_factor x log2(vocab size) = {self.limit:.2f}"
        return ""
