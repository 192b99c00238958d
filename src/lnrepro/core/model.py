"""Encoder-decoder Transformer with Post-LN, Pre-LN, Admin and FixUp residual sublayers, and the
variants of lnrepro.core.norms (DeepNorm, Sandwich-/Peri-LN, T-Fixup, ResiDual; RMSNorm or DyT for LayerNorm).

Read in order: the model's settings, its encoder and decoder layers (of lnrepro.core.layers' attention,
feed-forward and residual sublayers, where the variants differ), embeddings, encoder, decoder, the
seq2seq wrapper, then the two other initializations Liu et al. §5.2 compare with (FixUp, LookLinear)
and the variants'. Initialization otherwise follows fairseq of the papers' era.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..settings import (INITS, LOOKLINEAR_REFUSED_NORMS, MODEL_NORMS, NORM_FNS, TRAIN_DEFAULTS, norm_fn_refusal,
                        norm_pair_refusal)
from .data import PAD
from .layers import FeedForward, MultiheadAttention, ResidualSublayer, dropout
from .norms import (RESIDUAL_FINAL_LN_EPS, TFIXUP_V_GAIN, deepnorm_constants, make_norm, tfixup_embedding_scale,
                    tfixup_scale)


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int  # the source side's (or the joined dictionary's)
    d_model: int = TRAIN_DEFAULTS["d_model"]
    ffn_dim: int = TRAIN_DEFAULTS["ffn_dim"]
    heads: int = TRAIN_DEFAULTS["heads"]
    enc_layers: int = TRAIN_DEFAULTS["enc_layers"]
    dec_layers: int = TRAIN_DEFAULTS["dec_layers"]
    dropout: float = TRAIN_DEFAULTS["dropout"]
    attn_dropout: float = TRAIN_DEFAULTS["attn_dropout"]
    act_dropout: float = TRAIN_DEFAULTS["act_dropout"]
    enc_norm: str = TRAIN_DEFAULTS["enc_norm"]  # settings.MODEL_NORMS, chosen separately for encoder and decoder
    dec_norm: str = TRAIN_DEFAULTS["dec_norm"]
    # encoder embedding = decoder embedding = output projection
    share_all_embeddings: bool = TRAIN_DEFAULTS["share_all_embeddings"]
    max_positions: int = 1024
    fused_attention: bool = True  # F.scaled_dot_product_attention; False = the plain path below
    activation: str = "relu"  # of the FFN; BERT (lnrepro.core.bert) uses gelu
    init: str = TRAIN_DEFAULTS["init"]  # standard | looklinear (FixUp is a norm: it also removes the LayerNorms)
    # every normalization layer's function, whatever the placement (settings.NORM_FNS; lnrepro.core.norms)
    norm_fn: str = TRAIN_DEFAULTS["norm_fn"]
    # the target side's where the dictionaries are separate (lnrepro.core.data); 0: vocab_size's, joined
    tgt_vocab_size: int = 0

    @property
    def target_vocab_size(self):
        return self.tgt_vocab_size or self.vocab_size

    def __post_init__(self):
        if self.share_all_embeddings and self.tgt_vocab_size:
            raise ValueError("share_all_embeddings needs one joined dictionary (fairseq: --share-all-embeddings "
                             f"requires a joined dictionary), not a target vocabulary of its own ({self.tgt_vocab_size})")
        for side in ("enc_norm", "dec_norm"):
            if getattr(self, side) not in MODEL_NORMS:
                raise ValueError(f"{side}={getattr(self, side)!r}: expected one of {MODEL_NORMS}")
        refusal = norm_pair_refusal(self.enc_norm, self.dec_norm)
        if refusal == "admin":
            raise ValueError(f"enc_norm={self.enc_norm!r}, dec_norm={self.dec_norm!r}: Admin re-weights "
                             "Post-LN residuals; combine it with 'admin' or 'post' only")
        if refusal == "fixup":
            raise ValueError(f"enc_norm={self.enc_norm!r}, dec_norm={self.dec_norm!r}: FixUp rescales the "
                             "whole network's branches by its total branch count; set 'fixup' on both sides")
        if self.norm_fn not in NORM_FNS:
            raise ValueError(f"norm_fn={self.norm_fn!r}: expected one of {NORM_FNS}")
        refused = norm_fn_refusal(self.enc_norm, self.dec_norm, self.norm_fn)
        if refused:
            raise ValueError(refused)
        if self.activation not in ("relu", "gelu"):
            raise ValueError(f"activation={self.activation!r}: expected relu or gelu")
        if self.init not in INITS:
            raise ValueError(f"init={self.init!r}: expected one of {INITS}")
        if self.init == "looklinear":
            check_looklinear(self)
        if self.d_model % self.heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by heads={self.heads}")


def check_looklinear(cfg):
    """init looklinear mirrors the FFN's ReLU halves: ReLU, an even width, and LayerNorm's residuals."""
    if cfg.activation != "relu":
        raise ValueError(f"init='looklinear' needs activation 'relu' (its mirrored halves cancel through ReLU), "
                         f"not {cfg.activation!r}")
    if cfg.ffn_dim % 2:
        raise ValueError(f"init='looklinear' needs an even ffn_dim (two mirrored halves), not {cfg.ffn_dim}")
    for side in ("enc_norm", "dec_norm"):
        if getattr(cfg, side) in LOOKLINEAR_REFUSED_NORMS:
            raise ValueError(f"init='looklinear' with {side}={getattr(cfg, side)!r}: LookLinear is an "
                             "initialization of its own (Liu et al. §5.2 run it with Post-LN); use post or pre")


def sublayer_options(cfg, side):
    """ResidualSublayer's norm_fn and alpha for side 'encoder' or 'decoder'."""
    norm = cfg.enc_norm if side == "encoder" else cfg.dec_norm
    alpha = deepnorm_constants(side, cfg.enc_layers, cfg.dec_layers)[0] if norm == "deepnorm" else 1.0
    return {"norm_fn": cfg.norm_fn, "alpha": alpha}


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        fixup = cfg.enc_norm == "fixup"
        self.self_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attn_dropout, cfg.fused_attention, fixup)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.act_dropout, cfg.activation, fixup)
        options = sublayer_options(cfg, "encoder")
        self.attn_block = ResidualSublayer(cfg.d_model, cfg.enc_norm, cfg.dropout, **options)
        self.ffn_block = ResidualSublayer(cfg.d_model, cfg.enc_norm, cfg.dropout, **options)

    def forward(self, x, src_mask):
        x = self.attn_block(x, lambda h: self.self_attn(h, h, src_mask))
        return self.ffn_block(x, self.ffn)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        fixup = cfg.dec_norm == "fixup"
        self.self_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attn_dropout, cfg.fused_attention, fixup)
        self.cross_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attn_dropout, cfg.fused_attention, fixup)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.act_dropout, cfg.activation, fixup)
        options = sublayer_options(cfg, "decoder")
        self.self_block = ResidualSublayer(cfg.d_model, cfg.dec_norm, cfg.dropout, **options)
        self.cross_block = ResidualSublayer(cfg.d_model, cfg.dec_norm, cfg.dropout, **options)
        self.ffn_block = ResidualSublayer(cfg.d_model, cfg.dec_norm, cfg.dropout, **options)

    def forward(self, x, memory, self_mask, memory_mask, cache=None):
        self_cache = cross_cache = None
        if cache is not None:
            self_cache, cross_cache = cache.setdefault("self", {}), cache.setdefault("cross", {})
        x = self.self_block(x, lambda h: self.self_attn(h, h, self_mask, self_cache))
        x = self.cross_block(x, lambda h: self.cross_attn(h, memory, memory_mask, cross_cache, static_kv=True))
        return self.ffn_block(x, self.ffn)


