"""optimizer_impl fairseq: Adam as fairseq 0.9's adam.py, RAdam as Transformer-Clinic's radam.py,
checked against the update equations written out here; torch's stay the default."""
import hashlib
import json
import math

import pandas as pd
import pytest
import torch

from lnrepro.core.fairseq_optim import ClinicRAdam, FairseqAdam
from lnrepro.core.checkpoint import CHECKPOINT_FORMAT, stale_reason
from lnrepro.core.config import result_settings
from lnrepro.core.loop import build_optimizer
from lnrepro.core.translation import TrainConfig, train

BETAS, EPS = (0.9, 0.98), 1e-8
SHAPES = [(7, 5), (5,), (3, 2, 4)]


def fairseq_adam_step(p, m, v, g, t, lr, wd):
    """fairseq 0.9 fairseq/optim/adam.py:157-177 for one tensor (amsgrad off)."""
    m = BETAS[0] * m + (1 - BETAS[0]) * g
    v = BETAS[1] * v + (1 - BETAS[1]) * g * g
    step_size = lr * math.sqrt(1 - BETAS[1] ** t) / (1 - BETAS[0] ** t)
    p = p - wd * lr * p
    return p - step_size * m / (v.sqrt() + EPS), m, v


def clinic_radam_step(p, m, v, g, t, lr, wd):
    """Transformer-Clinic radam_fairseq/radam.py:105-126 for one tensor."""
    v = BETAS[1] * v + (1 - BETAS[1]) * g * g
    m = BETAS[0] * m + (1 - BETAS[0]) * g
    beta2_t = BETAS[1] ** t
    n_sma_max = 2 / (1 - BETAS[1]) - 1
    n_sma = n_sma_max - 2 * t * beta2_t / (1 - beta2_t)
    p = p - wd * lr * p
    if n_sma >= 5:
        r = (n_sma - 4) / (n_sma_max - 4) * (n_sma - 2) * n_sma_max / n_sma / (n_sma_max - 2)
        p = p - lr * math.sqrt((1 - beta2_t) * r) / (1 - BETAS[0] ** t) * m / (v.sqrt() + EPS)
    return p, m, v  # N_sma < 5: the SGD step is commented out there (radam.py:123-124)


def random_run(steps, seed=0):
    """Float64 parameters, gradients of mixed scales (some near eps) and a changing lr per step."""
    g = torch.Generator().manual_seed(seed)
    params = [torch.randn(s, generator=g, dtype=torch.float64) for s in SHAPES]
    grads = [[torch.randn(s, generator=g, dtype=torch.float64) * 10.0 ** -torch.randint(0, 9, s, generator=g)
              for s in SHAPES] for _ in range(steps)]
    lrs = [1e-3 * (1 + 0.5 * math.sin(t)) for t in range(steps)]
    return params, grads, lrs


def by_optimizer(cls, steps, wd):
    params, grads, lrs = random_run(steps)
    params = [torch.nn.Parameter(p.clone()) for p in params]
    opt = cls(params, lr=lrs[0], betas=BETAS, eps=EPS, weight_decay=wd)
    for step_grads, lr in zip(grads, lrs):
        for p, grad in zip(params, step_grads):
            p.grad = grad.clone()
        opt.param_groups[0]["lr"] = lr  # as the lr schedule sets it
        opt.step()
    return [p.detach() for p in params]


def by_equations(update, steps, wd):
    params, grads, lrs = random_run(steps)
    out = []
    for i, p in enumerate(params):
        m, v = torch.zeros_like(p), torch.zeros_like(p)
        for t, (step_grads, lr) in enumerate(zip(grads, lrs), start=1):
            p, m, v = update(p, m, v, step_grads[i], t, lr, wd)
        out.append(p)
    return out


@pytest.mark.parametrize("steps", [1, 100])
@pytest.mark.parametrize("wd", [0.0, 1e-2])
@pytest.mark.parametrize("cls, update", [(FairseqAdam, fairseq_adam_step), (ClinicRAdam, clinic_radam_step)])
def test_the_optimizer_follows_the_papers_code(cls, update, steps, wd):
    for ours, expected in zip(by_optimizer(cls, steps, wd), by_equations(update, steps, wd)):
        torch.testing.assert_close(ours, expected, rtol=1e-14, atol=1e-16)


def test_clinic_radam_leaves_weights_but_for_decay_while_unrectified():
    """beta2 0.98: N_sma = 1.0, 2.0, 3.0, 3.9, 4.9, 5.9 at updates 1-6, so updates 1-5 move nothing."""
    start = random_run(1)[0]
    for steps in range(1, 6):
        for p, p0 in zip(by_optimizer(ClinicRAdam, steps, 0.0), start):
            assert torch.equal(p, p0)
    decayed = by_optimizer(ClinicRAdam, 1, 1e-2)
    torch.testing.assert_close(decayed[0], start[0] * (1 - 1e-2 * random_run(1)[2][0]), rtol=1e-15, atol=0)
    assert not torch.equal(by_optimizer(ClinicRAdam, 6, 0.0)[0], start[0])


