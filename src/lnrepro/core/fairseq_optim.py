"""Adam and RAdam with the update equations of the papers' own code (optimizer_impl "fairseq").

torch.optim.AdamW divides by sqrt(v / (1 - beta2^t)) + eps. fairseq 0.9's Adam
(fairseq/optim/adam.py:168-177) divides by sqrt(v) + eps and puts the bias correction in the step
size, lr * sqrt(1 - beta2^t) / (1 - beta1^t): its eps is in effect eps / sqrt(1 - beta2^t), 7.1x
larger at update 1 for beta2 = 0.98, 1.07x at 100. Its weight decay is decoupled,
p -= weight_decay * lr * p, before the Adam step (adam.py:174-175). (With apex installed on CUDA,
fairseq 0.9 runs apex's FusedAdam instead, adam.py:27-32, eps outside the square root as here,
eps_mode 1 at adam.py:230; we follow the Python class the equations are read from.)

Liu et al.'s RAdam (Transformer-Clinic radam_fairseq/radam.py:105-126) places eps as fairseq's
Adam (radam.py:119, as torch.optim.RAdam does too) and decays weights the same way (radam.py:114-115),
but while the variance is not rectifiable (N_sma < 5, radam.py:117) it only decays the weights:
its SGD-like step is commented out (radam.py:123-124), where torch.optim.RAdam takes
lr * m / (1 - beta1^t). With beta2 = 0.98 those are updates 1-5.

Both keep fairseq's per-parameter state (step, exp_avg, exp_avg_sq) and step every parameter
with a gradient; the elementwise work is done on all of a group's tensors at once (foreach).
"""
import math

import torch


class FairseqAdam(torch.optim.Optimizer):
    """fairseq 0.9's Adam (fairseq/optim/adam.py:75-181, amsgrad off), fp32 parameters."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def step_size(self, group, step):
        """lr * sqrt(1 - beta2^t) / (1 - beta1^t) (adam.py:170-172); 0 = no Adam step this time."""
        beta1, beta2 = group["betas"]
        return group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self.update(group, params)
        return loss

    def update(self, group, params):
        grads = [p.grad for p in params]
        states = [self.initialized_state(p) for p in params]
        exp_avgs, exp_avg_sqs = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
        beta1, beta2 = group["betas"]
        # the moments as adam.py:160-161: m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2
        torch._foreach_mul_(exp_avgs, beta1)
        torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        for s in states:
            s["step"] += 1
        if group["weight_decay"] != 0:  # p += -wd * lr * p (adam.py:175), before the step
            torch._foreach_add_(params, params, alpha=-group["weight_decay"] * group["lr"])
        sizes = [self.step_size(group, s["step"]) for s in states]
        moving = [i for i, size in enumerate(sizes) if size]
        if not moving:
            return
        denoms = torch._foreach_sqrt([exp_avg_sqs[i] for i in moving])
        torch._foreach_add_(denoms, group["eps"])  # sqrt(v) + eps: eps before the bias correction
        torch._foreach_addcdiv_([params[i] for i in moving], [exp_avgs[i] for i in moving], denoms,
                                [-sizes[i] for i in moving])

    def initialized_state(self, p):
        state = self.state[p]
        if not state:
            state.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
        return state


class ClinicRAdam(FairseqAdam):
    """Transformer-Clinic's RAdam (radam_fairseq/radam.py:55-128), the one Liu et al.'s recipes
    load (--user-dir ../radam_fairseq --optimizer radam, nmt-experiments/iwslt14_de-en.md:25)."""

    def step_size(self, group, step):
        """lr * sqrt((1 - beta2^t) r_t) / (1 - beta1^t), r_t the variance rectification
        (radam.py:110-118); 0 while N_sma < 5: no step but the weight decay (radam.py:122-124)."""
        beta1, beta2 = group["betas"]
        beta2_t = beta2 ** step
        n_sma_max = 2 / (1 - beta2) - 1
        n_sma = n_sma_max - 2 * step * beta2_t / (1 - beta2_t)
        if n_sma < 5:
            return 0.0
        rectified = (1 - beta2_t) * (n_sma - 4) / (n_sma_max - 4) * (n_sma - 2) * n_sma_max / n_sma / (n_sma_max - 2)
        return group["lr"] * math.sqrt(rectified) / (1 - beta1 ** step)