def sinusoidal_table(num_positions, d_model):
    """fairseq's sinusoidal positions: [sin | cos] concatenated, row PAD is zero."""
    half = d_model // 2
    freqs = torch.exp(torch.arange(half, dtype=torch.float) * -(math.log(10000) / (half - 1)))
    angles = torch.arange(num_positions, dtype=torch.float)[:, None] * freqs[None, :]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    if d_model % 2:
        table = torch.cat([table, torch.zeros(num_positions, 1)], dim=1)
    table[PAD] = 0
    return table


class Embedder(nn.Module):
    """Token embedding scaled by sqrt(d) plus sinusoidal position, then dropout."""

    def __init__(self, tokens: nn.Embedding, cfg: ModelConfig):
        super().__init__()
        self.tokens, self.scale, self.dropout = tokens, math.sqrt(cfg.d_model), cfg.dropout
        # positions start at PAD + 1, as in fairseq
        self.register_buffer("positions", sinusoidal_table(cfg.max_positions + PAD + 1, cfg.d_model), persistent=False)

    def forward(self, tokens, start=0):
        pos = torch.arange(start, start + tokens.size(1), device=tokens.device) + PAD + 1
        x = self.scale * self.tokens(tokens) + self.positions[pos]
        return dropout(x, self.dropout, self.training)


