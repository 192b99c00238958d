"""The normalization variants of lnrepro.core.norms (issue 45): each constant against its formula (the paper's
and the authors' code's, written here as each writes it), each variant's init on a 2+2-layer model against
the standard init it scales, its forward pass against a hand computation from the weights (float64), and a
throw-away training of each on the toy corpus whose loss goes down."""
import copy
import math
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml

from lnrepro import settings
from lnrepro.core.batching import pad_right
from lnrepro.core.data import EOS, PAD, Dictionary
from lnrepro.core.layers import ResidualSublayer
from lnrepro.core.model import ModelConfig, Transformer, label_smoothed_loss
from lnrepro.core.norms import (DEEPNORM_BETA_SOURCE, DYT_ALPHA_INIT, RESIDUAL_FINAL_LN_EPS, RMSNORM_EPS,
                                TFIXUP_V_GAIN, DynamicTanh, RMSNorm, deepnorm_constants, tfixup_embedding_scale,
                                tfixup_scale)
from lnrepro.core.toy_corpus import reversal_pairs
from workflow_helpers import ROOT, pipeline_of, refusal_before_any_job

N, M = 2, 2  # the 2+2-layer models
DEPTHS = [(2, 2), (6, 6), (18, 18), (100, 100), (12, 6), (3, 7), (1, 50)]


def tiny(enc, dec=None, norm_fn="layernorm", **kw):
    return ModelConfig(**{**dict(vocab_size=40, d_model=16, ffn_dim=32, heads=2, enc_layers=N, dec_layers=M, dropout=0.0,
                                 enc_norm=enc, dec_norm=dec or enc, norm_fn=norm_fn), **kw})


def seeded(cfg, seed=7):
    torch.manual_seed(seed)
    return Transformer(cfg)


# ---- the names: the workflow's pairs keep their count ----
def test_the_variants_are_beside_the_papers_norm_pairs():
    assert settings.NORMS == ("post", "pre", "admin", "fixup") and len(settings.NORM_PAIRS) == 8
    assert set(settings.VARIANT_NORMS) == {"deepnorm", "sandwich", "tfixup", "resi_dual"}
    assert settings.MODEL_NORMS == settings.NORMS + settings.VARIANT_NORMS
    assert not set(settings.VARIANT_NORM_PAIRS) & set(settings.NORM_PAIRS)
    assert settings.NORM_FNS == ("layernorm", "rmsnorm", "dyt") and ModelConfig(vocab_size=8).norm_fn == "layernorm"


def test_variant_pairs_build_per_side_and_the_refused_ones_say_why():
    for enc in settings.MODEL_NORMS:
        for dec in settings.MODEL_NORMS:
            if (enc, dec) in settings.NORM_PAIRS + settings.VARIANT_NORM_PAIRS:
                ModelConfig(vocab_size=8, enc_norm=enc, dec_norm=dec)
                continue
            with pytest.raises(ValueError, match="Admin re-weights|FixUp rescales"):
                ModelConfig(vocab_size=8, enc_norm=enc, dec_norm=dec)
    # every variant beside every non-Admin, non-FixUp norm builds, either way round
    free = [n for n in settings.MODEL_NORMS if n not in ("admin", "fixup")]
    assert {(e, d) for e in free for d in free} - set(settings.NORM_PAIRS) == set(settings.VARIANT_NORM_PAIRS)
    with pytest.raises(ValueError, match="norm_fn='batchnorm'"):
        ModelConfig(vocab_size=8, norm_fn="batchnorm")
    with pytest.raises(ValueError, match="with Admin"):
        ModelConfig(vocab_size=8, enc_norm="admin", dec_norm="post", norm_fn="rmsnorm")
    with pytest.raises(ValueError, match="no normalization layer to replace"):
        ModelConfig(vocab_size=8, enc_norm="tfixup", dec_norm="tfixup", norm_fn="dyt")
    for norm in ("deepnorm", "tfixup"):
        with pytest.raises(ValueError, match="LookLinear is an initialization of its own"):
            ModelConfig(vocab_size=8, enc_norm=norm, dec_norm="post", init="looklinear")
    ModelConfig(vocab_size=8, enc_norm="sandwich", dec_norm="resi_dual", init="looklinear", norm_fn="rmsnorm")


