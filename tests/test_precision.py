"""precision fp32 | bf16 | fp16: fairseq 0.9's dynamic loss scaling, skipped overflowed updates, the scale's
floor as a divergence, and the fingerprints of checkpoints written before `precision` existed."""
import math

import pandas as pd
import pytest
import torch

from lnrepro.core.checkpoint import CHECKPOINT_FORMAT, stale_reason
from lnrepro.core.loop import fit
from lnrepro.core.precision import FP16_SETTINGS, DynamicLossScaler, MinimumLossScaleReached, Precision, fp16_scaler
from lnrepro.core.translation import TrainConfig, TranslationTask

TINY = dict(enc_layers=1, dec_layers=1, d_model=16, ffn_dim=32, heads=2, dropout=0.0, max_tokens=200,
            device="cpu", threads=1, log_interval=1e9, schedule="constant", warmup=0, lr=2e-3)


def scales(scaler, verdicts):
    """The scale after each update's overflow verdict (1 = overflow)."""
    out = []
    for overflow in verdicts:
        scaler.update(bool(overflow))
        out.append(scaler.loss_scale)
    return out


# ---- the scaler's rules, as fairseq's DynamicLossScaler (fp16_optimizer.py:29-47) ----
def test_the_scale_doubles_after_each_window_of_clean_updates():
    assert scales(DynamicLossScaler(loss_scale=8, scale_window=3), [0] * 7) == [8, 8, 16, 16, 16, 32, 32]


def test_an_overflow_halves_the_scale_and_restarts_the_window():
    # the overflow at update 3; the next doubling 3 clean updates after it
    assert scales(DynamicLossScaler(loss_scale=8, scale_window=3), [0, 0, 0, 1, 0, 0, 0, 0]) == \
        [8, 8, 16, 8, 8, 8, 16, 16]


def test_the_threshold_clamps_the_scale_from_below():
    assert scales(DynamicLossScaler(loss_scale=1, scale_window=100, threshold=0.25), [1, 1, 1, 1]) == \
        [0.5, 0.25, 0.25, 0.25]


def test_the_floor_raises_fairseqs_error_on_the_overflow_that_reaches_it():
    scaler = DynamicLossScaler(loss_scale=4e-4, scale_window=100, min_loss_scale=1e-4)
    scaler.update(True)  # 2e-4
    with pytest.raises(MinimumLossScaleReached, match="minimum loss scale reached"):
        scaler.update(True)  # 1e-4 <= min_loss_scale: fairseq compares with <=
    assert scaler.loss_scale == 1e-4


def test_a_threshold_above_the_floor_never_stops_the_run():
    """The recipes' --threshold-loss-scale 0.03125 with the default --min-loss-scale 1e-4."""
    scaler = DynamicLossScaler(loss_scale=1, scale_window=256, threshold=0.03125, min_loss_scale=1e-4)
    assert scales(scaler, [1] * 50)[-1] == 0.03125


def test_tolerance_halves_only_when_that_fraction_of_updates_since_the_last_rescale_overflowed():
    # overflows at updates 3, 4, 5: 1/4, 2/5, then 3/6 = 0.5 of the updates since the start
    assert scales(DynamicLossScaler(loss_scale=8, scale_window=100, tolerance=0.5), [0, 0, 0, 1, 1, 1]) == \
        [8, 8, 8, 8, 8, 4]


def test_the_default_window_is_fairseqs_per_process_and_accumulation():
    assert fp16_scaler(TrainConfig(precision="fp16", update_freq=2), world=4).scale_window == 2 ** 14 / 8
    assert fp16_scaler(TrainConfig(precision="fp16", fp16_scale_window=256), world=4).scale_window == 256
    assert fp16_scaler(TrainConfig(precision="fp16"), world=1).loss_scale == 128  # --fp16-init-scale 2**7


def test_fp16_unscales_and_normalizes_the_gradients_and_skips_an_overflow():
    layer = torch.nn.Linear(3, 1)
    mixed = Precision(TrainConfig(precision="fp16", fp16_init_scale=64), torch.device("cpu"), world=1)
    x = torch.ones(2, 3)
    (layer(x).sum() * mixed.loss_factor(0.5)).backward()
    norm, step = mixed.finish(layer.parameters(), 0.5, 0.0)
    assert step and torch.allclose(layer.weight.grad, torch.full((1, 3), 1.0))  # d(sum)/dW = 2, x 0.5
    layer.zero_grad()
    (layer(x).sum() * math.inf).backward()
    norm, step = mixed.finish(layer.parameters(), 0.5, 0.0)
    assert not step and not torch.isfinite(norm) and mixed.scaler.loss_scale == 32


# ---- in a run ----
class PoisonedTask(TranslationTask):
    """The first parameter's gradient turns inf at the given backward passes (one per update here).
    Records the weights at every backward, so a skipped update shows as weights that did not move."""

    def __init__(self, cfg, data_dir, poisoned):
        super().__init__(cfg, data_dir)
        self.poisoned, self.backwards, self.weights = poisoned, 0, []

    def build_model(self):
        model = super().build_model()

        def hook(grad):
            self.backwards += 1
            self.weights.append([p.detach().clone() for p in model.parameters()])
            return grad * math.inf if self.poisoned(self.backwards) else grad

        next(model.parameters()).register_hook(hook)
        return model


