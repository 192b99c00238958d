"""Admin's profiling pass (Liu et al. §4.3) as Transformer-Clinic runs it: omega_i = r_i is set
before sublayer i adds its residual, in the same forward pass (lnrepro.core.admin)."""
import json
import math

import pytest
import torch

from lnrepro.core.admin import METHOD, admin_sublayers, load_omegas, profile, variance
from lnrepro.core.data import PAD
from lnrepro.core.model import ModelConfig, Transformer


def admin_model(layers, dropout=0.0, d=32, seed=0):
    torch.manual_seed(seed)
    return Transformer(ModelConfig(vocab_size=50, d_model=d, ffn_dim=2 * d, heads=4, enc_layers=layers,
                                   dec_layers=layers, dropout=dropout, attn_dropout=dropout, act_dropout=dropout,
                                   enc_norm="admin", dec_norm="admin"))


def batch(seed=1, sentences=4, length=9):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 50, (sentences, length), generator=g)
    prev = torch.randint(4, 50, (sentences, length - 2), generator=g)
    src[0, -2:] = PAD  # padding is part of the tensor the variances are taken over
    return src, prev


def pop_var(t):
    """np.var of the whole tensor, in plain ops."""
    t = t.double()
    return ((t - t.mean()) ** 2).mean().item()


@torch.no_grad()
def test_one_layer_per_side_by_hand():
    """The authors' recurrence, unrolled (transformer_layer.py at 70f72b7, lines 186-196, 252-261,
    561-571, 611-620, 645-654): omega = r; out = LN(branch + omega * x); r = sqrt(Var(omega * x) + Var(branch)).
    Dropout off, so the pass is deterministic."""
    model = admin_model(layers=1)
    src, prev = batch()
    enc, dec = model.encoder.layers[0], model.decoder.layers[0]
    # encoder: r = 1 at its first sublayer
    x0 = model.encoder.embed(src)
    mask = (src != PAD)[:, None, None, :]
    b1 = enc.self_attn(x0, x0, mask)
    w1 = 1.0
    x1 = enc.attn_block.layer_norm(b1 + w1 * x0)
    w2 = math.sqrt(pop_var(w1 * x0) + pop_var(b1))
    b2 = enc.ffn(x1)
    memory = enc.ffn_block.layer_norm(b2 + w2 * x1)  # the encoder output, made with w2 already set
    # decoder: its own r, again 1 at its first sublayer
    y0 = model.decoder.embed(prev)
    causal = torch.ones(prev.size(1), prev.size(1), dtype=torch.bool).tril()
    c1 = dec.self_attn(y0, y0, causal)
    v1 = 1.0
    y1 = dec.self_block.layer_norm(c1 + v1 * y0)
    v2 = math.sqrt(pop_var(v1 * y0) + pop_var(c1))
    c2 = dec.cross_attn(y1, memory, mask, None, static_kv=True)
    y2 = dec.cross_block.layer_norm(c2 + v2 * y1)
    v3 = math.sqrt(pop_var(v2 * y1) + pop_var(c2))

    got = profile(model, src, prev)
    assert got["method"] == METHOD
    assert got["encoder"] == pytest.approx([w1, w2], rel=1e-6)
    assert got["decoder"] == pytest.approx([v1, v2, v3], rel=1e-6)
    assert v3 != pytest.approx(v2) and w2 > 1  # the case tests something
    # the pass leaves every omega set in the model
    set_in_model = [s.omega.unique().tolist() for s in model.residual_sublayers()]
    assert set_in_model == [[pytest.approx(w)] for w in (w1, w2, v1, v2, v3)]


class OmegaOneRecorder:
    """The earlier reading, for comparison: omega stays 1 and (Var(x_i), Var(f_i)) are recorded."""

    def __init__(self):
        self.records = []

    def set_omega(self, sublayer, x, branch):
        self.records.append((variance(x), variance(branch)))

    def omegas(self):
        r, out = 1.0, []
        for var_x, var_f in self.records:
            out.append(r)
            r = math.sqrt(var_x * r * r + var_f)
        return out


@torch.no_grad()
def omega_one_pass(model, src, prev):
    recorders = {side: OmegaOneRecorder() for side in ("encoder", "decoder")}
    for side, rec in recorders.items():
        for s in admin_sublayers(getattr(model, side)):
            s.omega.fill_(1.0)
            s.profiler = rec
    model.train()
    model(src, prev)
    for s in admin_sublayers(model):
        s.profiler = None
    return {side: rec.omegas() for side, rec in recorders.items()}


def test_omegas_differ_from_an_omega_one_pass_where_earlier_omegas_are_used():
    """Same weights, batch and dropout masks. The encoder's first three omegas agree (only omega_1 = 1
    is used before them), the decoder's first two (its encoder-attention reads the encoder output,
    made with the encoder's omegas); the top ones are smaller when earlier omegas apply in the pass
    (2-10% over seeds at these sizes; with sentences of ~10 tokens the sign is noise)."""
    model, (src, prev) = admin_model(layers=6, dropout=0.1), batch(sentences=8, length=22)
    torch.manual_seed(5)
    before = omega_one_pass(model, src, prev)
    torch.manual_seed(5)
    after = profile(model, src, prev)
    same = {"encoder": 3, "decoder": 2}
    for side, n in same.items():
        assert after[side][:n] == pytest.approx(before[side][:n], rel=1e-6)  # Var(w * x) vs w^2 Var(x): rounding
        assert after[side][n] != before[side][n]
        assert after[side][-1] < before[side][-1]


def test_profiling_grows_with_depth_and_loads(tmp_path):
    m = admin_model(layers=3)
    om = profile(m, *batch())
    assert len(om["encoder"]) == 6 and len(om["decoder"]) == 9  # 2 and 3 sublayers per layer
    for side in ("encoder", "decoder"):
        assert om[side][0] == 1.0 and all(b > a for a, b in zip(om[side], om[side][1:]))
    # LN outputs have unit variance, so r_{i+1}^2 - r_i^2 * Var(x_i) is Var(f_i): the last omega^2 is
    # about 1 + the sum of the branch variances, well above 1 and below 1 + (number of sublayers) * 4
    assert 1.5 < om["encoder"][-1] ** 2 < 1 + 6 * 4
    fresh = admin_model(layers=3, seed=1)
    (tmp_path / "omega.json").write_text(json.dumps(om))
    load_omegas(fresh, tmp_path / "omega.json")
    assert fresh.decoder.layers[2].ffn_block.omega[0].item() == pytest.approx(om["decoder"][-1])
    assert fresh.encoder.layers[0].attn_block.omega.mean().item() == 1.0


@pytest.mark.parametrize("method", [None, "omega-one"])
def test_omegas_of_another_method_are_refused(tmp_path, method):
    """omega.json of the earlier pass (no "method") or another method never initializes a run."""
    om = {"encoder": [1.0, 1.5], "decoder": [1.0, 1.4, 1.6]}
    if method:
        om["method"] = method
    (tmp_path / "omega.json").write_text(json.dumps(om))
    with pytest.raises(ValueError, match="rerun `lnrepro admin-profile`"):
        load_omegas(admin_model(layers=1), tmp_path / "omega.json")
