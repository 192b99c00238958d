"""The normalization variants beyond Post-LN, Pre-LN, Admin and FixUp (issue 45): their constants, each
with the paper's formula and the line of the authors' code it is read from, and the normalization
functions that replace LayerNorm. The residual sublayers that use them are lnrepro.core.layers'.

Reference code read (snapshots by commit; "file:line@commit" below):
  torchscale   github.com/microsoft/torchscale         4d1e0e82e5adf86dd424f1463192635b73fc8efc (DeepNorm)
  T-Fixup      github.com/layer6ai-labs/T-Fixup        b17e166d9f60671a92c3f39e24c9b8c93995e5a3
  DyT          github.com/jiachenzhu/DyT               aab5dde0bc1bdd4410f687dad404c87b31808f90
  RMSNorm      github.com/bzhangGo/rmsnorm             2e726f1a3f106bb719056422f4f9b6aca03d3ce6
  ResiDual     github.com/microsoft/ResiDual           8682f7510be105a0caf5b98a021e712f44f90ace

The placements (settings.VARIANT_NORMS, chosen per side as --enc-norm/--dec-norm are):
  deepnorm   Wang et al. 2022 (DeepNet): x_{l+1} = LN(alpha * x_l + G(x_l)), and G's value and output
             projections and FFN weights initialized scaled by beta (deepnorm_constants)
  sandwich   the per-sublayer form Sandwich-LN (Ding et al. 2021, CogView) and Peri-LN (Kim et al. 2025) share:
             x_{l+1} = x_l + LN_out(G(LN_in(x_l))), with Pre-LN's final LN (no LN on the embedding output;
             dropout after LN_out, before the addition, is our reading: neither paper places it)
  tfixup     Huang et al. 2020 (T-Fixup): x_{l+1} = x_l + G(x_l), no LN anywhere, scaled init (tfixup_*)
  resi_dual  Xie et al. 2023 (ResiDual): two streams, x^a_{l+1} = LN(x^a_l + G(x^a_l)) (Post-LN) and
             x^d_{l+1} = x^d_l + G(x^a_l) (Pre-LN-like, un-normalized), output x^a + LN(x^d)
The normalization function (ModelConfig.norm_fn, settings.NORM_FNS), whatever the placement:
  layernorm  nn.LayerNorm, eps 1e-5 (fairseq's; every existing model)
  rmsnorm    Zhang & Sennrich 2019: x / (RMS(x) + eps) * g (RMSNorm)
  dyt        Zhu et al. 2025: gamma * tanh(alpha * x) + beta (DynamicTanh), in place of every LN

Why ResiDual rather than B2T (Takase et al. 2023): ResiDual's two streams are updated by every residual
sublayer (resi_dual_layers.py:35-51@8682f75), so it is a residual-sublayer variant like the others and can be
chosen per side; B2T's bottom-to-top connection skips a whole layer (its last LN adds the layer's
input), a change to the layers rather than the sublayer. ResiDual's reference code is also fairseq's
encoder-decoder on IWSLT'14 (hydra_config/iwslt.yaml@8682f75), this pipeline's setting.
"""
import math

import torch
import torch.nn as nn

LN_EPS = 1e-5  # this model's (fairseq's) LayerNorm eps; torchscale's layernorm_eps too (config.py:43@4d1e0e8)