def run(cfg, data, out, poisoned=lambda n: False):
    task = PoisonedTask(cfg, data, poisoned)
    assert fit(cfg, task, out) == 0
    return pd.read_csv(out / "metrics.csv"), task


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_fp16_trains_on_cpu_and_lowers_the_loss(toy_data, tmp_path):
    m, _ = run(TrainConfig(**TINY, precision="fp16", epochs=3), toy_data, tmp_path)
    assert m.diverged.sum() == 0 and m.valid_loss.iloc[-1] < m.valid_loss.iloc[0] - 0.2
    assert m.train_loss.is_monotonic_decreasing and (m.loss_scale > 0).all()


def test_an_overflowed_update_is_skipped_and_halves_the_scale(toy_data, tmp_path):
    cfg = TrainConfig(**TINY, precision="fp16", fp16_scale_window=4, epochs=1, max_round_updates=10)
    clean, _ = run(cfg, toy_data, tmp_path / "clean")
    m, task = run(cfg, toy_data, tmp_path / "poisoned", poisoned=lambda n: n == 6)
    # clean: doubled after updates 4 and 8; poisoned: doubled after 4, halved at 6, doubled 4 after it
    assert clean.loss_scale.iloc[0] == 128 * 4 and m.loss_scale.iloc[0] == 128 * 2
    assert m.updates.iloc[0] == 9 and m.diverged.iloc[0] == 0  # the skipped update is not counted
    w = task.weights  # w[k]: the weights at backward k + 1, after update k's step
    assert same(w[5], w[6]) and not same(w[4], w[5]) and not same(w[6], w[7])


def test_the_threshold_keeps_a_run_that_overflows_at_every_update_alive(toy_data, tmp_path):
    cfg = TrainConfig(**TINY, precision="fp16", fp16_init_scale=4, threshold_loss_scale=2.0, min_loss_scale=1.0,
                      epochs=1, max_round_updates=6)
    m, task = run(cfg, toy_data, tmp_path, poisoned=lambda n: True)
    assert m.updates.iloc[0] == 0 and m.loss_scale.iloc[0] == 2 and m.diverged.iloc[0] == 0
    assert same(task.weights[0], task.weights[-1])


def test_a_scale_at_its_floor_stops_the_run_as_diverged_with_the_reason(toy_data, tmp_path, capsys):
    cfg = TrainConfig(**TINY, precision="fp16", fp16_init_scale=4, min_loss_scale=1.0, epochs=3)
    m, _ = run(cfg, toy_data, tmp_path, poisoned=lambda n: n >= 3)
    assert list(m.diverged) == [1] and m.updates.iloc[0] == 2 and pd.isna(m.checkpoint.iloc[0])
    assert m.diverged_reason.iloc[0].startswith("minimum loss scale reached (1)")
    assert "epoch 1/3 DIVERGED at update 2 (minimum loss scale reached" in capsys.readouterr().err


@pytest.mark.medium
def test_an_fp16_run_resumes_with_its_loss_scaler(toy_data, tmp_path):
    cfg = TrainConfig(**TINY, precision="fp16", fp16_scale_window=3, epochs=3)
    full, _ = run(cfg, toy_data, tmp_path / "full")
    run(TrainConfig(**{**TINY, "epochs": 1}, precision="fp16", fp16_scale_window=3), toy_data, tmp_path / "resumed")
    last = tmp_path / "resumed" / "checkpoints" / "last.pt"
    state = torch.load(last, weights_only=True)
    state["fingerprint"] = cfg.fingerprint()  # the same run, cut short
    torch.save(state, last)
    again, _ = run(cfg, toy_data, tmp_path / "resumed")
    columns = ["updates", "train_loss", "valid_loss", "grad_norm", "loss_scale"]
    pd.testing.assert_frame_equal(full[columns], again[columns])


# ---- settings and fingerprints ----
def test_fp16_settings_enter_only_fp16_runs_fingerprints():
    assert "precision" in TrainConfig().settings() and "min_loss_scale" not in TrainConfig().settings()
    assert TrainConfig(threshold_loss_scale=0.5).fingerprint() == TrainConfig().fingerprint()
    fp16 = TrainConfig(precision="fp16")
    assert fp16.settings()["fp16_scale_window"] == 0
    assert TrainConfig(precision="fp16", threshold_loss_scale=0.5).fingerprint() != fp16.fingerprint()
    with pytest.raises(ValueError, match="precision='fp8'"):
        TrainConfig(precision="fp8")


def legacy_state(cfg, **old):
    """last.pt as written before `precision`: its settings had `bf16`, its fingerprint hashed them."""
    later = ("precision", "divergence_interval", *FP16_SETTINGS)
    train_config = {k: v for k, v in {**cfg.as_dict(), **old}.items() if k not in later}
    return {"format": CHECKPOINT_FORMAT, "world": 1, "fingerprint": "written-before-precision",
            "train_config": train_config}


@pytest.mark.parametrize("device, bf16, precision", [("cpu", True, "fp32"), ("cpu", False, "fp32"),
                                                     ("auto", False, "fp32"), ("cuda", True, "bf16")])
def test_a_checkpoint_from_before_precision_resumes_in_the_precision_it_trained_in(device, bf16, precision):
    """bf16 autocast on CUDA only: every device-cpu run (the demo's, bf16 true by default) trained in fp32."""
    state = legacy_state(TrainConfig(device=device, precision=precision), bf16=bf16)
    assert stale_reason(state, TrainConfig(device=device, precision=precision), 1, None) is None
    other = "bf16" if precision == "fp32" else "fp32"
    assert "precision differs" in stale_reason(state, TrainConfig(device=device, precision=other), 1, None)
