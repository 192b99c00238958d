"""Figs 3 and 11 of Liu et al. 2020: relative gradient and update norms of every parameter matrix.

Liu et al. (§3.2, Appendix A.4) compare, per attention (W^Q, W^K, W^V, W^O) and FFN (W^1, W^2)
matrix of every layer, the norm of its gradient with the norm of its change between consecutive
epoch checkpoints, |W_{i+1} - W_i|, each scaled by the largest of its kind in the same network:
the gradients of W^Q and W^K (inside the softmax) are smaller than the others, yet Adam's updates
are of consistent size, where SGD's would follow the gradients.

Our reading of what the text leaves open: the gradient at W_i is the Frobenius norm of the mean
gradient of the trainer's per-token loss (label smoothing as trained) over K of the run's training
batches, the same K at every epoch, with dropout off (the expected gradient, without dropout's
noise); an epoch pair is (i, i+1) for consecutive epoch checkpoints (the trainer keeps none at
initialization).
"""
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..args import RunFiles  # noqa: E402
from ..core.data import ParallelData  # noqa: E402
from ..core.translation import load_model  # noqa: E402
from .claims import statistic  # noqa: E402
from .plotting import NORM_LABELS, save_figure  # noqa: E402
from .probing import (DECODER_KINDS, ENCODER_KINDS, add_trained_probe_arguments, epoch_checkpoints,  # noqa: E402
                      probe_batches, token_loss, use_threads, write_probe)

KINDS = ("gradient", "update")
SOFTMAX = ("Q", "K")  # the matrices inside the attention softmax
MODULES = {"self_attn": "self_attn", "enc_attn": "cross_attn", "ffn": "ffn"}  # sublayer kind -> attribute
SIDES = (("encoder", "enc_layers", ENCODER_KINDS), ("decoder", "dec_layers", DECODER_KINDS))


def sublayer_matrices(tensors, prefix, kind):
    """{matrix: tensor} of one sublayer; the attention's in_proj stacks the rows [W^Q; W^K; W^V]."""
    if kind == "ffn":
        return {"W1": tensors[f"{prefix}.fc1.weight"], "W2": tensors[f"{prefix}.fc2.weight"]}
    q, k, v = tensors[f"{prefix}.in_proj.weight"].chunk(3)
    return {"Q": q, "K": k, "V": v, "O": tensors[f"{prefix}.out_proj.weight"]}


def matrices(tensors, cfg):
    """{(side, sublayer, matrix, layer from 1): tensor} of every attention and FFN weight matrix;
    `tensors`: parameter name -> its weights, or its gradient."""
    out = {}
    for side, depth, kinds in SIDES:
        for i in range(getattr(cfg, depth)):
            for kind in kinds:
                for name, t in sublayer_matrices(tensors, f"{side}.layers.{i}.{MODULES[kind]}", kind).items():
                    out[(side, kind, name, i + 1)] = t
    return out


def mean_gradient(model, batches, label_smoothing):
    """Parameter name -> the mean over `batches` of the per-token loss's gradient, dropout off."""
    model.eval()
    model.zero_grad(set_to_none=True)
    for src, prev, tgt in batches:
        (token_loss(model, src, prev, tgt, label_smoothing) / len(batches)).backward()
    return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


def norm_rows(kind, mats):
    """One row per matrix: its Frobenius norm, and relative to the largest of `mats`; NaN where every
    norm is 0 (no weight moved: Transformer-Clinic's RAdam takes no step in its first updates)."""
    norms = {key: t.norm().item() for key, t in mats.items()}
    top = max(norms.values())
    return [{"kind": kind, "side": side, "sublayer": sub, "matrix": m, "layer": layer, "group": "softmax" if m in SOFTMAX else "other",
             "norm": n, "relative": n / top if top else math.nan} for (side, sub, m, layer), n in norms.items()]


def pair_rows(before, after, batches, label_smoothing):
    """Gradient norms at `before` (a model) and update norms from it to `after`."""
    cfg = before.cfg
    weights = {name: matrices(m.state_dict(), cfg) for name, m in (("before", before), ("after", after))}
    update = {key: weights["after"][key] - w for key, w in weights["before"].items()}
    gradient = matrices(mean_gradient(before, batches, label_smoothing), cfg)
    return norm_rows("gradient", gradient) + norm_rows("update", update)


def epoch_pairs(checkpoints, first_epochs):
    """(i, i+1, their checkpoints) for consecutive epochs (i in `first_epochs`, or every i if None)."""
    by_epoch = dict(checkpoints)
    pairs = [(i, by_epoch[i], by_epoch[i + 1]) for i in by_epoch if i + 1 in by_epoch]
    return [p for p in pairs if first_epochs is None or p[0] in first_epochs]


