"""The Transformer's building blocks: attention, the feed-forward network and the residual sublayer
where the normalization schemes differ (Xiong et al. 2020 Table 1, Liu et al. 2020 §4.3, and the
variants of lnrepro.core.norms), with the CPU dropout they share. They take their sizes, not a model's
config: lnrepro.core.model assembles them into encoder and decoder layers, and lnrepro.core.bert too.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..settings import VARIANT_NORMS
from .norms import make_norm


def dropout(x, p, training):
    """F.dropout, with the CPU mask drawn from 15 random bits per element, four elements per random
    64-bit word: CPU bernoulli_ draws one double per element and took 13% of a d=64 training step.
    p is rounded to 1/32768 and the scale uses the rounded value, so E[output] = x exactly.
    On GPU F.dropout's fused kernel is used as is."""
    if not training or p == 0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    n, drop = x.numel(), round(p * 32768)
    words = torch.empty((n + 3) // 4, dtype=torch.int64).random_()  # 63 random bits each
    bits = words.view(torch.int16)[:n].view(x.shape) & 0x7FFF
    return x * (bits >= drop).to(x.dtype).mul_(32768 / (32768 - drop))


def scalar(value):
    """FixUp's scalar multiplier (1) or bias (0): one learned number."""
    return nn.Parameter(torch.full((1,), float(value)))


def xavier_linear(d_in, d_out, gain=1.0):
    """fairseq's Linear: xavier_uniform weight, zero bias."""
    layer = nn.Linear(d_in, d_out)
    nn.init.xavier_uniform_(layer.weight, gain=gain)
    nn.init.zeros_(layer.bias)
    return layer


class MultiheadAttention(nn.Module):
    def __init__(self, d_model, heads, attn_dropout, fused, fixup=False):
        super().__init__()
        self.heads, self.attn_dropout, self.fused = heads, attn_dropout, fused
        self.out_bias = scalar(0) if fixup else None  # FixUp rule 3: before the output projection
        # fairseq's (papers' era) stacked in_proj: rows [W^Q; W^K; W^V], xavier over the whole (3d x d)
        # matrix; self-attention projects q, k, v in one matmul, cross-attention q and k, v in two
        self.in_proj = xavier_linear(d_model, 3 * d_model)
        self.out_proj = xavier_linear(d_model, d_model)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # checkpoints written before the stacked in_proj hold separate q/k/v projections
        if prefix + "q_proj.weight" in state_dict:
            for part in ("weight", "bias"):
                state_dict[f"{prefix}in_proj.{part}"] = torch.cat([state_dict.pop(f"{prefix}{n}_proj.{part}") for n in "qkv"])
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def split_heads(self, x):  # (B, T, d) -> (B, H, T, d/H)
        B, T, d = x.shape
        return x.view(B, T, self.heads, d // self.heads).transpose(1, 2)

    def project(self, query, key_value):
        """q, k, v heads: self-attention in one matmul; cross-attention q from the query and k, v
        from key_value (None: the encoder's keys/values are cached, only q is computed)."""
        d, w, b = query.size(-1), self.in_proj.weight, self.in_proj.bias
        if key_value is query:
            return tuple(map(self.split_heads, F.linear(query, w, b).chunk(3, dim=-1)))
        q = self.split_heads(F.linear(query, w[:d], b[:d]))
        if key_value is None:
            return q, None, None
        k, v = F.linear(key_value, w[d:], b[d:]).chunk(2, dim=-1)
        return q, self.split_heads(k), self.split_heads(v)

    def forward(self, query, key_value, mask=None, cache=None, static_kv=False):
        """mask: bool (B or 1, 1, Tq, Tk), True = may attend. cache: dict for incremental decoding;
        static_kv: keys/values come from the encoder and are computed once."""
        reuse = cache is not None and static_kv and "k" in cache
        q, k, v = self.project(query, None if reuse else key_value)
        if reuse:
            k, v = cache["k"], cache["v"]
        elif cache is not None:
            if static_kv:  # head views of the projection are strided: each step's matmul would copy them
                k, v = k.contiguous(), v.contiguous()
            elif "k" in cache:  # self-attention grows by one step
                k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        p = self.attn_dropout if self.training else 0.0
        if self.fused and q.size(2) > 1:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        else:  # also for one query (a decoding step): two matmuls beat SDPA's kernel there (CPU: ~1.8x)
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, Tq, Tk)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            out = dropout(scores.softmax(-1), p, self.training) @ v
        B, H, T, dh = out.shape
        out = out.transpose(1, 2).reshape(B, T, H * dh)
        return self.out_proj(out if self.out_bias is None else out + self.out_bias)


class FeedForward(nn.Module):
    def __init__(self, d_model, ffn_dim, act_dropout, activation="relu", fixup=False):
        super().__init__()
        self.fc1 = xavier_linear(d_model, ffn_dim)  # W^1 in the paper
        self.fc2 = xavier_linear(ffn_dim, d_model)  # W^2
        self.act_dropout = act_dropout
        self.activation = {"relu": F.relu, "gelu": F.gelu}[activation]
        # FixUp rule 3: scalar biases before the activation and before fc2 (the one before fc1 is
        # the residual sublayer's, before the branch)
        self.act_bias, self.out_bias = (scalar(0), scalar(0)) if fixup else (None, None)

    def forward(self, x):
        if self.act_bias is None:
            return self.fc2(dropout(self.activation(self.fc1(x)), self.act_dropout, self.training))
        h = dropout(self.activation(self.fc1(x) + self.act_bias), self.act_dropout, self.training)
        return self.fc2(h + self.out_bias)


class ResidualSublayer(nn.Module):
    """The one place where the norm placements differ. norm_fn: the normalization layers' function
    (lnrepro.core.norms.make_norm); alpha: DeepNorm's residual weight (lnrepro.core.norms.deepnorm_constants)."""

    def __init__(self, d_model, norm, dropout, norm_fn="layernorm", alpha=1.0):
        super().__init__()
        self.norm, self.dropout = norm, dropout
        if norm == "fixup":  # no LayerNorm (Liu et al. §5.2: "FixUp (without using layer normalization)")
            # FixUp rule 3: the branch's scalar multiplier, and the scalar bias before its first layer
            self.multiplier, self.in_bias = scalar(1), scalar(0)
            return
        if norm == "tfixup":  # no LayerNorm, no scalars: T-Fixup is its init (tfixup_init)
            return
        self.layer_norm = make_norm(norm_fn, d_model)  # layernorm: nn.LayerNorm(d_model, eps=1e-5)
        if norm == "admin":
            # omega, set from the profiling pass (Liu et al. §4.3); 1 = plain Post-LN
            self.omega = nn.Parameter(torch.ones(d_model))
            self.profiler = None  # during Admin's profiling pass: its side's running ratio (lnrepro.core.admin)
        elif norm == "sandwich":  # the LN on the branch's output
            self.out_norm = make_norm(norm_fn, d_model)
        elif norm == "deepnorm":
            self.alpha = alpha

    def forward(self, x, fn):
        if self.norm == "post":  # Xiong et al. Table 1: x_{l+1} = LN(x_l + F(x_l))
            return self.layer_norm(x + dropout(fn(x), self.dropout, self.training))
        if self.norm == "pre":  # Xiong et al. Table 1: x_{l+1} = x_l + F(LN(x_l))
            return x + dropout(fn(self.layer_norm(x)), self.dropout, self.training)
        if self.norm == "fixup":  # x_{l+1} = x_l + multiplier * F(x_l + bias), no normalization
            return x + dropout(self.multiplier * fn(x + self.in_bias), self.dropout, self.training)
        if self.norm in VARIANT_NORMS:
            return self.variant(x, fn)
        # admin, Liu et al. eq. (5): x_i = LN(f_i(x_{i-1}) + omega_i * x_{i-1})
        branch = dropout(fn(x), self.dropout, self.training)
        if self.profiler is not None:  # profiling: omega is set here, from the sublayers below, before its use
            self.profiler.set_omega(self, x, branch)
        return self.layer_norm(branch + self.omega * x)

    def variant(self, x, fn):
        """The placements of lnrepro.core.norms; dropout on the branch's output, as above."""
        # DeepNet: x_{l+1} = LN(alpha * x_l + G(x_l)) (torchscale encoder.py:114, 142-143@4d1e0e8)
        if self.norm == "deepnorm":
            return self.layer_norm(self.alpha * x + dropout(fn(x), self.dropout, self.training))
        if self.norm == "sandwich":  # x_{l+1} = x_l + LN_out(G(LN_in(x_l))); our reading: dropout after LN_out
            return x + dropout(self.out_norm(fn(self.layer_norm(x))), self.dropout, self.training)
        if self.norm == "tfixup":  # x_{l+1} = x_l + G(x_l), no normalization
            return x + dropout(fn(x), self.dropout, self.training)
        # resi_dual: x = (x^a, x^d); the branch reads x^a and, after its dropout, updates both streams
        # (ResiDual resi_dual_layers.py:35-39@8682f75): x^a <- LN(x^a + G(x^a)), x^d <- x^d + G(x^a)
        xa, xd = x
        branch = dropout(fn(xa), self.dropout, self.training)
        return self.layer_norm(xa + branch), xd + branch