def test_a_checkpoint_saved_before_norm_fn_still_resumes():
    """last.pt written before norm_fn: no 'norm_fn' in its model_config. The loop resumes a run only if the saved
    model_config equals the model's, less settings added later at their default (lnrepro.core.config.LATER_DEFAULTS);
    without norm_fn there, every such run would start afresh and its checkpoints be cleared."""
    import dataclasses

    from lnrepro.core.checkpoint import CHECKPOINT_FORMAT, stale_reason
    from lnrepro.core.translation import TrainConfig

    cfg = TrainConfig()
    model_config = dataclasses.asdict(cfg.model_config(60))
    assert model_config["norm_fn"] == "layernorm"
    old = {k: v for k, v in model_config.items() if k != "norm_fn"}
    state = {"format": CHECKPOINT_FORMAT, "world": 1, "fingerprint": cfg.fingerprint(), "train_config": cfg.as_dict(),
             "data": {"train.pt": "abc"}, "model_config": old}
    identity = {"data": {"train.pt": "abc"}, "model_config": model_config}
    assert stale_reason(state, cfg, 1, identity) is None
    rms = dataclasses.asdict(dataclasses.replace(cfg.model_config(60), norm_fn="rmsnorm"))
    assert "norm_fn differs" in stale_reason(state, cfg, 1, {**identity, "model_config": rms})


# ---- constants against their formulas (1e-12) ----
@pytest.mark.parametrize("n, m", DEPTHS)
def test_deepnorm_constants_are_the_papers_and_torchscales(n, m):
    # the paper (DeepNet, encoder-decoder): encoder 0.81 (N^4 M)^(1/16), 0.87 (N^4 M)^(-1/16);
    # decoder (3M)^(1/4), (12M)^(-1/4)
    paper = {"encoder": (0.81 * (n ** 4 * m) ** (1 / 16), 0.87 * (n ** 4 * m) ** (-1 / 16)),
             "decoder": ((3 * m) ** (1 / 4), (12 * m) ** (-1 / 4))}
    # torchscale as it is written (encoder.py:80-85, 237-242, 252; decoder.py:91, 288, 298@4d1e0e8):
    # the weights are divided by init_scale
    enc_init_scale = math.pow(math.pow(n, 4) * m, 0.0625) / 1.15
    code = {"encoder": (math.pow(math.pow(n, 4) * m, 0.0625) * 0.81, 1 / enc_init_scale),
            "decoder": (math.pow(3.0 * m, 0.25), 1 / math.pow(12.0 * m, 0.25))}
    for source, expected in (("paper", paper), ("torchscale", code)):
        for side in ("encoder", "decoder"):
            got = deepnorm_constants(side, n, m, source=source)
            assert abs(got[0] - expected[side][0]) <= 1e-12 and abs(got[1] - expected[side][1]) <= 1e-12
    # they agree but for the encoder's beta, 1.15 / 0.87 apart; the model uses the paper's
    assert abs(code["encoder"][0] - paper["encoder"][0]) <= 1e-12
    assert code["decoder"] == pytest.approx(paper["decoder"], abs=1e-12)
    assert code["encoder"][1] / paper["encoder"][1] == pytest.approx(1.15 / 0.87, abs=1e-12)
    assert DEEPNORM_BETA_SOURCE == "paper"
    assert deepnorm_constants("encoder", n, m) == deepnorm_constants("encoder", n, m, source="paper")


def test_deepnorm_constants_by_hand_at_6_6():
    # (6^4 * 6)^(1/16) = 6^(5/16) = exp(5 ln 6 / 16) = 1.75054... ; (18)^(1/4) = 2.0598...; (72)^(-1/4) = 0.3432...
    base = math.exp(5 * math.log(6) / 16)
    assert base == pytest.approx(1.7505409, abs=1e-7)
    alpha_e, beta_e = deepnorm_constants("encoder", 6, 6)
    alpha_d, beta_d = deepnorm_constants("decoder", 6, 6)
    assert abs(alpha_e - 0.81 * base) <= 1e-12 and abs(beta_e - 0.87 / base) <= 1e-12
    assert alpha_d == pytest.approx(2.0597671, abs=1e-7) and beta_d == pytest.approx(0.3432945, abs=1e-7)


