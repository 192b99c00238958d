"""What the papers' probes share: their options, their batches, the models they probe, what they measure.

- options and batches: the probed model's width (MODEL_WIDTH, add_model_arguments), an init-time
  probe's data (add_init_probe_arguments, load_init_probe), K training batches drawn by seed;
- per-sublayer measurements at initialization (Liu et al. 2020 §3.1, Fig 5 and Table 1): a model
  is built exactly as a run's training starts it (the run's settings and seed, Admin's profiled
  omega), one training batch goes through it with the trainer's loss, and the gradient of that
  loss with respect to every residual sublayer's output is recorded. Liu et al. plot these norms
  relative to the largest of each stack: only the Post-LN decoder loses gradient on its way down,
  at its encoder-attention sublayers;
- the concentration property (Xiong et al. 2020 Definition 1), of the probed model's ||x_L||^2
  and of the simplified stack's alike.
"""
import csv
from pathlib import Path

import numpy as np
import torch

from ..args import add_run_files_argument, add_scale_note_argument, json_object, str2bool
from ..core.admin import profile, set_omegas
from ..core.batching import collate, make_batches
from ..core.data import PAD, ParallelData, vocab_sizes
from ..core.model import Transformer, label_smoothed_loss
from ..settings import TRAIN_DEFAULTS

EPSILONS = (0.05, 0.1, 0.2, 0.3, 0.5)  # epsilon grid of the concentration property

# sublayer kinds in forward order within one layer
ENCODER_KINDS = ("self_attn", "ffn")
DECODER_KINDS = ("self_attn", "enc_attn", "ffn")


def concentration(z, epsilons=EPSILONS):
    """delta-hat(epsilon) = P((Z - EZ)/EZ > epsilon) over samples z (Definition 1)."""
    z = np.asarray(z, dtype=float)
    rel = (z - z.mean()) / z.mean()
    return {eps: float((rel > eps).mean()) for eps in epsilons}


def pick_batches(all_batches, k, seed):
    """k of the training batches, drawn without replacement by `seed` (a probe's batches per seed)."""
    rng = np.random.default_rng(seed)
    return [all_batches[i] for i in rng.choice(len(all_batches), size=min(k, len(all_batches)), replace=False)]


def probe_batches(data, max_tokens, k, seed):
    """k training batches of a run (built as its trainer builds them), drawn by `seed`, collated."""
    return [collate(data, b) for b in pick_batches(make_batches(data, max_tokens, seed=1), k, seed)]


def epoch_checkpoints(metrics_csv):
    """[(epoch, checkpoint path)] of a run, in order; a diverged epoch has none."""
    with open(metrics_csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["checkpoint"]]
    return [(int(r["epoch"]), Path(metrics_csv).parent / r["checkpoint"]) for r in rows]


def sublayer_labels(model):
    """(side, layer from 1, kind) of every residual sublayer, in model.residual_sublayers() order."""
    cfg = model.cfg
    return ([("encoder", i, k) for i in range(1, cfg.enc_layers + 1) for k in ENCODER_KINDS]
            + [("decoder", i, k) for i in range(1, cfg.dec_layers + 1) for k in DECODER_KINDS])


def init_model(model_config, seed, batch=None):
    """The model training starts from: seeded init, and for Admin omega profiled on `batch`."""
    torch.manual_seed(seed)
    model = Transformer(model_config)
    if "admin" in (model_config.enc_norm, model_config.dec_norm):
        if batch is None:
            raise ValueError("an Admin model needs a batch to profile its omega on")
        set_omegas(model, profile(model, *batch[:2]))
    return model


def token_loss(model, src, prev, tgt, label_smoothing):
    """The trainer's loss of one batch per target token."""
    loss, _ = label_smoothed_loss(model(src, prev), tgt, label_smoothing)
    return loss / (tgt != PAD).sum()


def output_gradient_norms(model, src, prev, tgt, label_smoothing):
    """||dL/d(output of sublayer i)||_F for every residual sublayer, dropout off (the expected
    gradient at init without dropout noise); L is the trainer's per-token loss."""
    outputs = []

    def keep(_module, _args, out):
        out.retain_grad()
        outputs.append(out)

    hooks = [s.register_forward_hook(keep) for s in model.residual_sublayers()]
    try:
        model.eval()
        model.zero_grad(set_to_none=True)
        token_loss(model, src, prev, tgt, label_smoothing).backward()
    finally:
        for h in hooks:
            h.remove()
    return [o.grad.norm().item() for o in outputs]


