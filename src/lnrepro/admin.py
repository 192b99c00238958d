"""Admin initialization (Liu et al. 2020 §4.3): profile one training batch, write omega.

With omega = 1 (plain Post-LN) and dropout on, one forward pass over the first training batch
records, for every Admin sublayer i in forward order, Var(x_i) of its input and Var(f_i(x_i)) of
its residual branch (one scalar over the whole tensor). Encoder and decoder accumulate separately:
r_1 = 1, omega_i = r_i, r_{i+1} = sqrt(Var(x_i * r_i) + Var(f_i(x_i))), so omega_i grows with
the variance the earlier branches add. The model and batch are exactly those training starts from
(same seed), and the result is a file the training rule takes as input.
"""
import json
import math
import os
from dataclasses import fields
from pathlib import Path

import torch

from .core.batching import collate, epoch_order, make_batches
from .core.data import Dictionary, ParallelData
from .core.model import ResidualSublayer, Transformer
from .train import TrainConfig, add_arguments as add_train_arguments, dropout_seed


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


def add_arguments(p):
    add_train_arguments(p)  # the run's own settings: same model, seed and first batch as training
    p.add_argument("--omega-out", required=True, help="omega.json (--out, required by the shared flags, is unused)")


def run(args):
    cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig) if f.name != "admin_omega"})
    data_dir = Path(args.data)
    vocab = Dictionary.load(data_dir / "dict.txt")
    data = ParallelData.load(data_dir / "train.pt")
    first = epoch_order(make_batches(data, cfg.max_tokens, cfg.seed), cfg.seed, 1)[0]
    torch.manual_seed(cfg.seed)  # the initialization training will start from
    model = Transformer(cfg.model_config(len(vocab)))
    torch.manual_seed(dropout_seed(cfg.seed, 1))  # epoch 1's dropout stream
    src, prev, _ = collate(data, first)
    result = profile(model, src, prev)
    tmp = f"{args.omega_out}.tmp"
    Path(tmp).write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.omega_out)
    print(f"admin: encoder omega {result['encoder']}\nadmin: decoder omega {result['decoder']}")
    return 0
