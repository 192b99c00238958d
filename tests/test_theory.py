"""Known values of Xiong et al. §3.3 in the simplified setting: Lemma 2, Lemma 3, Theorem 1, concentration."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lnrepro.analyses import theory
from lnrepro.analyses.probing import concentration


pytestmark = pytest.mark.usefixtures("one_thread")


def test_paper_init_zeroes_query_and_key_and_draws_the_rest_with_variance_one_over_d():
    stack = theory.simplified_stack(d=256, layers=1, norm="post", seed=1)
    layer = stack[0]
    w_q, w_k, w_v = layer.self_attn.in_proj.weight.chunk(3)
    assert w_q.abs().max() == 0 and w_k.abs().max() == 0
    for w in (w_v, layer.self_attn.out_proj.weight, layer.ffn.fc1.weight, layer.ffn.fc2.weight):
        assert w.var().item() == pytest.approx(1 / 256, rel=0.05)
    assert all(m.bias.abs().max() == 0 for m in layer.modules() if isinstance(m, torch.nn.Linear))


def test_zero_query_and_key_make_attention_the_mean_of_the_values():
    layer = theory.simplified_stack(d=16, layers=1, norm="pre", seed=2)[0]
    x = torch.randn(3, 5, 16)
    out = layer.self_attn(x, x, None)
    w_v, b_v = layer.self_attn.in_proj.weight[32:], layer.self_attn.in_proj.bias[32:]
    expected = layer.self_attn.out_proj(F.linear(x, w_v, b_v).mean(dim=1, keepdim=True)).expand_as(out)
    torch.testing.assert_close(out, expected)


@pytest.fixture(scope="module")
def lemma2():
    rows, last = theory.lemma2_rows(d=64, layers=6, seeds=12, sequences=16, positions=16)
    return rows, last


def test_lemma2_post_ln_norm_is_three_halves_d(lemma2):
    post = [r["measured"] for r in lemma2[0] if r["norm"] == "post"]
    assert np.mean(post) == pytest.approx(1.5, abs=0.05)
    assert all(abs(v - 1.5) < 0.15 for v in post)


def test_lemma2_pre_ln_norm_grows_within_the_bounds(lemma2):
    pre = [r for r in lemma2[0] if r["norm"] == "pre"]
    assert [r["x"] for r in pre] == [1, 2, 3, 4, 5, 6]
    for r in pre:
        assert r["expected_low"] == 1 + r["x"] / 2 and r["expected_high"] == 1 + 3 * r["x"] / 2
        assert r["expected_low"] <= r["measured"] <= r["expected_high"], r


@pytest.mark.parametrize("d", [8, 64, 512])
@pytest.mark.parametrize("scale", [0.5, 1.0, 30.0])
def test_lemma3_layer_norm_jacobian_spectral_norm_is_sqrt_d_over_norm_for_centered_x(d, scale):
    g = torch.randn(d, generator=torch.Generator().manual_seed(d), dtype=torch.float64)
    x = scale * (g - g.mean())
    assert theory.ln_jacobian_spectral_norm(x) == pytest.approx(math.sqrt(d) / x.norm().item(), rel=1e-3)


def test_lemma3_uncentered_x_uses_the_centered_norm():
    x = torch.randn(32, dtype=torch.float64) + 3.0
    assert theory.ln_jacobian_spectral_norm(x) == pytest.approx(math.sqrt(32) / (x - x.mean()).norm().item(), rel=1e-3)


@pytest.mark.parametrize("k", [-0.5, 0.0, 1.0])
def test_fitted_exponent_recovers_a_power_law(k):
    x = np.array([4, 8, 16, 32])
    assert theory.fitted_exponent(x, 3.0 * x ** k) == pytest.approx(k, abs=1e-9)


@pytest.mark.medium
def test_theorem1_exponents_post_ln_flat_pre_ln_inverse_sqrt():
    rows = theory.theorem1_rows(d=32, depths=[4, 8, 16, 32], seeds=8, sequences=8, positions=8, vocab_size=100)
    for norm, expected in (("post", 0.0), ("pre", -0.5)):
        r = [x for x in rows if x["norm"] == norm]
        k = theory.fitted_exponent([x["x"] for x in r], [x["measured"] for x in r])
        assert k == pytest.approx(expected, abs=0.12), (norm, k)


@pytest.mark.parametrize("z, eps, delta", [
    ([2.0, 2.0, 2.0], 0.1, 0.0),
    ([1.0, 1.0, 1.0, 5.0], 0.1, 0.25),  # mean 2: relative deviations -0.5, -0.5, -0.5, 1.5
    ([1.0, 1.0, 1.0, 5.0], 2.0, 0.0),
])
def test_concentration_delta_hat(z, eps, delta):
    assert concentration(z, (eps,))[eps] == pytest.approx(delta)


def test_gaussian_norm_concentrates_as_the_paper_bound_says():
    """||Y||^2 of a d-dim standard Gaussian is (eps, exp(-d eps^2 / 8))-bounded."""
    d, eps = 512, 0.1
    z = torch.randn(20000, d, generator=torch.Generator().manual_seed(0)).pow(2).sum(1).numpy()
    assert concentration(z, (eps,))[eps] <= math.exp(-d * eps ** 2 / 8)


@pytest.mark.medium
def test_measure_writes_every_check(tmp_path):
    points, summary = theory.measure(d=16, layers=2, depths=[2, 4], seeds=2, sequences=2, positions=4, vocab_size=20)
    assert set(points.check) == {"lemma2", "lemma3", "theorem1", "concentration"}
    assert {"lemma2_post", "lemma2_pre", "lemma3", "theorem1_post", "theorem1_pre",
            "concentration_post", "concentration_pre"} == set(summary.check)
    theory.draw(points, summary, "t", tmp_path / "t.pdf", d=16)
    assert (tmp_path / "t.pdf").read_bytes()[:5] == b"%PDF-"
