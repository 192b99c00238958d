"""The code paths a GPU takes, run on CUDA where there is one and on the CPU elsewhere (marker `cuda`).

CI has no GPU, so here they run on the CPU and keep these paths from rotting; `lnrepro gpu-check`
runs them (`pytest -m cuda`) on a GPU: fp16 autocast with fairseq's loss scaler, bf16 autocast,
scaled-dot-product attention, the fused/foreach optimizers, DDP's step (NCCL on CUDA), beam search,
and a real training and decoding on the device with its checkpoint read back on the CPU.
"""
import csv
import inspect
import os

import pytest
import torch
import torch.distributed as dist

from lnrepro.cli import main
from lnrepro.core.beam import beam_search
from lnrepro.core.data import EOS, PAD
from lnrepro.core.loop import build_optimizer
from lnrepro.core.model import ModelConfig, Transformer, label_smoothed_loss
from lnrepro.core.precision import Precision
from lnrepro.core.translation import TrainConfig, load_model
from lnrepro.training.bench import train_steps

pytestmark = pytest.mark.cuda
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def small(norm="pre", **kw):
    return ModelConfig(vocab_size=40, d_model=32, ffn_dim=64, heads=4, enc_layers=2, dec_layers=2, dropout=0.0,
                       enc_norm=norm, dec_norm=norm, **kw)