@pytest.mark.parametrize("n, m", DEPTHS)
def test_tfixup_constants_are_the_codes_and_for_equal_depths_the_papers(n, m):
    # T-Fixup's code (transformer_layer.py:42, 168; models/transformer.py:380, 606)
    assert abs(tfixup_scale("encoder", n, m) - 0.67 * (n) ** (- 1. / 4.)) <= 1e-12
    assert abs(tfixup_scale("decoder", n, m) - (9 * m) ** (- 1. / 4.)) <= 1e-12
    assert abs(tfixup_embedding_scale("encoder", n, m) - (9 * n) ** (- 1 / 4)) <= 1e-12
    assert abs(tfixup_embedding_scale("decoder", n, m) - (9 * m) ** (- 1 / 4)) <= 1e-12
    assert TFIXUP_V_GAIN == 2 ** 0.5
    # the paper (one depth N): decoder and both embeddings (9N)^(-1/4), encoder 0.67 N^(-1/4)
    paper = {"decoder": (9 * n) ** (-1 / 4), "embedding": (9 * n) ** (-1 / 4), "encoder": 0.67 * n ** (-1 / 4)}
    assert abs(tfixup_scale("encoder", n, n) - paper["encoder"]) <= 1e-12
    assert abs(tfixup_scale("decoder", n, n) - paper["decoder"]) <= 1e-12
    for side in ("encoder", "decoder"):
        assert abs(tfixup_embedding_scale(side, n, n) - paper["embedding"]) <= 1e-12


def test_the_other_constants_are_their_codes():
    assert DYT_ALPHA_INIT == 0.5  # DyT dynamic_tanh.py:7
    assert RMSNORM_EPS == 1e-8  # rmsnorm_torch.py:13
    assert RESIDUAL_FINAL_LN_EPS == 1e-7  # ResiDual resi_dual.py:24, 157


# ---- the normalization functions against their formulas ----
def test_rmsnorm_and_dyt_compute_their_formulas():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16, dtype=torch.float64) * 3 + 1
    rms = RMSNorm(16).double()
    assert torch.equal(rms.weight, torch.ones(16, dtype=torch.float64)) and rms.eps == 1e-8
    with torch.no_grad():
        rms.weight.uniform_(0.5, 1.5)
    g = rms.weight.detach()
    by_hand = x / (torch.sqrt((x * x).sum(-1, keepdim=True) / 16) + 1e-8) * g
    torch.testing.assert_close(rms(x), by_hand, rtol=0, atol=1e-12)
    # the reference code's way round (rmsnorm_torch.py:38-48): ||x||_2 * d^(-1/2), eps added
    torch.testing.assert_close(rms(x), g * (x / (x.norm(2, dim=-1, keepdim=True) * 16 ** (-1. / 2) + 1e-8)), rtol=0,
                               atol=1e-12)
    dyt = DynamicTanh(16).double()
    assert dyt.alpha.tolist() == [0.5] and torch.equal(dyt.weight, torch.ones(16, dtype=torch.float64))
    assert torch.equal(dyt.bias, torch.zeros(16, dtype=torch.float64))
    torch.testing.assert_close(dyt(x), torch.tanh(0.5 * x), rtol=0, atol=1e-15)
    with torch.no_grad():
        dyt.alpha.fill_(0.8)
        dyt.weight.uniform_(0.5, 1.5)
        dyt.bias.uniform_(-1, 1)
    torch.testing.assert_close(dyt(x), dyt.weight * torch.tanh(0.8 * x) + dyt.bias, rtol=0, atol=1e-15)