def token_embedding(cfg, vocab_size):
    emb = nn.Embedding(vocab_size, cfg.d_model, padding_idx=PAD)
    nn.init.normal_(emb.weight, mean=0, std=cfg.d_model ** -0.5)
    nn.init.zeros_(emb.weight[PAD])
    return emb


def final_norm(cfg, norm):
    """A stack's last normalization: Pre-LN's and Sandwich-LN's final LN, ResiDual's LN of its second
    stream (eps 1e-7, lnrepro.core.norms.RESIDUAL_FINAL_LN_EPS); None for the others."""
    if norm in ("pre", "sandwich"):
        return make_norm(cfg.norm_fn, cfg.d_model)  # layernorm: nn.LayerNorm(d_model, eps=1e-5)
    if norm == "resi_dual":
        return make_norm(cfg.norm_fn, cfg.d_model, eps=RESIDUAL_FINAL_LN_EPS)
    return None


def two_streams(x, resi_dual):
    """ResiDual's streams (x^a, x^d) start both as the embedding output (resi_dual.py:107@8682f75)."""
    return (x, x) if resi_dual else x


def stack_output(x, final, resi_dual):
    """The stack's output: ResiDual's x^a + LN(x^d) (resi_dual.py:131@8682f75), else the final LN's."""
    if resi_dual:
        return x[0] + final(x[1])
    return x if final is None else final(x)


class Encoder(nn.Module):
    def __init__(self, cfg: ModelConfig, tokens: nn.Embedding):
        super().__init__()
        self.embed = Embedder(tokens, cfg)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.enc_layers))
        self.final_norm = final_norm(cfg, cfg.enc_norm)
        self.resi_dual = cfg.enc_norm == "resi_dual"

    def forward(self, src):
        mask = (src != PAD)[:, None, None, :]  # (B, 1, 1, S): attend to real tokens only
        x = two_streams(self.embed(src), self.resi_dual)
        for layer in self.layers:
            x = layer(x, mask)
        return stack_output(x, self.final_norm, self.resi_dual), mask  # Pre-LN's final LayerNorm (or a variant's)


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig, tokens: nn.Embedding):
        super().__init__()
        self.embed = Embedder(tokens, cfg)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.dec_layers))
        self.final_norm = final_norm(cfg, cfg.dec_norm)
        self.resi_dual = cfg.dec_norm == "resi_dual"
        self.output_weight = None  # None: the output projection is the token embedding (tied, as trained)

    def forward(self, prev_tokens, memory, memory_mask, cache=None):
        """Logits (B, T, V). With a cache (list of per-layer dicts), prev_tokens holds only the
        newest step and keys/values of earlier steps come from the cache."""
        start = 0
        if cache is not None and cache[0].get("self"):
            start = cache[0]["self"]["k"].size(2)
        T = prev_tokens.size(1)
        self_mask = None
        if cache is None or T > 1:  # causal: position t sees positions <= t
            self_mask = torch.ones(T, T, dtype=torch.bool, device=prev_tokens.device).tril()
        x = two_streams(self.embed(prev_tokens, start), self.resi_dual)
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, self_mask, memory_mask, None if cache is None else cache[i])
        x = stack_output(x, self.final_norm, self.resi_dual)
        return F.linear(x, self.embed.tokens.weight if self.output_weight is None else self.output_weight)


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        dec_tokens = token_embedding(cfg, cfg.target_vocab_size)
        enc_tokens = dec_tokens if cfg.share_all_embeddings else token_embedding(cfg, cfg.vocab_size)
        self.encoder = Encoder(cfg, enc_tokens)
        self.decoder = Decoder(cfg, dec_tokens)
        # re-initialized after fairseq's init, so the standard models draw the same numbers as before
        if cfg.enc_norm == "fixup":
            fixup_init(self)
        if cfg.init == "looklinear":
            for ffn in (m for m in self.modules() if isinstance(m, FeedForward)):
                looklinear_init(ffn)
        # the variants' inits scale the standard init in place: no random draws of their own
        for side, norm in (("encoder", cfg.enc_norm), ("decoder", cfg.dec_norm)):
            if norm == "deepnorm":
                deepnorm_init(getattr(self, side), deepnorm_constants(side, cfg.enc_layers, cfg.dec_layers)[1])
            elif norm == "tfixup":
                tfixup_init(self, side)

    def forward(self, src, prev_tokens):
        memory, memory_mask = self.encoder(src)
        return self.decoder(prev_tokens, memory, memory_mask)

    def residual_sublayers(self):
        """Sublayers in forward order, encoder then decoder (Admin's omega lives here)."""
        return [m for m in self.modules() if isinstance(m, ResidualSublayer)]


