"""Admin initialization (Liu et al. 2020 §4.3): omega per sublayer from one profiling pass, run as
the authors' code runs it (Transformer-Clinic, `--init-type adaptive-profiling`).

One forward pass in train mode (dropout on) over the first training batch. Each side keeps its own
running ratio r, starting at 1. At every Admin sublayer i, in forward order, the pass first sets
omega_i = r, then computes LN(f_i(x_i) + omega_i * x_i) with it and updates
r = sqrt(Var(omega_i * x_i) + Var(f_i(x_i))), f_i(x_i) taken after its dropout, Var the population
variance of the whole tensor (padding included). So every later sublayer sees inputs produced with
the earlier omegas, and the decoder's encoder-attention sees the encoder output computed with its
omegas (the encoder runs first). The model and batch are exactly those training starts from
(lnrepro.training.admin_profile); the result is a file the training rule takes as input.

Transformer-Clinic (github.com/LiyuanLucasLiu/Transformer-Clinic, fairseq/fairseq/modules/
transformer_layer.py at HEAD 70f72b7): module globals encoder_ratio / decoder_ratio = 1.0 (lines
18-19); the profiling branch runs only in train mode while omega is still 1 (161, 519); encoder
self-attention 186-196, FFN 252-261; decoder self-attention 561-571, encoder-attention 611-620,
FFN 645-654: write the ratio, fill omega with it, np.var of residual * omega and of the branch
output after F.dropout, ratio = sqrt of their sum. fairseq/fairseq/tasks/fairseq_task.py 260-266:
the profiling run exits after its first train step (one batch). Each omega is a line
"index ratio" of profile.ratio.init, encoder then decoder, read back in order by
`--init-type adaptive` when the layers are built (transformer_layer.py 63-78, 386-408). The same
logic since the first commit (a302132, 2020-04-20: there the ratio is divided and multiplied by
index ** --adaptive-scale, whose default 0 makes that 1; removed in 91336b0).
The paper's own words ("initializing omega as 1" for profiling) read as a pass with omega = 1
throughout; this module's earlier version did that, which gives larger omegas at the top.
"""
import dataclasses
import json
import math
from pathlib import Path

import torch
import torch.nn as nn

from ..settings import ADMIN_PROFILE_METHOD
from .layers import ResidualSublayer
from .model import Transformer

# written into omega.json; a file without it (or with another) is refused by load_omegas
METHOD = ADMIN_PROFILE_METHOD


def admin_sublayers(module):
    return [m for m in module.modules() if isinstance(m, ResidualSublayer) and m.norm == "admin"]


def variance(t):
    """np.var of the whole tensor, as the authors take it (population variance); in float64."""
    return t.double().var(correction=0).item()


class RunningRatio:
    """One side's running ratio r (Transformer-Clinic's encoder_ratio / decoder_ratio)."""

    def __init__(self):
        self.ratio, self.omegas = 1.0, []

    def set_omega(self, sublayer, x, branch):
        """Called by an Admin sublayer after its branch, before it adds the residual."""
        sublayer.omega.fill_(self.ratio)
        self.omegas.append(self.ratio)
        self.ratio = math.sqrt(variance(x * sublayer.omega) + variance(branch))


@torch.no_grad()
def profile(model: Transformer, src, prev):
    """{'method', 'encoder': [...], 'decoder': [...]}: omega per Admin sublayer, each already set in
    the model by the one forward pass that measured it."""
    sides = {side: admin_sublayers(getattr(model, side)) for side in ("encoder", "decoder")}
    ratios = {side: RunningRatio() for side in sides}
    for side, subs in sides.items():
        for s in subs:
            s.profiler = ratios[side]
    model.train()  # dropout on, as in the authors' profiling step
    try:
        model(src, prev)
    finally:
        for subs in sides.values():
            for s in subs:
                s.profiler = None
    return {"method": METHOD, **{side: r.omegas for side, r in ratios.items()}}


def set_omegas(model: Transformer, omegas, source="omegas"):
    """Set every Admin sublayer's omega (a d-vector) to its profiled scalar."""
    for side in ("encoder", "decoder"):
        subs = admin_sublayers(getattr(model, side))
        if len(subs) != len(omegas[side]):
            raise ValueError(f"{source}: {len(omegas[side])} {side} omegas for {len(subs)} Admin sublayers")
        for s, w in zip(subs, omegas[side]):
            s.omega.data.fill_(w)


def load_omegas(model: Transformer, path):
    omegas = json.loads(Path(path).read_text())
    if omegas.get("method") != METHOD:
        raise ValueError(f"{path}: omegas of profiling method {omegas.get('method', 'omega = 1 throughout (unnamed)')!r}, "
                         f"this version uses {METHOD!r}: rerun `lnrepro admin-profile` (Snakemake reruns it)")
    set_omegas(model, omegas, path)


# ---- §4.3: "After training finishes, Admin can be reparameterized as the conventional PostLN" ----
def branch_inputs(layer):
    """The weights that read each residual sublayer's input x, in the sublayers' order: the attention's
    q/k/v projection (cross-attention: q only; k, v read the encoder output) and the FFN's W^1."""
    d = layer.ffn.fc1.in_features
    if hasattr(layer, "cross_attn"):
        return [layer.self_attn.in_proj.weight, layer.cross_attn.in_proj.weight[:d], layer.ffn.fc1.weight]
    return [layer.self_attn.in_proj.weight, layer.ffn.fc1.weight]


@torch.no_grad()
def as_post_ln(model: Transformer) -> Transformer:
    """A Post-LN Transformer computing what the Admin model computes, omega folded into the weights.

    Sublayer i computes LN_i(f_i(x) + omega_i * x). With x' = omega_i * x it is LN_i(f'_i(x') + x'), a
    Post-LN sublayer, where f'_i reads x' / omega_i: its input weights' columns divided by omega_i. x'
    itself is made by what produced x, scaled by omega_i: the LayerNorm below (gain and bias) or, for a
    stack's first sublayer, the embeddings (token vectors and the position table). So the embeddings are
    no longer shared: the decoder's output projection keeps the trained token vectors (the authors'
    advice, Transformer-Clinic issue #5: "the embedding weight needs to be re-scaled accordingly (and
    weight sharing needs to be stopped)"). Rescaling the fixed sinusoidal table is our reading."""
    cfg = model.cfg
    if (cfg.enc_norm, cfg.dec_norm) != ("admin", "admin"):
        raise ValueError(f"as_post_ln: an Admin model (admin/admin), not {cfg.enc_norm}/{cfg.dec_norm}")
    post = Transformer(dataclasses.replace(cfg, enc_norm="post", dec_norm="post", share_all_embeddings=False))
    post.load_state_dict({k: v for k, v in model.state_dict().items() if not k.endswith(".omega")})
    post.decoder.output_weight = nn.Parameter(model.decoder.embed.tokens.weight.clone())
    for side in ("encoder", "decoder"):
        stack = getattr(post, side)
        omegas = [s.omega for s in admin_sublayers(getattr(model, side))]
        sublayers = [s for s in stack.modules() if isinstance(s, ResidualSublayer)]
        readers = [w for layer in stack.layers for w in branch_inputs(layer)]
        for i, (omega, reader) in enumerate(zip(omegas, readers, strict=True)):
            if i == 0:
                stack.embed.tokens.weight.mul_(omega)
                stack.embed.positions.mul_(omega)
            else:
                sublayers[i - 1].layer_norm.weight.mul_(omega)
                sublayers[i - 1].layer_norm.bias.mul_(omega)
            reader.div_(omega)
    return post