def test_the_residual_sublayer_formulas():
    torch.manual_seed(0)
    x, xd = torch.randn(3, 5, 16), torch.randn(3, 5, 16)
    f = torch.nn.Linear(16, 16)
    deep = ResidualSublayer(16, "deepnorm", 0.0, alpha=1.7)
    torch.testing.assert_close(deep(x, f), deep.layer_norm(1.7 * x + f(x)))
    sand = ResidualSublayer(16, "sandwich", 0.0)
    torch.testing.assert_close(sand(x, f), x + sand.out_norm(f(sand.layer_norm(x))))
    tfix = ResidualSublayer(16, "tfixup", 0.0)
    assert not list(tfix.parameters())
    torch.testing.assert_close(tfix(x, f), x + f(x))
    resi = ResidualSublayer(16, "resi_dual", 0.0)
    xa_next, xd_next = resi((x, xd), f)  # the streams: x^a Post-LN, x^d the branches' plain sum
    torch.testing.assert_close(xa_next, resi.layer_norm(x + f(x)))
    torch.testing.assert_close(xd_next, xd + f(x))


# ---- each variant's init on a 2+2-layer model: the standard init scaled by the formulas ----
def named(model):
    return dict(model.named_parameters())


def branch_names(side, layers):
    """{parameter: 'v' (W^V rows) or 'w'} of the weights DeepNorm and T-Fixup scale."""
    out = {}
    attns = ("self_attn",) if side == "encoder" else ("self_attn", "cross_attn")
    for i in range(layers):
        for a in attns:
            out[f"{side}.layers.{i}.{a}.in_proj.weight"] = "v"
            out[f"{side}.layers.{i}.{a}.out_proj.weight"] = "w"
        out[f"{side}.layers.{i}.ffn.fc1.weight"] = out[f"{side}.layers.{i}.ffn.fc2.weight"] = "w"
    return out


def assert_scaled(model, post, factors):
    """factors: {name: (v_factor or None, w_factor)}: W^V rows (last third of in_proj) and whole weights."""
    d = model.cfg.d_model
    p, q = named(model), named(post)
    for name, value in q.items():
        if name not in p:  # a norm the variant has not (T-Fixup's LNs, RMSNorm's bias): see the callers
            continue
        got = p[name]
        if name not in factors:
            assert torch.equal(got, value), name
            continue
        factor = factors[name]
        if name.endswith("in_proj.weight"):
            assert torch.equal(got[:2 * d], value[:2 * d]), name  # W^Q, W^K as drawn
            torch.testing.assert_close(got[2 * d:], value[2 * d:] * factor, rtol=1e-6, atol=0)
        else:
            torch.testing.assert_close(got, value * factor, rtol=1e-6, atol=0)


def test_every_variant_draws_the_standard_init_and_adds_only_its_norms():
    """Same seed, same random draws as Post-LN: the variants scale (DeepNorm, T-Fixup) or keep them."""
    post = seeded(tiny("post"))
    after_post = torch.rand(3)
    for enc, dec, fn in [("sandwich", "sandwich", "layernorm"), ("resi_dual", "resi_dual", "layernorm"),
                         ("deepnorm", "deepnorm", "layernorm"), ("tfixup", "tfixup", "layernorm"),
                         ("pre", "pre", "rmsnorm"), ("pre", "pre", "dyt")]:
        model = seeded(tiny(enc, dec, fn))
        assert torch.equal(torch.rand(3), after_post), (enc, fn)  # no random draw of their own
        extra = set(named(model)) - set(named(post))
        lost = set(named(post)) - set(named(model))
        if enc == "tfixup":  # no LN at all
            assert not extra and {n.rsplit(".", 2)[-2] for n in lost} == {"layer_norm"}
        elif fn == "rmsnorm":  # RMSNorm has a gain, no bias
            assert lost == {n for n in named(post) if "norm" in n and n.endswith(".bias")}
        else:
            assert not lost
        for name in extra:
            value = named(model)[name]
            expected = DYT_ALPHA_INIT if name.endswith("alpha") else 0.0 if name.endswith("bias") else 1.0
            assert torch.all(value == expected), name
        if enc in ("sandwich", "resi_dual") or fn != "layernorm":
            assert_scaled(model, post, {})
    sandwich = seeded(tiny("sandwich"))
    assert sandwich.encoder.final_norm is not None and sandwich.encoder.layers[0].attn_block.out_norm is not None
    resi = seeded(tiny("resi_dual"))
    assert resi.encoder.final_norm.eps == 1e-7 and resi.encoder.layers[0].attn_block.layer_norm.eps == 1e-5


