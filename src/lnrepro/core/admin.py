"""Admin initialization (Liu et al. 2020 §4.3): omega per sublayer from one profiling pass.

With omega = 1 (plain Post-LN) and dropout on, one forward pass over the first training batch
records, for every Admin sublayer i in forward order, Var(x_i) of its input and Var(f_i(x_i)) of
its residual branch (one scalar over the whole tensor). Encoder and decoder accumulate separately:
r_1 = 1, omega_i = r_i, r_{i+1} = sqrt(Var(x_i * r_i) + Var(f_i(x_i))), so omega_i grows with
the variance the earlier branches add. The model and batch are exactly those training starts from
(same seed; lnrepro.training.admin_profile), and the result is a file the training rule takes
as input.
"""
import json
import math
from pathlib import Path

import torch

from .model import ResidualSublayer, Transformer


def admin_sublayers(module):
    return [m for m in module.modules() if isinstance(m, ResidualSublayer) and m.norm == "admin"]


def omegas_from_profile(records):
    """[(Var(x_i), Var(f_i)), ...] in forward order -> [omega_i, ...] (the running ratio r_i)."""
    r, omegas = 1.0, []
    for var_x, var_f in records:
        omegas.append(r)
        r = math.sqrt(var_x * r * r + var_f)
    return omegas


@torch.no_grad()
def profile(model: Transformer, src, prev):
    """{'encoder': [...], 'decoder': [...]} omega per Admin sublayer, from one forward pass."""
    sides = {"encoder": admin_sublayers(model.encoder), "decoder": admin_sublayers(model.decoder)}
    for subs in sides.values():
        for s in subs:
            s.profile = []
    model.train()  # dropout on, as in the reference profiling
    model(src, prev)
    result = {side: omegas_from_profile([s.profile[0] for s in subs]) for side, subs in sides.items()}
    for subs in sides.values():
        for s in subs:
            s.profile = None
    return result


def set_omegas(model: Transformer, omegas, source="omegas"):
    """Set every Admin sublayer's omega (a d-vector) to its profiled scalar."""
    for side in ("encoder", "decoder"):
        subs = admin_sublayers(getattr(model, side))
        if len(subs) != len(omegas[side]):
            raise ValueError(f"{source}: {len(omegas[side])} {side} omegas for {len(subs)} Admin sublayers")
        for s, w in zip(subs, omegas[side]):
            s.omega.data.fill_(w)


def load_omegas(model: Transformer, path):
    set_omegas(model, json.loads(Path(path).read_text()), path)