# ---- the initializations Liu et al. §5.2 compare Admin with ------------------------------------
def fixup_init(model):
    """FixUp (Zhang, Dauphin, Ma 2019, ICLR, §3), rules (1)-(2); rule (3)'s scalars are built by the
    modules (ResidualSublayer, MultiheadAttention, FeedForward) with their values at init.
    (1) the last layer of each residual branch is initialized to 0: attention's out_proj, the FFN's
        fc2. The paper's classification layer is 0 too; here it is the output projection, tied to
        the decoder embedding, so it is left as is (our reading: a zero embedding would feed the
        decoder zeros and get no gradient through it).
    (2) the other weight layers inside branches keep the standard init scaled by L^(-1/(2m-2)),
        L = residual branches of the network, m = weight layers per branch. Our reading: L counts
        the encoder's and the decoder's branches together (2 per encoder layer, 3 per decoder
        layer); m = 2 in every branch: attention's stacked q/k/v projection is one layer (its three
        parts act in parallel, not in series) before out_proj, the FFN is fc1 then fc2. So the
        scale is L^(-1/2), on attention's in_proj and the FFN's fc1. Embeddings are not in a branch.
    (3) a scalar multiplier (1) in every branch and a scalar bias (0) before each linear layer and
        element-wise activation. Our reading: the multiplier scales the branch output (before its
        dropout); the branch's first bias is added to the sublayer input, so self-attention's
        queries, keys and values all see it, cross-attention's encoder memory does not; then one
        before attention's out_proj, and before the FFN's ReLU and fc2. Softmax is not element-wise:
        no bias there. No bias after the multiplier (the rule does not ask for one)."""
    branches = model.residual_sublayers()
    scale = len(branches) ** (-1 / (2 * FIXUP_LAYERS_PER_BRANCH - 2))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, MultiheadAttention):
                m.in_proj.weight.mul_(scale)
                nn.init.zeros_(m.out_proj.weight)
            elif isinstance(m, FeedForward):
                m.fc1.weight.mul_(scale)
                nn.init.zeros_(m.fc2.weight)


FIXUP_LAYERS_PER_BRANCH = 2  # m of FixUp's rule (2); see fixup_init


# ---- the variants' initializations (lnrepro.core.norms has their constants and sources) ----------------------
def value_rows(attn):
    """W^V: the last third of attention's stacked [W^Q; W^K; W^V] (a view)."""
    return attn.in_proj.weight[2 * attn.out_proj.in_features:]


