import csv

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lnrepro.cli import main
from lnrepro.core.data import PAD
from lnrepro.core.model import ModelConfig, Transformer, label_smoothed_loss
from lnrepro.training.bench import Reference, training_flops


def tiny(norm="pre", layers=1, d=4, ffn=8, vocab=10, **kw):
    return ModelConfig(vocab_size=vocab, d_model=d, ffn_dim=ffn, heads=2, enc_layers=layers, dec_layers=layers,
                       dropout=0.0, enc_norm=norm, dec_norm=norm, **kw)


def test_training_flops_by_hand():
    # d=4, f=8, V=10, one layer each side, one sentence, S=T=2 (2*m*n*k per matmul):
    # encoder per token: q,k,v,out 4*2*4*4=128 + scores and AV 2*2*2*4=32 + FFN 2*2*4*8=128 = 288; x2 tokens = 576
    # decoder self-attention: 2 tokens * (128 + 32) = 320
    # cross-attention: q,out 2 tokens * 2*2*4*4 = 128; k,v on 2 source tokens = 128; scores and AV 2*(2*2*2*4) = 64
    # decoder FFN 2*128 = 256 -> decoder 320 + 128 + 128 + 64 + 256 = 896
    # output projection 2 tokens * 2*4*10 = 160; forward 576 + 896 + 160 = 1632; training 3x = 4896
    assert training_flops(tiny(), batch=1, src_len=2, tgt_len=2) == 4896


@pytest.mark.parametrize("S,T", [(2, 2), (5, 3)])
def test_training_flops_match_torch_flop_counter(S, T):
    """The formula equals what torch counts for forward + backward on the plain (unfused) attention path."""
    cfg = tiny(layers=2, d=8, ffn=16, fused_attention=False)
    model = Transformer(cfg)
    src, prev = torch.randint(4, 10, (3, S)), torch.randint(4, 10, (3, T))
    with FlopCounterMode(display=False) as counter:
        loss, _ = label_smoothed_loss(model(src, prev), prev, 0.1)
        loss.backward()
    assert counter.get_total_flops() == training_flops(cfg, 3, S, T)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_reference_has_exactly_our_parameter_count(norm):
    # Exactly equal: both stack q, k, v in one in_proj (3d x d + 3d); same FFN,
    # 2 (encoder) / 3 (decoder) LayerNorms per layer, two V x d embeddings, final LayerNorms only with
    # Pre-LN on both; sinusoidal positions are buffers, not parameters.
    cfg = tiny(norm, layers=2, d=16, ffn=32, vocab=50)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(Reference(cfg)) == count(Transformer(cfg))


def copy_into_reference(ours, ref):
    """Our weights into torch's module names: then both must compute the same function."""
    def attn(a, b):
        b.in_proj_weight.copy_(a.in_proj.weight)
        b.in_proj_bias.copy_(a.in_proj.bias)
        b.out_proj.load_state_dict(a.out_proj.state_dict())

    with torch.no_grad():
        ref.src_emb.load_state_dict(ours.encoder.embed.tokens.state_dict())
        ref.tgt_emb.load_state_dict(ours.decoder.embed.tokens.state_dict())
        for a, b in zip(ours.encoder.layers, ref.core.encoder.layers):
            attn(a.self_attn, b.self_attn)
            b.linear1.load_state_dict(a.ffn.fc1.state_dict()), b.linear2.load_state_dict(a.ffn.fc2.state_dict())
            b.norm1.load_state_dict(a.attn_block.layer_norm.state_dict())
            b.norm2.load_state_dict(a.ffn_block.layer_norm.state_dict())
        for a, b in zip(ours.decoder.layers, ref.core.decoder.layers):
            attn(a.self_attn, b.self_attn), attn(a.cross_attn, b.multihead_attn)
            b.linear1.load_state_dict(a.ffn.fc1.state_dict()), b.linear2.load_state_dict(a.ffn.fc2.state_dict())
            for ln, block in zip((b.norm1, b.norm2, b.norm3), (a.self_block, a.cross_block, a.ffn_block)):
                ln.load_state_dict(block.layer_norm.state_dict())
        if ours.encoder.final_norm is not None:
            ref.core.encoder.norm.load_state_dict(ours.encoder.final_norm.state_dict())
            ref.core.decoder.norm.load_state_dict(ours.decoder.final_norm.state_dict())


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_reference_computes_our_function(norm):
    """Same norm placement, embedding scale, positions, padding and causal masks, tied output."""
    torch.manual_seed(0)
    cfg = tiny(norm, layers=2, d=16, ffn=32, vocab=50)
    ours, ref = Transformer(cfg).eval(), Reference(cfg).eval()
    copy_into_reference(ours, ref)
    src, prev = torch.randint(4, 50, (3, 7)), torch.randint(4, 50, (3, 5))
    src[0, 4:] = PAD  # a padded source exercises the key padding masks
    with torch.no_grad():
        torch.testing.assert_close(ref(src, prev), ours(src, prev), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_bench_end_to_end(tmp_path, precision):
    """Every precision a run can train in (fp16: with the trainer's loss scaler), on the CPU too."""
    out = tmp_path / "bench.csv"
    assert main(["bench", "--device", "cpu", "--threads", "1", "--d-model", "16", "--ffn-dim", "32", "--heads", "2",
                 "--layers", "1", "--vocab", "50", "--batch-tokens", "64", "--src-len", "8", "--steps", "2",
                 "--warmup-steps", "1", "--repeats", "2", "--decode-sentences", "4", "--beam", "3", "--precision", precision, "--peak-size", "256",
                 "--out", str(out)]) == 0
    rows = {r["metric"]: r for r in csv.DictReader(open(out))}
    assert list(rows) == ["train_tokens_per_s", "matmul_peak_gflops", "train_gflops", "train_mfu",
                          "step_share_matmul", "step_share_attention", "step_share_dropout_rng",
                          "matmul_kernel_gflops", "matmul_kernel_fraction_of_peak", "decode_beam3_sentences_per_s", "decode_beam3_tokens_per_s",
                          "decode_greedy_sentences_per_s", "decode_greedy_tokens_per_s"]
    for name, r in rows.items():
        assert float(r["ours"]) > 0, name
        assert r["device"] == "cpu" and r["threads"] == "1" and r["config"].endswith(f"-LN {precision}")
        if name != "matmul_peak_gflops":
            assert float(r["reference"]) > 0 and float(r["ratio"]) > 0, name
    assert 0 < float(rows["train_mfu"]["ours"]) < 1
    # MFU = achieved / peak, and achieved = tokens/s x FLOPs per token
    peak = float(rows["matmul_peak_gflops"]["ours"])
    assert float(rows["train_mfu"]["ours"]) == pytest.approx(float(rows["train_gflops"]["ours"]) / peak)
    # the step's time split: shares of one step, and the matmul kernels' own FLOP/s against the peak
    shares = [float(rows[f"step_share_{g}"]["ours"]) for g in ("matmul", "attention", "dropout_rng")]
    assert all(0 < x < 1 for x in shares) and sum(shares) < 1
    assert float(rows["matmul_kernel_fraction_of_peak"]["ours"]) == pytest.approx(
        float(rows["matmul_kernel_gflops"]["ours"]) / peak)
