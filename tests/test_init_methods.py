"""FixUp (norm fixup) and LookLinear (init looklinear), the initializations Liu et al. §5.2 compare with."""
import dataclasses

import pytest
import torch
import torch.nn.functional as F

from lnrepro.core.data import EOS, PAD
from lnrepro.core.checkpoint import CHECKPOINT_FORMAT, stale_reason
from lnrepro.core.config import without_later_defaults
from lnrepro.core.layers import FeedForward, MultiheadAttention
from lnrepro.core.model import ModelConfig, Transformer, label_smoothed_loss
from lnrepro.core.translation import TrainConfig

LAYERS = 3  # L = 3 x 2 encoder + 3 x 3 decoder branches = 15


def tiny(norm="post", **kw):
    return ModelConfig(vocab_size=60, d_model=32, ffn_dim=64, heads=4, enc_layers=LAYERS, dec_layers=LAYERS,
                       dropout=0.0, enc_norm=norm, dec_norm=norm, **kw)


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    src, tgt = torch.randint(4, 60, (8, 7), generator=g), torch.randint(4, 60, (8, 6), generator=g)
    return src, torch.cat([torch.full((8, 1), EOS), tgt[:, :-1]], 1), tgt


def built(cfg, seed=0):
    torch.manual_seed(seed)
    return Transformer(cfg)


def test_fixup_has_no_layer_norm_and_zero_branch_ends():
    m = built(tiny("fixup"))
    assert not [n for n, mod in m.named_modules() if isinstance(mod, torch.nn.LayerNorm)]
    attn = [mod for mod in m.modules() if isinstance(mod, MultiheadAttention)]
    ffns = [mod for mod in m.modules() if isinstance(mod, FeedForward)]
    assert len(attn) == 3 * LAYERS and len(ffns) == 2 * LAYERS
    for layer in [a.out_proj for a in attn] + [f.fc2 for f in ffns]:
        assert torch.count_nonzero(layer.weight) == 0 and torch.count_nonzero(layer.bias) == 0
    sub = m.residual_sublayers()
    assert len(sub) == 5 * LAYERS and all(s.multiplier.item() == 1 and s.in_bias.item() == 0 for s in sub)


def test_fixup_scales_the_other_branch_layers_by_l_to_the_minus_half():
    """Rule (2) with m = 2: L^(-1/(2m-2)) = 15^(-1/2) against the standard init of the same seed."""
    fixup, post = built(tiny("fixup")), built(tiny("post"))
    expected = (5 * LAYERS) ** -0.5
    for name in ("encoder.layers.0.self_attn.in_proj.weight", "decoder.layers.2.cross_attn.in_proj.weight",
                 "encoder.layers.1.ffn.fc1.weight", "decoder.layers.0.ffn.fc1.weight"):
        a, b = fixup.get_parameter(name), post.get_parameter(name)
        assert a.std().item() / b.std().item() == pytest.approx(expected, rel=0.1)
    torch.testing.assert_close(fixup.encoder.embed.tokens.weight, post.encoder.embed.tokens.weight)  # not in a branch


def test_fixup_at_init_is_the_embedding_path():
    m = built(tiny("fixup")).eval()
    src, prev, _ = batch()
    expected = F.linear(m.decoder.embed(prev), m.decoder.embed.tokens.weight)  # every branch adds 0
    torch.testing.assert_close(m(src, prev), expected, rtol=0, atol=0)


def test_looklinear_ffn_is_the_linear_map_u_v_at_init():
    m = built(tiny("post", init="looklinear"))
    for ffn in (mod for mod in m.modules() if isinstance(mod, FeedForward)):
        w1, w2, half = ffn.fc1.weight, ffn.fc2.weight, 32
        torch.testing.assert_close(w1[half:], -w1[:half], rtol=0, atol=0)  # W1 = [V; -V]
        torch.testing.assert_close(w2[:, half:], -w2[:, :half], rtol=0, atol=0)  # W2 = [U, -U]
        v, u = w1[:half], w2[:, :half]
        torch.testing.assert_close(v @ v.T, torch.eye(half), atol=1e-5, rtol=0)  # orthogonal rows (32 x 32)
        torch.testing.assert_close(u @ u.T, torch.eye(32), atol=1e-5, rtol=0)
        x = torch.randn(5, 32)
        torch.testing.assert_close(ffn(x), x @ (u @ v).T, atol=1e-5, rtol=1e-5)


def test_looklinear_changes_only_the_ffn():
    look, post = built(tiny("post", init="looklinear")), built(tiny("post"))
    for name, p in post.named_parameters():
        same = torch.equal(p, look.get_parameter(name))
        assert same == (".ffn.fc" not in name or name.endswith("bias")), name


@pytest.mark.parametrize("kw, named", [
    ({"enc_norm": "fixup", "dec_norm": "post"}, "set 'fixup' on both sides"),
    ({"init": "looklinear", "activation": "gelu"}, "init='looklinear' needs activation 'relu'"),
    ({"init": "looklinear", "ffn_dim": 63}, "init='looklinear' needs an even ffn_dim"),
    ({"init": "looklinear", "enc_norm": "fixup", "dec_norm": "fixup"}, "init='looklinear' with enc_norm='fixup'"),
    ({"init": "looklinear", "dec_norm": "admin"}, "init='looklinear' with dec_norm='admin'"),
    ({"init": "lsuv"}, "init='lsuv': expected one of"),
])
def test_invalid_combinations_name_the_setting(kw, named):
    base = {"vocab_size": 60, "d_model": 32, "ffn_dim": 64, "heads": 4}
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        ModelConfig(**{**base, **kw})


@pytest.mark.parametrize("options", [{"norm": "fixup"}, {"norm": "post", "init": "looklinear"}])
def test_a_training_step_lowers_the_loss(options, one_thread):
    m = built(tiny(options["norm"], init=options.get("init", "standard"))).train()
    src, prev, tgt = batch()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    losses = []
    for _ in range(5):
        loss, _ = label_smoothed_loss(m(src, prev), tgt, 0.1)
        loss = loss / (tgt != PAD).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.05


def test_init_reaches_the_model_and_leaves_standard_runs_fingerprints_alone():
    look = TrainConfig(init="looklinear")
    assert look.model_config(60).init == "looklinear"
    standard = TrainConfig()
    assert "init" not in standard.settings() and look.settings()["init"] == "looklinear"
    assert "init" not in without_later_defaults(dataclasses.asdict(standard.model_config(60)))


def test_a_checkpoint_from_before_init_still_resumes():
    """last.pt written before the init setting: no 'init' in its settings or model config."""
    cfg = TrainConfig()
    old = lambda d: {k: v for k, v in d.items() if k != "init"}
    model_config = dataclasses.asdict(cfg.model_config(60))
    state = {"format": CHECKPOINT_FORMAT, "world": 1, "fingerprint": cfg.fingerprint(),
             "train_config": old(cfg.as_dict()), "data": {"train.pt": "abc"}, "model_config": old(model_config)}
    assert stale_reason(state, cfg, 1, {"data": {"train.pt": "abc"}, "model_config": model_config}) is None
    look = TrainConfig(init="looklinear")
    assert "init differs" in stale_reason(state, look, 1, None)