# ---- DeepNorm (Wang et al. 2022, DeepNet: its alpha/beta for an encoder-decoder) --------------------------------
# paper:      encoder alpha = 0.81 (N^4 M)^(1/16), beta = 0.87 (N^4 M)^(-1/16)
#             decoder alpha = (3M)^(1/4),           beta = (12M)^(-1/4)
# torchscale: encoder alpha = pow(pow(N, 4) * M, 0.0625) * 0.81                 (encoder.py:80-85@4d1e0e8)
#             encoder init_scale = pow(pow(N, 4) * M, 0.0625) / 1.15, and the weights are *divided* by it
#             (encoder.py:237-242, 252@4d1e0e8): beta = 1.15 (N^4 M)^(-1/16), not the paper's 0.87
#             (0.87 ~ 1/1.15: it reads as the paper's factor applied inverted)
#             decoder alpha = pow(3M, 0.25) (decoder.py:91@4d1e0e8), init_scale = pow(12M, 0.25), divided
#             (decoder.py:288, 298@4d1e0e8): the paper's
# PICKED: the paper's encoder beta (DEEPNORM_BETA_SOURCE); deepnorm_constants(..., source="torchscale")
# gives the code's, and the tests check both against their formulas.
DEEPNORM_BETA_SOURCE = "paper"
DEEPNORM_ENC_ALPHA_COEF = 0.81  # paper; encoder.py:84@4d1e0e8
DEEPNORM_ENC_BETA_COEF = {"paper": 0.87, "torchscale": 1.15}  # torchscale: encoder.py:241@4d1e0e8 (divided by)


def deepnorm_constants(side, enc_layers, dec_layers, source=DEEPNORM_BETA_SOURCE):
    """(alpha, beta) of DeepNorm for side 'encoder' or 'decoder' of an N-layer encoder, M-layer decoder.
    Our reading for a hybrid (DeepNorm on one side only): the model is still an encoder-decoder, so the
    encoder-decoder formulas hold (torchscale's is_encoder_decoder branch); the decoder's depend on M
    only, the encoder's on both (its output feeds every decoder layer's cross-attention)."""
    n, m = enc_layers, dec_layers
    if side == "encoder":
        base = (n ** 4 * m) ** (1 / 16)
        return DEEPNORM_ENC_ALPHA_COEF * base, DEEPNORM_ENC_BETA_COEF[source] / base
    if side == "decoder":
        return (3 * m) ** (1 / 4), (12 * m) ** (-1 / 4)
    raise ValueError(f"side={side!r}: expected 'encoder' or 'decoder'")


# ---- T-Fixup (Huang, Perez, Ba, Volkovs 2020, ICML: its initialization procedure) ------------------------------
# paper: Xavier for all weights, N(0, d^-1/2) embeddings; scale the decoder attention's v_d, w_d, the
#   decoder MLP weights and the input embeddings x, y by (9N)^(-1/4); the encoder attention's v_e, w_e
#   and encoder MLP weights by 0.67 N^(-1/4). The paper has one depth N (its stacks are equally deep).
# code:  encoder v_proj, out_proj, fc1, fc2 * 0.67 * encoder_layers^(-1/4) (transformer_layer.py:36-44@b17e166),
#   decoder self/encoder attention v_proj, out_proj, fc1, fc2 * (9 * decoder_layers)^(-1/4)
#   (transformer_layer.py:161-170@b17e166); v_proj also * sqrt(2) (lines 44, 170), undoing fairseq's
#   xavier gain 1/sqrt(2) on q/k/v (multihead_attention.py:86-91@b17e166): v gets the paper's plain Xavier.
#   Encoder embedding * (9 * encoder_layers)^(-1/4) (models/transformer.py:378-381@b17e166), decoder
#   embedding * (9 * decoder_layers)^(-1/4) unless all embeddings are shared (transformer.py:604-607): a
#   shared embedding is scaled once, by the encoder's factor.
# PICKED: the code's per-stack depths (N = encoder layers, M = decoder layers); for N = M it is the paper's.
# This model's attention stacks [W^Q; W^K; W^V] under one xavier over (3d x d) (layers.MultiheadAttention):
# the V rows' bound sqrt(6 / 4d) is fairseq's gain 1/sqrt(2), so the same sqrt(2) applies.
TFIXUP_ENC_COEF = 0.67  # transformer_layer.py:42@b17e166
TFIXUP_DEC_DEPTH_FACTOR = 9  # transformer_layer.py:168@b17e166; embeddings: models/transformer.py:380, 606
TFIXUP_V_GAIN = math.sqrt(2)  # transformer_layer.py:44, 170@b17e166