def branch_weights(stack):
    """Per stack: every attention's W^V (self and cross) and out_proj weight, every FFN's fc1 and fc2 weight:
    the weights DeepNorm and T-Fixup scale (torchscale's "fc1", "fc2", "out_proj", "v_proj",
    encoder.py:245-252@4d1e0e8; T-Fixup's, transformer_layer.py:36-44, 161-170@b17e166). Returns
    (value_rows, other_weights). Biases are 0 at init (torchscale scales them too: no difference)."""
    values, others = [], []
    for m in stack.modules():
        if isinstance(m, MultiheadAttention):
            values.append(value_rows(m))
            others.append(m.out_proj.weight)
        elif isinstance(m, FeedForward):
            others += [m.fc1.weight, m.fc2.weight]
    return values, others


@torch.no_grad()
def deepnorm_init(stack, beta):
    """DeepNet: the value and output projections and the FFN weights of the stack's branches scaled by beta,
    after the standard init (torchscale divides its init by 1/beta likewise). Our reading: beta multiplies
    this model's fairseq init, whose W^V (stacked xavier over 3d x d) has torchscale's gain 1/sqrt(2)
    (multihead_attention.py:63@4d1e0e8); the paper's pseudo-code draws xavier_normal_(gain=beta) instead."""
    values, others = branch_weights(stack)
    for w in values + others:
        w.mul_(beta)


@torch.no_grad()
def tfixup_init(model, side):
    """T-Fixup for one stack (lnrepro.core.norms: constants and sources): its W^V scaled by
    scale * sqrt(2) (sqrt(2): plain Xavier, as T-Fixup's code), out_proj, fc1, fc2 by scale, its token
    embedding by (9 * depth)^(-1/4). A token embedding shared by both stacks (share_all_embeddings) is
    scaled once, by the encoder's factor where the encoder is T-Fixup (T-Fixup's code), else by the
    decoder's (our reading for a hybrid). The decoder's token embedding is also the output projection,
    as in T-Fixup's IWSLT run (--share-decoder-input-output-embed)."""
    cfg = model.cfg
    scale = tfixup_scale(side, cfg.enc_layers, cfg.dec_layers)
    values, others = branch_weights(getattr(model, side))
    for w in values:
        w.mul_(scale * TFIXUP_V_GAIN)
    for w in others:
        w.mul_(scale)
    if side == "decoder" and cfg.share_all_embeddings and cfg.enc_norm == "tfixup":
        return  # scaled once, as the encoder's
    getattr(model, side).embed.tokens.weight.mul_(tfixup_embedding_scale(side, cfg.enc_layers, cfg.dec_layers))


def looklinear_init(ffn):
    """LookLinear (Balduzzi et al. 2017, ICML, §5 "looks linear" initialization) for a ReLU FFN:
    W1 = [V; -V], W2 = [U, -U], V and U (semi-)orthogonal, biases 0. Since ReLU(z) - ReLU(-z) = z,
    W2 ReLU(W1 x) = U ReLU(Vx) - U ReLU(-Vx) = U V x: the FFN is linear at initialization and the
    gradients do not shatter. Our reading: only the FFN holds a ReLU, so attention and embeddings
    keep the standard init; V and U are orthogonal with gain 1."""
    half = ffn.fc1.out_features // 2
    v = nn.init.orthogonal_(torch.empty(half, ffn.fc1.in_features))
    u = nn.init.orthogonal_(torch.empty(ffn.fc2.out_features, half))
    with torch.no_grad():
        ffn.fc1.weight.copy_(torch.cat([v, -v], dim=0))
        ffn.fc2.weight.copy_(torch.cat([u, -u], dim=1))
        ffn.fc1.bias.zero_()
        ffn.fc2.bias.zero_()


def label_smoothed_loss(logits, target, epsilon):
    """fairseq <= 0.10: (1-eps)*nll + (eps/V)*sum_v(-log p_v), pad masked, summed over tokens.
    Returns (loss_sum, nll_sum) in nats."""
    lprobs = F.log_softmax(logits.float(), dim=-1)
    keep = target != PAD
    nll = -lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    smooth = -lprobs.sum(-1)
    loss = (1 - epsilon) * nll + (epsilon / lprobs.size(-1)) * smooth
    return loss[keep].sum(), nll[keep].sum()