def test_deepnorm_init_is_beta_on_the_value_output_and_ffn_weights_and_alpha_on_the_residual():
    post, model = seeded(tiny("post")), seeded(tiny("deepnorm"))
    beta_e = 0.87 * (N ** 4 * M) ** (-1 / 16)  # the paper's
    beta_d = (12 * M) ** (-1 / 4)
    factors = {name: beta_e for name in branch_names("encoder", N)}
    factors.update({name: beta_d for name in branch_names("decoder", M)})
    assert_scaled(model, post, factors)
    alphas = {s.alpha for s in model.encoder.modules() if isinstance(s, ResidualSublayer)}
    assert len(alphas) == 1 and abs(alphas.pop() - 0.81 * (N ** 4 * M) ** (1 / 16)) <= 1e-12
    alphas = {s.alpha for s in model.decoder.modules() if isinstance(s, ResidualSublayer)}
    assert len(alphas) == 1 and abs(alphas.pop() - (3 * M) ** (1 / 4)) <= 1e-12
    # a hybrid: DeepNorm's decoder beside a Pre-LN encoder keeps the encoder's standard init
    hybrid = seeded(tiny("pre", "deepnorm"))
    assert_scaled(hybrid, seeded(tiny("pre", "post")), {name: beta_d for name in branch_names("decoder", M)})


@pytest.mark.parametrize("share", [False, True])
def test_tfixup_init_scales_the_branches_and_embeddings(share):
    post, model = seeded(tiny("post", share_all_embeddings=share)), seeded(tiny("tfixup", share_all_embeddings=share))
    enc, dec = 0.67 * N ** (-1 / 4), (9 * M) ** (-1 / 4)
    factors = {name: enc * 2 ** 0.5 if kind == "v" else enc for name, kind in branch_names("encoder", N).items()}
    factors.update({name: dec * 2 ** 0.5 if kind == "v" else dec for name, kind in branch_names("decoder", M).items()})
    factors["encoder.embed.tokens.weight"] = (9 * N) ** (-1 / 4)
    if share:  # one embedding, scaled once (T-Fixup's code: the encoder's factor)
        assert "decoder.embed.tokens.weight" not in named(model)
    else:
        factors["decoder.embed.tokens.weight"] = (9 * M) ** (-1 / 4)
    # W^V: [W^Q; W^K; W^V] stacked under one xavier (bound sqrt(6/4d)): times sqrt(2) it is a d x d xavier's
    assert_scaled(model, post, factors)
    d = model.cfg.d_model
    v = model.encoder.layers[0].self_attn.in_proj.weight[2 * d:]
    assert v.abs().max() <= enc * math.sqrt(6 / (2 * d)) * (1 + 1e-6)
    assert torch.all(model.decoder.embed.tokens.weight[PAD] == 0)


# ---- the forward pass of each variant against a hand computation from the weights (float64) ----
def hand_norm(x, module, kind, eps=1e-5):
    if kind == "layernorm":
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + eps) * module.weight + module.bias
    if kind == "rmsnorm":
        return x / (torch.sqrt((x ** 2).mean(-1, keepdim=True)) + 1e-8) * module.weight
    return module.weight * torch.tanh(module.alpha * x) + module.bias  # dyt


def hand_attention(q_in, kv_in, attn, heads, mask):
    d = q_in.size(-1)
    w, b = attn.in_proj.weight, attn.in_proj.bias
    q, k, v = (inp @ w[i * d:(i + 1) * d].T + b[i * d:(i + 1) * d] for i, inp in enumerate((q_in, kv_in, kv_in)))
    dh, outs = d // heads, []
    for h in range(heads):
        part = slice(h * dh, (h + 1) * dh)
        scores = q[..., part] @ k[..., part].transpose(-2, -1) / math.sqrt(dh)
        scores = scores.masked_fill(~mask, float("-inf"))
        outs.append(torch.softmax(scores, -1) @ v[..., part])
    return torch.cat(outs, -1) @ attn.out_proj.weight.T + attn.out_proj.bias


