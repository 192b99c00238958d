"""Fig 5 of Liu et al. 2020 and the "gradient vanishing at init?" column of their Table 1.

For every encoder/decoder norm combination asked for (post/post, post/pre, pre/pre, ...): an
N-N model at initialization, one training batch per seed, the gradient norm at every residual
sublayer's output relative to the largest of its stack (mean over seeds). A combination counts
as vanishing when less than `--vanishing-below` of the decoder's top gradient reaches its first
sublayer (Post-LN decoders: the encoder-attention sublayers shrink it layer after layer).
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..core.batching import collate  # noqa: E402
from ..core.model import ModelConfig  # noqa: E402
from ..args import add_scale_note_argument  # noqa: E402
from .plotting import NORM_LABELS, save_figure  # noqa: E402
from .probing import (add_init_probe_arguments, decoder_bottom_over_top, init_model,  # noqa: E402
                      load_init_probe, output_gradient_norms, pick_batches,
                      relative_norms, sublayer_labels)

SUMMARY_COLUMNS = ["combination", "enc_norm", "dec_norm", "layers", "decoder_bottom_over_top",
                   "encoder_bottom_over_top", "vanishing", "threshold", "seeds"]
KIND_MARKERS = {"self_attn": "o", "enc_attn": "s", "ffn": "^"}


def combination_label(enc, dec):
    return f"{NORM_LABELS[enc]} enc / {NORM_LABELS[dec]} dec" if enc != dec else NORM_LABELS[enc]


def measure(model_kwargs, combos, layers, seeds, data, batches, label_smoothing):
    """Long table: one row per combination, seed and sublayer."""
    rows = []
    for enc, dec in combos:
        cfg = ModelConfig(**model_kwargs, enc_layers=layers, dec_layers=layers, enc_norm=enc, dec_norm=dec)
        for seed in range(1, seeds + 1):
            batch = collate(data, pick_batches(batches, 1, seed)[0])
            model = init_model(cfg, seed, batch)
            norms = output_gradient_norms(model, *batch, label_smoothing)
            for r in relative_norms(sublayer_labels(model), norms):
                rows.append({"combination": f"{enc}/{dec}", "enc_norm": enc, "dec_norm": dec, "layers": layers,
                             "seed": seed, **r})
    return pd.DataFrame(rows)


def summarize(table, threshold):
    rows = []
    for combo, t in table.groupby("combination", sort=False):
        per_seed = [decoder_bottom_over_top(g.to_dict("records")) for _, g in t.groupby("seed")]
        enc = t[t.side == "encoder"]
        enc_ratio = np.mean([g.grad_norm.iloc[0] / g.grad_norm.iloc[-1] for _, g in enc.groupby("seed")])
        ratio = float(np.mean(per_seed))
        rows.append({"combination": combo, "enc_norm": t.enc_norm.iloc[0], "dec_norm": t.dec_norm.iloc[0],
                     "layers": int(t.layers.iloc[0]), "decoder_bottom_over_top": ratio,
                     "encoder_bottom_over_top": float(enc_ratio), "vanishing": int(ratio < threshold),
                     "threshold": threshold, "seeds": t.seed.nunique()})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def draw(table, title, pdf, mark=None):
    """Encoder and decoder panels of the same-norm combinations: Post-LN and Pre-LN as in the paper, and
    Admin where probed (Liu §4.3)."""
    mean = table.groupby(["combination", "enc_norm", "dec_norm", "side", "layer", "kind", "index"],
                         as_index=False, sort=False).relative.mean()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, side in zip(axes, ("encoder", "decoder")):
        for combo, t in mean[(mean.side == side) & (mean.enc_norm == mean.dec_norm)].groupby("combination", sort=False):
            x = np.arange(len(t)) / (3 if side == "decoder" else 2) + 1  # sublayer position in layer units
            (line,) = ax.plot(x, t.relative, lw=1, label=combination_label(t.enc_norm.iloc[0], t.dec_norm.iloc[0]))
            for kind, marker in KIND_MARKERS.items():
                k = (t.kind == kind).to_numpy()
                ax.plot(x[k], t.relative[k], marker, ms=3.5, color=line.get_color(),
                        label=kind.replace("_", "-") if combo == mean.combination.iloc[0] and k.any() else None)
        ax.set_title(f"{side}: ||dL/d(sublayer output)|| / max", fontsize=10)
        ax.set_xlabel("layer")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # sublayers sit between layers: no 2.5 ticks
        ax.set_ylabel("relative gradient norm")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, title, pdf, mark=mark)


def add_arguments(p):
    add_init_probe_arguments(p)
    p.add_argument("--layers", type=int, default=18, help="N for N-N models")
    p.add_argument("--combinations", nargs="+", default=["post/post", "post/pre", "pre/pre"],
                   help="ENC/DEC norm placements; the same-norm ones are drawn")
    p.add_argument("--vanishing-below", type=float, default=0.5,
                   help="decoder bottom/top gradient ratio under which a combination counts as vanishing")
    p.add_argument("--title", default="Liu et al. Fig 5: relative gradient norms at initialization",
                   help="figure title")
    p.add_argument("--pdf", required=True, help="the figure")
    p.add_argument("--csv", required=True, help="every plotted point")
    p.add_argument("--summary", required=True, help="per combination: the ratio and the vanishing verdict")
    add_scale_note_argument(p)


def run(args):
    model_kwargs, data, batches = load_init_probe(args)
    combos = [tuple(c.split("/")) for c in args.combinations]
    table = measure(model_kwargs, combos, args.layers, args.seeds, data,
                    batches, args.label_smoothing)
    summary = summarize(table, args.vanishing_below)
    for path in (args.csv, args.summary, args.pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    summary.to_csv(args.summary, index=False)
    draw(table, args.title, args.pdf, mark=args.scale_note)
    print(json.dumps(summary.to_dict("records"), indent=1))
    return 0