def batch(n=8, length=7, vocab=40, seed=0, pad_tail=2):
    """Reversal pairs on DEVICE: the source's last pad_tail tokens of every other sentence are padding."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (n, length), generator=g)
    src[::2, length - pad_tail:] = PAD
    tgt = torch.randint(4, vocab, (n, length), generator=g)
    prev = torch.cat([torch.full_like(tgt[:, :1], EOS), tgt[:, :-1]], dim=1)
    return src.to(DEVICE), prev.to(DEVICE), tgt.to(DEVICE)


@pytest.mark.medium
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_every_precision_learns_a_fixed_batch(precision):
    """The trainer's update (loss factor, unscale, overflow check, step: lnrepro bench's train_steps)."""
    torch.manual_seed(1)
    model, data = Transformer(small()).to(DEVICE), batch()
    loss = lambda: label_smoothed_loss(model(*data[:2]), data[2], 0.1)[0].item()  # noqa: E731
    before = loss()
    run = train_steps(model, [data], DEVICE, precision)
    run(100)
    assert loss() < 0.5 * before  # 100 updates at the default lr memorize 8 sentences
    if precision == "fp16":
        assert run.precision.scaler.loss_scale == 128 and run.precision.scaler.iter == 100  # no overflow: 2**7


def test_fp16_overflow_skips_the_update_and_halves_the_scale():
    torch.manual_seed(1)
    model = Transformer(small()).to(DEVICE)
    mixed = Precision(TrainConfig(precision="fp16"), DEVICE, world=1)
    src, prev, tgt = batch()
    with mixed.autocast():
        loss, _ = label_smoothed_loss(model(src, prev), tgt, 0.1)
    assert model(src, prev).dtype == torch.float32  # outside autocast: fp32 weights
    (loss * mixed.loss_factor(1 / tgt.numel())).backward()
    next(model.parameters()).grad.view(-1)[0] = float("inf")  # an fp16 overflow
    norm, step = mixed.finish(list(model.parameters()), 1 / tgt.numel(), 0)
    assert not step and not torch.isfinite(norm) and mixed.scaler.loss_scale == 64


@pytest.mark.parametrize("precision,tolerance", [("bf16", 3e-2), ("fp16", 5e-3)])
def test_autocast_forward_is_close_to_fp32(precision, tolerance):
    torch.manual_seed(2)
    model = Transformer(small("post")).to(DEVICE).eval()
    src, prev, _ = batch()
    exact = model(src, prev)
    with Precision(TrainConfig(precision=precision), DEVICE, world=1).autocast():
        mixed = model(src, prev).float()
    assert ((mixed - exact).norm() / exact.norm()).item() < tolerance


@pytest.mark.parametrize("precision,tolerance", [("fp32", 1e-5), ("bf16", 3e-2), ("fp16", 5e-3)])
def test_fused_attention_computes_the_plain_attention(precision, tolerance):
    """F.scaled_dot_product_attention (flash/efficient kernels on a GPU) equals the model's explicit
    softmax path: padding and causal masks included."""
    torch.manual_seed(3)
    fused = Transformer(small("pre")).to(DEVICE).eval()
    plain = Transformer(small("pre", fused_attention=False)).to(DEVICE).eval()
    plain.load_state_dict(fused.state_dict())
    src, prev, _ = batch()
    with Precision(TrainConfig(precision=precision), DEVICE, world=1).autocast():
        a, b = fused(src, prev).float(), plain(src, prev).float()
    assert ((a - b).norm() / b.norm()).item() < tolerance


@pytest.mark.parametrize("optimizer", ["adam", "radam", "sgd"])
def test_the_trainers_optimizer_equals_torchs_for_loop(optimizer):
    """build_optimizer's fused AdamW and SGD and foreach RAdam take the steps of torch's plain loop."""
    torch.manual_seed(4)
    a = Transformer(small()).to(DEVICE)
    b = Transformer(small()).to(DEVICE)
    b.load_state_dict(a.state_dict())
    cfg = TrainConfig(optimizer=optimizer, lr=1e-3, momentum=0.9 if optimizer == "sgd" else 0.0, weight_decay=0.01)
    fast = build_optimizer(cfg, a.parameters())
    kind = {"adam": torch.optim.AdamW, "radam": torch.optim.RAdam, "sgd": torch.optim.SGD}[optimizer]
    accepted = set(inspect.signature(kind).parameters) - {"fused", "foreach", "differentiable", "capturable"}
    slow = kind(b.parameters(), **{k: v for k, v in fast.defaults.items() if k in accepted}, foreach=False)
    for step in range(3):  # both take a's gradients: a gradient of pure rounding noise (the key bias's) would
        data = batch(seed=step)  # otherwise differ between the two and Adam would turn it into an lr-sized step
        label_smoothed_loss(a(*data[:2]), data[2], 0.1)[0].div(56).backward()
        for p, q in zip(a.parameters(), b.parameters()):
            q.grad = p.grad.clone()
        for opt in (fast, slow):
            opt.step()
            opt.zero_grad()
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=lambda m: f"{name}: {m}")


def test_ddp_update_equals_one_process(tmp_path):
    """DistributedDataParallel's all-reduce (NCCL on CUDA, gloo on the CPU), one process: the update
    of the unwrapped model. A single GPU cannot hold two NCCL ranks; two gloo workers: test_distributed."""
    torch.manual_seed(5)
    a, b = Transformer(small()).to(DEVICE), Transformer(small()).to(DEVICE)
    b.load_state_dict(a.state_dict())
    dist.init_process_group("nccl" if DEVICE.type == "cuda" else "gloo", init_method=f"file://{tmp_path}/store",
                            rank=0, world_size=1)
    try:
        wrapped = torch.nn.parallel.DistributedDataParallel(a, device_ids=[torch.cuda.current_device()] if DEVICE.type == "cuda" else None)
        for model in (wrapped, b):
            opt = build_optimizer(TrainConfig(lr=1e-3), model.parameters())
            src, prev, tgt = batch()
            label_smoothed_loss(model(src, prev), tgt, 0.1)[0].div(56).backward()
            opt.step()
    finally:
        dist.destroy_process_group()
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q)


def test_beam_search_on_the_device_finds_the_cpus_hypotheses():
    torch.manual_seed(6)
    model = Transformer(small("post")).eval()
    src = batch()[0].cpu()
    on_cpu = beam_search(model, src, beam=4, max_len_a=1.2, max_len_b=5)
    on_device = beam_search(model.to(DEVICE), src.to(DEVICE), beam=4, max_len_a=1.2, max_len_b=5)
    assert on_device == on_cpu and all(on_cpu)


@pytest.mark.medium
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_a_run_trains_and_decodes_on_the_device_and_its_checkpoint_reads_on_the_cpu(toy_data, tmp_path, precision):
    out = tmp_path / "run"
    assert main(["train", "--data", str(toy_data), "--out", str(out), "--device", DEVICE.type, "--precision", precision,
                 "--enc-layers", "2", "--dec-layers", "2", "--d-model", "32", "--ffn-dim", "64", "--heads", "4",
                 "--enc-norm", "pre", "--dec-norm", "pre", "--dropout", "0", "--lr", "2e-3", "--schedule", "constant", "--warmup", "0",
                 "--max-tokens", "200", "--epochs", "4", "--threads", "1"]) == 0
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    assert [r["diverged"] for r in rows] == ["0"] * 4
    assert float(rows[-1]["valid_loss"]) < float(rows[0]["valid_loss"]) - 0.5, rows
    assert (rows[-1]["loss_scale"] != "") == (precision == "fp16")
    saved = torch.load(out / "checkpoints/epoch4.pt", map_location="cpu", weights_only=True)
    assert {t.device.type for t in saved["model"].values()} == {"cpu"}  # map_location: a CPU node reads it
    assert next(load_model(out / "checkpoints/epoch4.pt", "cpu").parameters()).device.type == "cpu"
    bleu = tmp_path / "bleu.csv"
    assert main(["evaluate", "--metrics", str(out / "metrics.csv"), "--data", str(toy_data), "--reference",
                 str(toy_data / "test.ref"), "--device", DEVICE.type, "--beam", "5", "--average-last", "1",
                 "--out", str(bleu)]) == 0
    scored = list(csv.DictReader(open(bleu)))
    assert len(scored) == 1 and float(scored[0]["bleu"]) > 0 and float(scored[0]["sentences_per_s"]) > 0
    assert os.path.getsize(out / "checkpoints/epoch4.pt") > 0