def hand_ffn(x, ffn):
    return torch.relu(x @ ffn.fc1.weight.T + ffn.fc1.bias) @ ffn.fc2.weight.T + ffn.fc2.bias


def hand_sublayer(norm, x, branch, sub, kind, alpha):
    ln = lambda h, m: hand_norm(h, m, kind)  # noqa: E731
    if norm == "post":
        return ln(x + branch(x), sub.layer_norm)
    if norm == "pre":
        return x + branch(ln(x, sub.layer_norm))
    if norm == "deepnorm":
        return ln(alpha * x + branch(x), sub.layer_norm)
    if norm == "sandwich":
        return x + ln(branch(ln(x, sub.layer_norm)), sub.out_norm)
    if norm == "tfixup":
        return x + branch(x)
    xa, xd = x  # resi_dual
    g = branch(xa)
    return ln(xa + g, sub.layer_norm), xd + g


def hand_embed(tokens, stack):
    d = stack.embed.tokens.weight.size(1)
    positions = torch.arange(tokens.size(1)) + PAD + 1
    return math.sqrt(d) * stack.embed.tokens.weight[tokens] + stack.embed.positions[positions].double()


def hand_stack_output(x, norm, stack, kind):
    if norm == "resi_dual":  # x^a + LN(x^d), that LN's eps 1e-7
        return x[0] + hand_norm(x[1], stack.final_norm, kind, eps=1e-7)
    if norm in ("pre", "sandwich"):
        return hand_norm(x, stack.final_norm, kind)
    return x


def hand_logits(model, src, prev):
    cfg, heads = model.cfg, model.cfg.heads
    alpha_e, alpha_d = 0.81 * (N ** 4 * M) ** (1 / 16), (3 * M) ** (1 / 4)  # DeepNorm's, from the formulas
    src_mask = (src != PAD)[:, None, :]
    x = hand_embed(src, model.encoder)
    x = (x, x) if cfg.enc_norm == "resi_dual" else x
    for layer in model.encoder.layers:
        x = hand_sublayer(cfg.enc_norm, x, lambda h: hand_attention(h, h, layer.self_attn, heads, src_mask),
                          layer.attn_block, cfg.norm_fn, alpha_e)
        x = hand_sublayer(cfg.enc_norm, x, lambda h: hand_ffn(h, layer.ffn), layer.ffn_block, cfg.norm_fn, alpha_e)
    memory = hand_stack_output(x, cfg.enc_norm, model.encoder, cfg.norm_fn)
    causal = torch.ones(prev.size(1), prev.size(1), dtype=torch.bool).tril()[None]
    y = hand_embed(prev, model.decoder)
    y = (y, y) if cfg.dec_norm == "resi_dual" else y
    for layer in model.decoder.layers:
        y = hand_sublayer(cfg.dec_norm, y, lambda h: hand_attention(h, h, layer.self_attn, heads, causal),
                          layer.self_block, cfg.norm_fn, alpha_d)
        y = hand_sublayer(cfg.dec_norm, y, lambda h: hand_attention(h, memory, layer.cross_attn, heads, src_mask),
                          layer.cross_block, cfg.norm_fn, alpha_d)
        y = hand_sublayer(cfg.dec_norm, y, lambda h: hand_ffn(h, layer.ffn), layer.ffn_block, cfg.norm_fn, alpha_d)
    y = hand_stack_output(y, cfg.dec_norm, model.decoder, cfg.norm_fn)
    return y @ model.decoder.embed.tokens.weight.T


HAND_CASES = [("post", "post", "layernorm"), ("deepnorm", "deepnorm", "layernorm"), ("sandwich", "sandwich", "layernorm"),
              ("tfixup", "tfixup", "layernorm"), ("resi_dual", "resi_dual", "layernorm"), ("pre", "pre", "rmsnorm"),
              ("pre", "pre", "dyt"), ("post", "post", "dyt"), ("resi_dual", "sandwich", "rmsnorm"),
              ("deepnorm", "tfixup", "dyt"), ("tfixup", "resi_dual", "layernorm")]