def model_label(model):
    """'Pre-LN 2+2 layers': what the checkpoint trained, read from it (a demo run's name, such as
    liu_wmt_pre_6L, keeps the paper's depth while the run trains the demo's)."""
    c = model.cfg
    norm = NORM_LABELS[c.enc_norm] if c.enc_norm == c.dec_norm else f"{NORM_LABELS[c.enc_norm]} enc / {NORM_LABELS[c.dec_norm]} dec"
    return f"{norm} {c.enc_layers}+{c.dec_layers} layers"


def measure(spec, files, data):
    """files: the RunFiles given (lnrepro.args): each run's --metrics, its checkpoints listed there."""
    files.require("metrics", spec["runs"])
    rows = []
    for run, s in spec["runs"].items():
        batches = probe_batches(data, s["max_tokens"], spec["batches"], s["seed"])
        pairs = epoch_pairs(epoch_checkpoints(files("metrics", run)), spec.get("epochs"))
        if not pairs:
            raise SystemExit(f"{run}: no two consecutive epoch checkpoints")
        for epoch, before, after in pairs:
            trained = load_model(before)
            pair = pair_rows(trained, load_model(after), batches, s["label_smoothing"])
            if not any(r["norm"] for r in pair if r["kind"] == "update"):
                print(f"lnrepro update-norms: WARNING: {run}: no weight changed from epoch {epoch} to {epoch + 1}; "
                      f"its relative update norms are left empty (NaN)", file=sys.stderr)
            rows += [{"run": run, "model": model_label(trained), "optimizer": s["optimizer"], "epoch": epoch, **row}
                     for row in pair]
    return pd.DataFrame(rows)


def heatmap(ax, t, title):
    """Rows: sublayer and matrix in forward order; columns: layer."""
    order = list(dict.fromkeys(zip(t.side, t.sublayer, t.matrix)))  # the CSV's: forward order
    grid = t.pivot_table(index=["side", "sublayer", "matrix"], columns="layer", values="relative").reindex(order)
    im = ax.imshow(grid.to_numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_yticks(range(len(grid)), [f"{side[:3]} {sub} {m}" for side, sub, m in grid.index], fontsize=6)
    ax.set_xticks(range(grid.shape[1]), grid.columns)
    ax.set_xlabel("layer")
    ax.set_title(title, fontsize=8)
    return im


def draw(table, title, pdf, mark=None):
    """One row per run; per epoch pair, its relative gradient and relative update side by side."""
    runs = list(table.groupby("run", sort=False))
    cols = max(t.epoch.nunique() for _, t in runs) * len(KINDS)
    fig, axes = plt.subplots(len(runs), cols, figsize=(2.6 * cols + 1, 4.2 * len(runs)), squeeze=False,
                             layout="constrained")
    for row, (run, t) in zip(axes, runs):
        panels = list(t.groupby(["epoch", "kind"], sort=False))
        for ax, ((epoch, kind), p) in zip(row, panels):
            what = "gradient at W_i" if kind == "gradient" else "update |W_i+1 - W_i|"
            trained = f"{p.model.iloc[0]}, {p.optimizer.iloc[0]}"
            im = heatmap(ax, p, f"{run}:\n{trained}\ni = {epoch}: relative {what}")
        for ax in row[len(panels):]:
            ax.axis("off")
        fig.colorbar(im, ax=row.tolist(), shrink=0.8, label="norm / largest in the network")
    save_figure(fig, title, pdf, tight=False, mark=mark)  # laid out by constrained layout already


def summary(table):
    """The report caption's table: per run and matrix, its mean relative gradient and update norm
    (over layers, encoder and decoder, epoch pairs), and per run the spread (sd / mean) of each kind."""
    means = table.pivot_table(index=["run", "optimizer", "matrix"], columns="kind", values="relative", sort=False)
    spread = table.groupby(["run", "optimizer", "kind"], sort=False).relative.agg(
        lambda r: statistic(r.to_frame(), "cv", "x", "relative"))  # the claims' statistic
    spread = spread.unstack("kind").assign(matrix="sd / mean, all matrices").set_index("matrix", append=True)
    rows = pd.concat([means, spread]).sort_index(level="run", sort_remaining=False, kind="stable")
    return rows[list(KINDS)].round(3).reset_index()


def add_arguments(p):
    add_trained_probe_arguments(p, "JSON: title, batches, epochs (first epochs of the pairs; null: every pair), "
                                   "runs {run: optimizer, max_tokens, seed, label_smoothing}", "every norm plotted")
    p.add_argument("--summary", default=None, help="CSV of each matrix's mean relative norms (the report caption); "
                                                   "none if left out")


def run(args):
    use_threads(args.threads)
    spec = json.loads(args.spec)
    files = RunFiles("update-norms", metrics=args.metrics)
    table = measure(spec, files, ParallelData.load(Path(args.data) / "train.pt"))
    write_probe(table, spec["title"], args, draw)
    if args.summary:
        summary(table).to_csv(args.summary, index=False)
    return 0
