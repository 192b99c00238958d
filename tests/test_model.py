import math

import pytest
import torch

from lnrepro.core.batching import pad_right
from lnrepro.core.beam import beam_search
from lnrepro.core.data import EOS, PAD
from lnrepro.core.layers import ResidualSublayer, dropout
from lnrepro.core.model import ModelConfig, Transformer, label_smoothed_loss, sinusoidal_table


def tiny(norm="post", layers=2, d=32, **kw):
    return ModelConfig(vocab_size=50, d_model=d, ffn_dim=2 * d, heads=4, enc_layers=layers, dec_layers=layers,
                       dropout=0.0, enc_norm=norm, dec_norm=norm, **kw)


def test_sublayer_formulas_of_xiong_table1():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16)
    f = torch.nn.Linear(16, 16)
    for norm in ("post", "pre", "admin"):
        block = ResidualSublayer(16, norm, dropout=0.0)
        ln = block.layer_norm
        expected = {"post": ln(x + f(x)), "pre": x + f(ln(x)), "admin": ln(f(x) + x)}[norm]
        torch.testing.assert_close(block(x, f), expected)
    admin = ResidualSublayer(16, "admin", dropout=0.0)
    with torch.no_grad():
        admin.omega.fill_(2.0)
    torch.testing.assert_close(admin(x, f), admin.layer_norm(f(x) + 2.0 * x))


def test_pre_ln_has_final_norms_and_post_ln_none():
    pre, post = Transformer(tiny("pre")), Transformer(tiny("post"))
    assert pre.encoder.final_norm is not None and pre.decoder.final_norm is not None
    assert post.encoder.final_norm is None and post.decoder.final_norm is None
    hybrid = Transformer(ModelConfig(vocab_size=50, d_model=32, heads=4, enc_norm="pre", dec_norm="post"))
    assert hybrid.encoder.final_norm is not None and hybrid.decoder.final_norm is None


def test_bad_norm_names_the_field():
    with pytest.raises(ValueError, match="enc_norm='postln'"):
        ModelConfig(vocab_size=10, enc_norm="postln")


def test_initialization_as_fairseq():
    torch.manual_seed(0)
    d = 256
    m = Transformer(ModelConfig(vocab_size=3000, d_model=d, ffn_dim=512, heads=4, enc_layers=1, dec_layers=1))
    emb = m.decoder.embed.tokens.weight
    assert torch.all(emb[PAD] == 0)
    assert emb[4:].std().item() == pytest.approx(d ** -0.5, rel=0.02)
    fc1 = m.encoder.layers[0].ffn.fc1
    assert fc1.weight.abs().max() <= math.sqrt(6 / (d + 512)) and torch.all(fc1.bias == 0)
    in_proj = m.encoder.layers[0].self_attn.in_proj.weight  # [W^Q; W^K; W^V], xavier over the stack
    assert in_proj.shape == (3 * d, d) and in_proj.abs().max() <= math.sqrt(6 / (4 * d))
    assert in_proj.abs().max() > 0.95 * math.sqrt(6 / (4 * d))
    assert m.encoder.layers[0].attn_block.layer_norm.eps == 1e-5


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_dropout_drops_a_share_p_and_keeps_the_expectation(p):
    torch.manual_seed(0)
    x = torch.ones(400_000)
    y = dropout(x, p, training=True)
    assert (y == 0).float().mean().item() == pytest.approx(p, abs=0.003)
    assert y.mean().item() == pytest.approx(1.0, abs=0.005)
    assert y.unique().tolist() == [0.0, pytest.approx(1 / (1 - p), rel=1e-4)]
    # the same seed gives the same mask (resume replays it); another seed another; eval is identity
    torch.manual_seed(0)
    assert torch.equal(dropout(x, p, training=True), y)
    assert not torch.equal(dropout(x, p, training=True), y)
    assert dropout(x, p, training=False) is x


def test_dropout_gradient_is_the_mask():
    torch.manual_seed(1)
    x = torch.randn(7, 5, 3, requires_grad=True)  # an odd element count: the last word is partly used
    y = dropout(x, 0.5, training=True)
    y.sum().backward()
    torch.testing.assert_close(x.grad, (y / x).detach())


def test_sinusoidal_positions_are_sin_then_cos():
    t = sinusoidal_table(10, 8)
    assert torch.all(t[PAD] == 0)
    freq = math.exp(-math.log(10000) / 3)  # half=4: frequencies 1, f, f^2, f^3
    assert t[5, 0].item() == pytest.approx(math.sin(5))
    assert t[5, 1].item() == pytest.approx(math.sin(5 * freq), abs=1e-6)
    assert t[5, 4].item() == pytest.approx(math.cos(5))