@pytest.mark.parametrize("enc, dec, fn", HAND_CASES)
def test_a_2_layer_model_computes_the_hand_formulas_at_init_and_after_its_norms_move(enc, dec, fn):
    model = seeded(tiny(enc, dec, fn)).double().eval()
    torch.manual_seed(3)
    src, prev = torch.randint(4, 40, (3, 6)), torch.randint(4, 40, (3, 5))
    src[0, 4:] = PAD
    with torch.no_grad():
        torch.testing.assert_close(model(src, prev), hand_logits(model, src, prev), rtol=0, atol=1e-12)
        for name, p in model.named_parameters():  # the norms' gains, biases, DyT's alpha, every bias: not at init
            if "norm" in name or name.endswith("bias"):
                p.add_(0.3 * torch.randn_like(p))
        torch.testing.assert_close(model(src, prev), hand_logits(model, src, prev), rtol=0, atol=1e-12)


@pytest.mark.parametrize("enc, dec", [("resi_dual", "resi_dual"), ("sandwich", "deepnorm"), ("tfixup", "tfixup")])
def test_incremental_decoding_equals_the_full_pass(enc, dec):
    model = seeded(tiny(enc, dec, norm_fn="layernorm" if enc == "tfixup" else "rmsnorm")).eval()
    src, prev = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    with torch.no_grad():
        memory, mask = model.encoder(src)
        full = model.decoder(prev, memory, mask)
        cache = [{} for _ in model.decoder.layers]
        steps = [model.decoder(prev[:, t:t + 1], memory, mask, cache)[:, 0] for t in range(prev.size(1))]
    torch.testing.assert_close(torch.stack(steps, 1), full, rtol=1e-5, atol=1e-5)


# ---- a throw-away 2+2-layer training of each variant on the toy corpus ----
def toy_batches(n, size, seed):
    pairs = reversal_pairs(n * size, seed)
    vocab = Dictionary.build([s for pair in reversal_pairs(600, 1) for s in pair])  # the toy corpus's dictionary
    batches = []
    for i in range(n):
        chunk = pairs[i * size:(i + 1) * size]
        tgt = [torch.tensor(vocab.encode(b)) for _, b in chunk]
        batches.append((pad_right([torch.tensor(vocab.encode(a)) for a, _ in chunk]),
                        pad_right([t[:-1] for t in tgt], prepend=EOS), pad_right(tgt)))
    return len(vocab), batches


TRAIN_CASES = [("deepnorm", "deepnorm", "layernorm"), ("sandwich", "sandwich", "layernorm"),
               ("tfixup", "tfixup", "layernorm"), ("resi_dual", "resi_dual", "layernorm"), ("pre", "pre", "rmsnorm"),
               ("pre", "pre", "dyt"), ("deepnorm", "resi_dual", "rmsnorm")]


@pytest.mark.medium
@pytest.mark.parametrize("enc, dec, fn", TRAIN_CASES)
def test_a_2_layer_model_of_each_variant_trains_on_the_toy_corpus(enc, dec, fn, one_thread):
    vocab, train = toy_batches(8, 24, seed=1)
    _, (held,) = toy_batches(1, 32, seed=2)
    torch.manual_seed(1)
    model = Transformer(ModelConfig(vocab_size=vocab, d_model=32, ffn_dim=64, heads=4, enc_layers=2, dec_layers=2,
                                    dropout=0.1, enc_norm=enc, dec_norm=dec, norm_fn=fn))

    def held_loss():
        model.eval()
        with torch.no_grad():
            src, prev, tgt = held
            return F.cross_entropy(model(src, prev).transpose(1, 2), tgt, ignore_index=PAD).item()

    before = held_loss()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))  # no warm-up (T-Fixup's point)
    model.train()
    for step in range(80):
        src, prev, tgt = train[step % len(train)]
        loss, _ = label_smoothed_loss(model(src, prev), tgt, 0.1)
        opt.zero_grad()
        (loss / (tgt != PAD).sum()).backward()
        opt.step()
    after = held_loss()
    # down by 15% at least, and below the uniform distribution's loss ln(V) (3.56; 2.5-3.3 here)
    assert math.isfinite(after) and after < 0.85 * before and after < math.log(vocab), (before, after)


