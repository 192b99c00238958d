"""`lnrepro admin-profile`: Admin's profiling pass (Liu et al. 2020 §4.3) for one run, written to omega.json.

The model and the batch are exactly those the run's training starts from: its seed, its first
epoch's first batch and that epoch's dropout stream; lnrepro.core.admin computes omega as the
authors' code does. omega.json names the method ("method"); --method is the workflow's copy of it,
so a rule written for another method fails here instead of training on its omegas.
"""
import json
import os
from dataclasses import fields
from pathlib import Path

import torch

from ..core.admin import METHOD, profile
from ..core.batching import collate, epoch_order, make_batches
from ..core.data import ParallelData, vocab_sizes
from ..core.loop import dropout_seed
from ..core.model import Transformer
from ..core.translation import TrainConfig, add_train_arguments


def add_arguments(p):
    add_train_arguments(p)  # the run's own settings: same model, seed and first batch as training
    p.add_argument("--omega-out", required=True, help="omega.json (--out, required by the shared flags, is unused)")
    p.add_argument("--method", default=METHOD, choices=[METHOD], help="the profiling method the caller expects")


def run(args):
    cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig) if f.name != "admin_omega"})
    data_dir = Path(args.data)
    data = ParallelData.load(data_dir / "train.pt")
    first = epoch_order(make_batches(data, cfg.max_tokens, cfg.seed), cfg.seed, 1)[0]
    torch.manual_seed(cfg.seed)  # the initialization training will start from
    model = Transformer(cfg.model_config(*vocab_sizes(data_dir)))
    torch.manual_seed(dropout_seed(cfg.seed, 1))  # epoch 1's dropout stream
    src, prev, _ = collate(data, first)
    result = profile(model, src, prev)
    tmp = f"{args.omega_out}.tmp"
    Path(tmp).write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.omega_out)
    print(f"admin: encoder omega {result['encoder']}\nadmin: decoder omega {result['decoder']}")
    return 0