def relative_norms(labels, norms):
    """Rows of the figure: each norm divided by the largest of its stack (encoder or decoder)."""
    top = {side: max(n for (s, _, _), n in zip(labels, norms) if s == side) for side, _, _ in labels}
    return [{"side": side, "layer": layer, "kind": kind, "index": i, "grad_norm": n, "relative": n / top[side]}
            for i, ((side, layer, kind), n) in enumerate(zip(labels, norms))]


def decoder_bottom_over_top(rows):
    """How much of the gradient reaches the decoder's first sublayer: its norm over the last's."""
    dec = [r for r in rows if r["side"] == "decoder"]
    return dec[0]["grad_norm"] / dec[-1]["grad_norm"]


# ---- command-line helpers shared by the probes ----
MODEL_WIDTH = (("d_model", int), ("ffn_dim", int), ("heads", int), ("dropout", float), ("attn_dropout", float),
               ("act_dropout", float))
WIDTH_HELP = {"d_model": "model width d", "ffn_dim": "inner width of the feed-forward sublayers",
              "heads": "attention heads", "dropout": "dropout on embeddings and sublayer outputs",
              "attn_dropout": "dropout on attention weights", "act_dropout": "dropout after the FFN activation"}


def add_model_arguments(p, widths, seeds, seeds_help):
    """Options every probe shares: the width of the model probed (defaults: `widths`), its batches,
    its seeds and threads. Depth and norms differ between probes and are their own."""
    for name, kind in MODEL_WIDTH:
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=widths[name], help=WIDTH_HELP[name])
    p.add_argument("--share-all-embeddings", type=str2bool, default=TRAIN_DEFAULTS["share_all_embeddings"],
                   metavar="BOOL",
                   help="one embedding for encoder, decoder and output projection (true/false, 1/0, yes/no)")
    p.add_argument("--max-tokens", type=int, default=TRAIN_DEFAULTS["max_tokens"],
                   help="batch size as the trainer builds them")
    p.add_argument("--label-smoothing", type=float, default=TRAIN_DEFAULTS["label_smoothing"],
                   help="label smoothing of the loss probed")
    p.add_argument("--seeds", type=int, default=seeds, help=seeds_help)
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads; 0 = torch's default")


# the init-time probes' (Fig 2, Fig 5) defaults
TRANSFORMER_BASE = dict(d_model=512, ffn_dim=2048, heads=8, dropout=0.1, attn_dropout=0.0, act_dropout=0.0)


def add_init_probe_arguments(p):
    """Data, width (defaults: transformer base) and batches of an init-time probe; depth is its own."""
    p.add_argument("--data", required=True, help="binarized data dir (its dictionaries, train.pt)")
    add_model_arguments(p, TRANSFORMER_BASE, seeds=3, seeds_help="seeds 1..N: initialization and the batch drawn")


def use_threads(n):
    if n > 0:
        torch.set_num_threads(n)


def load_init_probe(args):
    """(ModelConfig keywords without depth and norms, training data, its batches)."""
    use_threads(args.threads)
    data_dir = Path(args.data)
    data = ParallelData.load(data_dir / "train.pt")
    kwargs = {name: getattr(args, name) for name, _ in MODEL_WIDTH}
    vocab_size, tgt_vocab_size = vocab_sizes(data_dir)
    kwargs.update(vocab_size=vocab_size, tgt_vocab_size=tgt_vocab_size, share_all_embeddings=args.share_all_embeddings)
    return kwargs, data, make_batches(data, args.max_tokens, seed=1)


# the probes of trained runs (Figs 3, 7, 8, 11): a JSON spec of the runs, their checkpoints and corpus
def add_trained_probe_arguments(p, spec_help, csv_help):
    p.add_argument("--spec", required=True, type=json_object(), help=spec_help)
    p.add_argument("--data", required=True, help="binarized data dir of the runs' corpus (its dictionaries, train.pt)")
    add_run_files_argument(p, "metrics", "the metrics.csv of every run the spec names (lnrepro train's); the "
                           "checkpoints it lists are read beside it")
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads; 0 = torch's default")
    p.add_argument("--pdf", required=True, help="the heatmaps")
    p.add_argument("--csv", required=True, help=csv_help)
    add_scale_note_argument(p)


def write_probe(table, title, args, draw):
    """The table to --csv and draw(table, title, pdf, mark) to --pdf (and its PNG), their folders made."""
    for path in (args.csv, args.pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    draw(table, title, args.pdf, mark=args.scale_note)