def tfixup_scale(side, enc_layers, dec_layers):
    """The factor on the side's attention value/output projections and FFN weights."""
    if side == "encoder":
        return TFIXUP_ENC_COEF * enc_layers ** (-1 / 4)
    if side == "decoder":
        return (TFIXUP_DEC_DEPTH_FACTOR * dec_layers) ** (-1 / 4)
    raise ValueError(f"side={side!r}: expected 'encoder' or 'decoder'")


def tfixup_embedding_scale(side, enc_layers, dec_layers):
    """The factor on the side's token embedding: (9 * its stack's depth)^(-1/4) (the code's)."""
    return (TFIXUP_DEC_DEPTH_FACTOR * (enc_layers if side == "encoder" else dec_layers)) ** (-1 / 4)


# ---- ResiDual (Xie et al. 2023) --------------------------------------------------------------------------------
# The un-normalized stream starts as the embedding output times enc/dec_res_input_norm_scale = 1.0
# (resi_dual.py:107, 252, defaults 299-300@8682f75; the paper: x^d_1 = x^a_1 = x); each sublayer adds its
# branch after dropout to it, times the same scale (resi_dual_layers.py:35-39, 47-51, 134-136, 162-164,
# 175-177@8682f75: 1.0 at its default, so not a parameter here); the output
# is x^a * enc/dec_alpha (= 1.0, resi_dual.py:296-297) + LN(x^d) (resi_dual.py:131, 283), that LN's eps 1e-7
# (resi_dual.py:24, 157@8682f75) where the sublayers' LNs keep fairseq's 1e-5.
RESIDUAL_FINAL_LN_EPS = 1e-7

# ---- RMSNorm (Zhang & Sennrich 2019, NeurIPS) ------------------------------------------------------------------
# paper: a_i / RMS(a) * g_i, RMS(a) = sqrt(mean(a^2)); code: x / (||x||_2 * d^(-1/2) + eps), eps = 1e-8, g = 1
# at init, no bias (rmsnorm_torch.py:13, 29, 38-53@2e726f1). The code's eps (outside the square root) is
# used; torch.nn.RMSNorm puts it inside.
RMSNORM_EPS = 1e-8

# ---- DyT (Zhu, Chen, He, LeCun, Liu 2025, CVPR) -----------------------------------------------------------------
# DyT(x) = gamma * tanh(alpha * x) + beta; alpha a learned scalar, alpha_init_value=0.5 by default, gamma
# ones, beta zeros (dynamic_tanh.py:7, 13-15, 17-23@aab5dde); convert_ln_to_dyt replaces every LayerNorm
# (dynamic_tanh.py:29-36). The paper's LLaMA runs set other alpha inits (other_tasks/LLaMA/README.md:61-63);
# 0.5 is the default of its non-LLM models, ours.
DYT_ALPHA_INIT = 0.5


class RMSNorm(nn.Module):
    def __init__(self, d, eps=RMSNORM_EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))  # g

    def forward(self, x):
        h = x.to(torch.promote_types(x.dtype, torch.float32))  # fp16/bf16: in fp32 (x^2 overflows fp16), as LN is
        rms = h.pow(2).mean(-1, keepdim=True).sqrt()
        return (h / (rms + self.eps)).to(x.dtype) * self.weight


class DynamicTanh(nn.Module):
    def __init__(self, d, alpha_init=DYT_ALPHA_INIT):
        super().__init__()
        self.alpha = nn.Parameter(torch.full((1,), float(alpha_init)))
        self.weight = nn.Parameter(torch.ones(d))  # gamma
        self.bias = nn.Parameter(torch.zeros(d))  # beta

    def forward(self, x):
        return torch.tanh(self.alpha * x) * self.weight + self.bias


def make_norm(norm_fn, d, eps=LN_EPS):
    """The normalization layer of norm_fn; eps is LayerNorm's (RMSNorm keeps its code's, DyT has none)."""
    if norm_fn == "layernorm":
        return nn.LayerNorm(d, eps=eps)
    if norm_fn == "rmsnorm":
        return RMSNorm(d)
    if norm_fn == "dyt":
        return DynamicTanh(d)
    raise ValueError(f"norm_fn={norm_fn!r}")