def test_output_projection_is_tied():
    m = Transformer(tiny(share_all_embeddings=True))
    assert m.encoder.embed.tokens is m.decoder.embed.tokens
    assert Transformer(tiny()).encoder.embed.tokens is not Transformer(tiny()).decoder.embed.tokens


def test_label_smoothing_formula_and_padding_mask():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 7)
    target = torch.tensor([[4, 5, PAD], [6, 4, 5]])
    loss, nll = label_smoothed_loss(logits, target, 0.1)
    lp = logits.log_softmax(-1)
    exp_nll = exp_loss = 0.0
    for b, t in [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]:
        n = -lp[b, t, target[b, t]]
        exp_nll += n
        exp_loss += 0.9 * n + (0.1 / 7) * -lp[b, t].sum()
    assert nll.item() == pytest.approx(exp_nll.item(), rel=1e-6)
    assert loss.item() == pytest.approx(exp_loss.item(), rel=1e-6)


def test_fused_attention_equals_plain_path():
    torch.manual_seed(0)
    fused = Transformer(tiny("pre")).eval()
    plain = Transformer(tiny("pre", fused_attention=False)).eval()
    plain.load_state_dict(fused.state_dict())
    src, prev = torch.randint(4, 50, (3, 7)), torch.randint(4, 50, (3, 5))
    src[0, -2:] = PAD
    torch.testing.assert_close(fused(src, prev), plain(src, prev), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_cached_greedy_equals_full_recomputation(norm):
    torch.manual_seed(1)
    m = Transformer(tiny(norm)).eval()
    src = pad_right([torch.randint(4, 50, (n,)) for n in (6, 3, 8)])
    greedy = beam_search(m, src, beam=1, max_len_b=12)
    memory, mask = m.encoder(src)
    tokens = torch.full((3, 1), EOS)
    for step in range(13):
        lp = m.decoder(tokens, memory, mask)[:, -1].log_softmax(-1)
        lp[:, [0, PAD]] = float("-inf")
        if step == 0:  # min_len 1: at least one real token
            lp[:, EOS] = float("-inf")
        tokens = torch.cat([tokens, lp.argmax(-1, keepdim=True)], 1)
    for hyp, row in zip(greedy, tokens[:, 1:].tolist()):
        assert hyp == (row[: row.index(EOS)] if EOS in row else row[:12])


def test_beam_finds_a_hypothesis_at_least_as_likely_as_greedy():
    torch.manual_seed(2)
    m = Transformer(tiny("pre")).eval()
    src = pad_right([torch.randint(4, 50, (n,)) for n in (5, 7, 4, 6)])

    def logprob(s, hyp):
        prev = torch.tensor([[EOS] + hyp])
        lp = m(src[s:s + 1], prev).log_softmax(-1)[0]
        return sum(lp[i, t].item() for i, t in enumerate(hyp + [EOS]))

    greedy = beam_search(m, src, beam=1, max_len_b=10)
    beam = beam_search(m, src, beam=5, lenpen=0.0, max_len_b=10)  # lenpen 0: raw log-probability
    for s in range(4):
        assert logprob(s, beam[s]) >= logprob(s, greedy[s]) - 1e-4


def test_beam_search_of_a_batch_equals_each_sentence_alone():
    """Sentences finish at different steps and leave the batch; the others must not notice."""
    torch.manual_seed(3)
    m = Transformer(tiny("post")).eval()
    with torch.no_grad():  # a likelier </s>, so that some sentences end early and some run to the limit
        m.decoder.embed.tokens.weight[EOS] *= 1.6
    src = pad_right([torch.randint(4, 50, (n,)) for n in (2, 9, 5, 7, 3, 8)])
    together = beam_search(m, src, beam=4, lenpen=1.2, max_len_b=12)  # max length not set by the batch
    alone = [beam_search(m, src[i:i + 1, :int((src[i] != PAD).sum())], beam=4, lenpen=1.2, max_len_b=12)[0] for i in range(6)]
    assert together == alone
    assert len({len(h) for h in together}) > 1  # the sentences did end at different steps


def first_step_lprobs(m, src):
    """log P(first target token | source), the distribution beam_search's step 0 sees."""
    memory, mask = m.encoder(src)
    return m.decoder(torch.full((src.size(0), 1), EOS), memory, mask)[:, -1].log_softmax(-1)


def eos_dominant_model():
    """A Pre-LN model whose decoder output always leans towards </s>: the final norm's bias is the
    </s> embedding, so </s> is the likeliest token at every step, the first included."""
    torch.manual_seed(4)
    m = Transformer(tiny("pre")).eval()
    with torch.no_grad():
        m.decoder.final_norm.bias.copy_(3 * m.decoder.embed.tokens.weight[EOS])
    return m


def test_min_len_1_forbids_the_empty_hypothesis_fairseq_forbids():
    m = eos_dominant_model()
    src = pad_right([torch.randint(4, 50, (n,)) for n in (5, 7, 4)])
    assert (first_step_lprobs(m, src).argmax(-1) == EOS).all()  # the premise: </s> first would win
    assert beam_search(m, src, beam=4, lenpen=1.0, max_len_b=10, min_len=0) == [[], [], []]
    hyps = beam_search(m, src, beam=4, lenpen=1.0, max_len_b=10, min_len=1)
    assert all(len(h) >= 1 for h in hyps)
    assert all(len(h) >= 3 for h in beam_search(m, src, beam=4, lenpen=1.0, max_len_b=10, min_len=3))


class EosLogitByStep(torch.nn.Module):
    """A decoder whose </s> logit is moved by bias(step), the step counted by its calls (beam search
    calls it once a step): a model whose </s> probability depends on the step, set by hand."""

    def __init__(self, decoder, bias):
        super().__init__()
        self.inner, self.layers, self.bias, self.step = decoder, decoder.layers, bias, 0

    def forward(self, tokens, memory, memory_mask, cache=None):
        logits = self.inner(tokens, memory, memory_mask, cache)
        logits[..., EOS] += self.bias(self.step)
        self.step += 1
        return logits


def eos_late_model():
    """</s> far out of reach at step 0 and ever likelier after it, so hypotheses end at steps 7-10."""
    torch.manual_seed(1)
    m = Transformer(tiny("post")).eval()
    m.decoder = EosLogitByStep(m.decoder, lambda step: -20.0 if step == 0 else 0.6 * step - 3)
    return m


def test_min_len_1_changes_nothing_where_eos_is_not_among_the_first_candidates():
    torch.manual_seed(1)
    src = pad_right([torch.randint(4, 50, (n,)) for n in (2, 9, 5, 7, 3, 8)])
    m = eos_late_model()
    assert not (first_step_lprobs(m, src).topk(4, -1).indices == EOS).any()  # the premise
    allowed = beam_search(eos_late_model(), src, beam=4, lenpen=1.2, max_len_b=12, min_len=0)
    assert beam_search(eos_late_model(), src, beam=4, lenpen=1.2, max_len_b=12, min_len=1) == allowed
    assert len({len(h) for h in allowed}) > 1 and max(len(h) for h in allowed) < 12  # </s> chosen, at different steps


def last_ffn_w2_grad(norm, layers, seed):
    torch.manual_seed(seed)
    m = Transformer(ModelConfig(vocab_size=200, d_model=64, ffn_dim=128, heads=4, enc_layers=layers,
                                dec_layers=layers, dropout=0.0, enc_norm=norm, dec_norm=norm))
    src, tgt = torch.randint(4, 200, (16, 12)), torch.randint(4, 200, (16, 12))
    prev = torch.cat([torch.full((16, 1), EOS), tgt[:, :-1]], 1)
    loss, _ = label_smoothed_loss(m(src, prev), tgt, 0.1)
    (loss / (tgt != PAD).sum()).backward()
    return m.decoder.layers[-1].ffn.fc2.weight.grad.norm().item()


def test_post_ln_gradient_near_output_is_larger_and_depth_independent():
    """Xiong et al. Theorem 1 / Fig 3(c,d), measured on the model at initialization."""
    post6, pre6 = last_ffn_w2_grad("post", 6, 0), last_ffn_w2_grad("pre", 6, 0)
    post12, pre12 = last_ffn_w2_grad("post", 12, 0), last_ffn_w2_grad("pre", 12, 0)
    assert post6 > 2 * pre6
    assert pre12 < pre6  # Pre-LN: shrinks with depth (~ 1/sqrt(L))
    assert 0.6 < post12 / post6 < 1.6  # Post-LN: about constant


# ---- Admin's profiling pass: tests/test_admin.py ------------------------------------------------
@pytest.mark.parametrize("enc, dec", [("post", "pre"), ("pre", "post"), ("post", "post"), ("pre", "pre"),
                                      ("admin", "post")])
def test_hybrid_placements_build_and_run(enc, dec):
    m = Transformer(ModelConfig(vocab_size=50, d_model=32, heads=4, enc_layers=2, dec_layers=2, enc_norm=enc, dec_norm=dec))
    assert m(torch.randint(4, 50, (2, 5)), torch.randint(4, 50, (2, 4))).shape == (2, 4, 50)
    assert (m.encoder.final_norm is not None) == (enc == "pre")
    assert (m.decoder.final_norm is not None) == (dec == "pre")


def test_admin_with_pre_ln_is_a_clear_error():
    with pytest.raises(ValueError, match="Admin"):
        ModelConfig(vocab_size=10, enc_norm="admin", dec_norm="pre")