# ---- the variants through the trainer's flags and a config's runs ----------------------------------
@pytest.mark.medium
def test_the_trainer_takes_a_variant_per_side_and_a_norm_fn_and_records_them(toy_data, tmp_path, capsys):
    from lnrepro.cli import main
    from lnrepro.core.translation import load_model
    flags = ["--enc-layers", "2", "--dec-layers", "2", "--d-model", "32", "--ffn-dim", "64", "--heads", "4",
             "--max-tokens", "200", "--device", "cpu", "--threads", "1", "--epochs", "2", "--lr", "2e-3", "--warmup", "0",
             "--schedule", "constant", "--enc-norm", "sandwich", "--dec-norm", "deepnorm", "--norm-fn", "rmsnorm"]
    assert main(["train", "--data", str(toy_data), "--out", str(tmp_path), *flags]) == 0
    assert "norm enc/dec sandwich/deepnorm (rmsnorm)" in "".join(capsys.readouterr())  # the run's log
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    assert metrics.diverged.sum() == 0 and metrics.valid_loss.iloc[-1] < metrics.valid_loss.iloc[0]
    model = load_model(tmp_path / metrics.checkpoint.iloc[-1])
    assert (model.cfg.enc_norm, model.cfg.dec_norm, model.cfg.norm_fn) == ("sandwich", "deepnorm", "rmsnorm")
    assert type(model.encoder.layers[0].attn_block.out_norm).__name__ == "RMSNorm"  # sandwich: an LN after the branch too


def test_a_config_run_of_each_variant_trains_with_its_flags_and_the_papers_runs_keep_theirs():
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    before = {run: pipeline_of(copy.deepcopy(config)).train.train_flags(SimpleNamespace(run=run)) for run in config["runs"]}
    for norm in settings.VARIANT_NORMS:
        config["runs"][f"lab_{norm}"] = {"norm": norm, **({} if norm == "tfixup" else {"norm_fn": "rmsnorm"})}
    config["runs"]["lab_hybrid"] = {"enc_norm": "resi_dual", "dec_norm": "pre", "norm_fn": "dyt"}
    p = pipeline_of(config)
    p.validate()
    flags = {run: p.train.train_flags(SimpleNamespace(run=run)) for run in config["runs"]}
    assert " --enc-norm deepnorm " in flags["lab_deepnorm"] and " --dec-norm deepnorm " in flags["lab_deepnorm"]
    assert " --norm-fn rmsnorm " in flags["lab_sandwich"] and "--norm-fn" not in flags["lab_tfixup"]
    assert " --enc-norm resi_dual " in flags["lab_hybrid"] and " --dec-norm pre " in flags["lab_hybrid"]
    assert " --norm-fn dyt " in flags["lab_hybrid"]
    assert {run: flags[run] for run in before} == before  # a run that sets no norm_fn trains as it did


def test_a_norm_fn_the_model_refuses_is_a_config_error_naming_the_run():
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["runs"]["liu_wmt_admin_6L"]["norm_fn"] = "rmsnorm"
    assert "config: runs.liu_wmt_admin_6L.norm_fn: norm_fn='rmsnorm' with Admin" in refusal_before_any_job(config)
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["runs"]["lab"] = {"norm": "tfixup", "norm_fn": "dyt"}
    assert "runs.lab.norm_fn: norm_fn='dyt' with enc_norm='tfixup', dec_norm='tfixup': no normalization layer" \
        in refusal_before_any_job(config)
    config["runs"]["lab"] = {"enc_norm": "admin", "dec_norm": "deepnorm"}
    assert "runs.lab: enc_norm/dec_norm admin/deepnorm cannot be built" in refusal_before_any_job(config)