@pytest.mark.parametrize("t", [1, 10, 100])
def test_fairseq_adam_is_torch_adamw_with_eps_over_sqrt_of_the_bias_correction(t):
    """The placement in one line: fairseq's eps acts as eps / sqrt(1 - beta2^t) in torch's formula."""
    ours = by_optimizer(FairseqAdam, t, 0.0)
    params, grads, lrs = random_run(t)
    params = [torch.nn.Parameter(p.clone()) for p in params]
    adamw = torch.optim.AdamW(params, lr=lrs[0], betas=BETAS, eps=EPS, weight_decay=0.0, foreach=False)
    for step, (step_grads, lr) in enumerate(zip(grads, lrs), start=1):
        for p, grad in zip(params, step_grads):
            p.grad = grad.clone()
        adamw.param_groups[0].update(lr=lr, eps=EPS / math.sqrt(1 - BETAS[1] ** step))
        adamw.step()
    for a, b in zip(ours, params):
        torch.testing.assert_close(a, b.detach(), rtol=1e-12, atol=1e-15)


def test_a_restored_state_continues_as_an_uninterrupted_run():
    params, grads, lrs = random_run(8)
    whole = [torch.nn.Parameter(p.clone()) for p in params]
    cut = [torch.nn.Parameter(p.clone()) for p in params]
    opt_whole = ClinicRAdam(whole, lr=1e-3, betas=BETAS, eps=EPS, weight_decay=1e-4)
    opt_cut = ClinicRAdam(cut, lr=1e-3, betas=BETAS, eps=EPS, weight_decay=1e-4)
    for t, step_grads in enumerate(grads):
        if t == 6:  # as a resumed run: a fresh optimizer given the saved state
            saved = opt_cut.state_dict()
            opt_cut = ClinicRAdam(cut, lr=1e-3, betas=BETAS, eps=EPS, weight_decay=1e-4)
            opt_cut.load_state_dict(saved)
        for opt, ps in ((opt_whole, whole), (opt_cut, cut)):
            for p, grad in zip(ps, step_grads):
                p.grad = grad.clone()
            opt.step()
    for a, b in zip(whole, cut):
        assert torch.equal(a, b)


@pytest.mark.parametrize("optimizer, torch_class, papers_class", [
    ("adam", torch.optim.AdamW, FairseqAdam), ("radam", torch.optim.RAdam, ClinicRAdam),
    ("sgd", torch.optim.SGD, torch.optim.SGD)])  # fairseq's SGD is torch's
def test_build_optimizer_picks_the_implementation(optimizer, torch_class, papers_class):
    params = [torch.nn.Parameter(torch.zeros(3))]
    default = build_optimizer(TrainConfig(optimizer=optimizer), params)
    assert type(default) is torch_class
    assert type(build_optimizer(TrainConfig(optimizer=optimizer, optimizer_impl="fairseq"), params)) is papers_class
    if optimizer == "adam":
        assert default.defaults["fused"]  # the default keeps torch's fused kernel


def test_the_default_leaves_fingerprints_and_older_checkpoints_alone():
    cfg, papers = TrainConfig(), TrainConfig(optimizer_impl="fairseq")
    assert "optimizer_impl" not in cfg.settings() and papers.settings()["optimizer_impl"] == "fairseq"
    before = {k: v for k, v in cfg.as_dict().items() if k != "optimizer_impl"}  # a last.pt from before it
    old_fingerprint = hashlib.sha256(json.dumps(result_settings(before), sort_keys=True).encode()).hexdigest()[:16]
    assert cfg.fingerprint() == old_fingerprint
    state = {"format": CHECKPOINT_FORMAT, "world": 1, "fingerprint": old_fingerprint, "train_config": before}
    assert stale_reason(state, cfg, 1, None) is None
    assert "optimizer_impl differs" in stale_reason(state, papers, 1, None)


def test_an_unknown_implementation_is_refused():
    with pytest.raises(ValueError, match="optimizer_impl='apex'"):
        TrainConfig(optimizer_impl="apex")


@pytest.mark.medium
def test_a_run_trains_with_the_papers_optimizers(toy_data, tmp_path):
    tiny = dict(enc_layers=2, dec_layers=2, d_model=32, ffn_dim=64, heads=4, dropout=0.1, max_tokens=200,
                device="cpu", threads=1, enc_norm="pre", dec_norm="pre", schedule="constant", warmup=0, epochs=3)
    for optimizer in ("adam", "radam"):
        out = tmp_path / optimizer
        train(TrainConfig(**tiny, optimizer=optimizer, optimizer_impl="fairseq", lr=2e-3, weight_decay=1e-4),
              toy_data, out)
        valid = pd.read_csv(out / "metrics.csv").valid_loss
        assert valid.iloc[-1] < valid.iloc[0] - 0.2
