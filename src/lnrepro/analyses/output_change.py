"""Fig 2 of Liu et al. 2020: how much a small parameter change moves the output, vs depth.

For every norm (post, pre, admin) and depth N (N-N models at initialization, Admin with omega
profiled on the batch): F(x, W) is the decoder's top hidden state (dropout off) on one training
batch, and the output change is Var[F(x, W) - F(x, W*)] (mean square over all elements) for
- ``random``: W* = W - delta * sign(N(0, 1)) for every parameter (Theorem 4.2's perturbation),
- ``adam``: W* = W after one Adam update on the batch's loss (lr delta).
Theorem 4.2: Post-LN grows as O(N), Pre-LN as O(log N), Admin like Pre-LN at initialization.
Each (norm, kind) gets least-squares lines against N and against ln N; the paper reads the
growth from which of the two fits better. A third fit, ln change against ln N, gives the exponent k of
change ~ c N^k (the stability lab's figure, --fit power: every scheme on one log-log plot; our
reading: the paper fits no exponent); it never decides better_fit.
"""
import copy
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from ..core.batching import collate  # noqa: E402
from ..core.data import PAD  # noqa: E402
from ..core.model import MODEL_NORMS, ModelConfig, label_smoothed_loss  # noqa: E402
from ..settings import OUTPUT_CHANGE_NORMS  # noqa: E402
from ..args import add_scale_note_argument  # noqa: E402
from .plotting import NORM_LABELS, save_figure  # noqa: E402
from .probing import add_init_probe_arguments, init_model, load_init_probe, pick_batches  # noqa: E402

KINDS = ("random", "adam")
FIT_COLUMNS = ["norm", "kind", "growth", "slope", "intercept", "r", "better_fit"]


@torch.no_grad()
def outputs(model, src, prev):
    """The decoder's top hidden states (after Pre-LN's final LayerNorm), before the tied output
    projection: a perturbed projection would add the same change at every depth."""
    top = model.decoder.final_norm or model.decoder.layers[-1]
    captured = []
    hook = top.register_forward_hook(lambda _m, _a, out: captured.append(out) and None)
    try:
        model.eval()
        model(src, prev)
    finally:
        hook.remove()
    return captured[0]


@torch.no_grad()
def perturb_sign(model, delta, generator):
    """W <- W - delta * sign(N(0,1)), one independent draw per parameter entry."""
    for p in model.parameters():
        p -= delta * torch.randn(p.shape, generator=generator).sign()


def adam_step(model, src, prev, tgt, lr, label_smoothing):
    """One Adam update on the batch's per-token loss (dropout off: the change is the update's alone)."""
    model.eval()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss, _ = label_smoothed_loss(model(src, prev), tgt, label_smoothing)
    (loss / (tgt != PAD).sum()).backward()
    opt.step()


def output_change(model, batch, kind, delta, seed, label_smoothing):
    """Var[F(x,W) - F(x,W*)]; the model is changed in place."""
    src, prev, tgt = batch
    before = outputs(model, src, prev)
    if kind == "random":
        perturb_sign(model, delta, torch.Generator().manual_seed(seed))
    else:
        adam_step(model, src, prev, tgt, delta, label_smoothing)
    return (outputs(model, src, prev) - before).pow(2).mean().item()


def measure(model_kwargs, norms, depths, seeds, data, batches, delta, label_smoothing):
    rows = []
    for norm in norms:
        for layers in depths:
            cfg = ModelConfig(**model_kwargs, enc_layers=layers, dec_layers=layers, enc_norm=norm, dec_norm=norm)
            for seed in range(1, seeds + 1):
                batch = collate(data, pick_batches(batches, 1, seed)[0])
                model = init_model(cfg, seed, batch)
                for kind in KINDS:
                    change = output_change(copy.deepcopy(model), batch, kind, delta, seed, label_smoothing)
                    rows.append({"norm": norm, "layers": layers, "seed": seed, "kind": kind, "output_change": change})
    return pd.DataFrame(rows)


def line_fit(x, y):
    """Least squares y = slope * x + intercept, and Pearson's r."""
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept), float(np.corrcoef(x, y)[0, 1])


def fit_growth(table):
    """Per norm and kind: fits against N and against ln N of the mean change, the better by r; and the
    power law's exponent (ln change against ln N), which is not one of the two compared."""
    rows = []
    mean = table.groupby(["norm", "kind", "layers"], as_index=False, sort=False).output_change.mean()
    for (norm, kind), t in mean.groupby(["norm", "kind"], sort=False):
        n = t.layers.to_numpy(dtype=float)
        fits = {"linear": line_fit(n, t.output_change), "log": line_fit(np.log(n), t.output_change)}
        better = max(fits, key=lambda g: fits[g][2])
        if (t.output_change > 0).all():  # an exactly unchanged output has no logarithm
            fits["power"] = line_fit(np.log(n), np.log(t.output_change.to_numpy(dtype=float)))
        for growth, (slope, intercept, r) in fits.items():
            rows.append({"norm": norm, "kind": kind, "growth": growth, "slope": slope, "intercept": intercept,
                         "r": r, "better_fit": better})
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


EXPECTED = {"post": "linear", "pre": "log", "admin": "log"}  # Theorem 4.2: O(N) for Post-LN, O(log N) else
FORMULAS = {"linear": "a N + b", "log": "a ln N + b"}


def fit_lines(fits, norm, kind):
    """(growth, style, label) of the fits drawn for one norm: the better one solid, and the paper's
    expectation dotted where the data fit the other better (a reader sees which one the data support)."""
    rows = fits[(fits.norm == norm) & (fits.kind == kind)].set_index("growth")
    better, expected = rows.better_fit.iloc[0], EXPECTED[norm]
    lines = [(better, "-", f"{FORMULAS[better]}, r={rows.r[better]:.3f}: better fit"
              + (", as the paper expects" if better == expected else ""))]
    if expected != better:
        lines.append((expected, ":", f"{FORMULAS[expected]}, r={rows.r[expected]:.3f}: the paper's expectation"))
    return [(growth, style, label, rows.loc[growth]) for growth, style, label in lines]


def label_panel(ax, kind):
    """A panel's title (its perturbation), axis labels and legend: Fig 2's and the lab's alike."""
    ax.set_title({"random": "W* = W - delta sign(N(0,1))", "adam": "W* = one Adam update"}[kind], fontsize=10)
    ax.set_xlabel("layers N (N-N model)")
    ax.set_ylabel("|F(x,W) - F(x,W*)|^2 (mean)")
    ax.legend(fontsize=7)


def draw(table, fits, title, pdf, mark=None):
    """One panel per perturbation kind: each norm's means, its better fit and, where that is not the
    paper's expectation, the expected one too."""
    mean = table.groupby(["norm", "kind", "layers"], as_index=False, sort=False).output_change.mean()
    fig, axes = plt.subplots(1, len(KINDS), figsize=(11, 3.8))
    for ax, kind in zip(axes, KINDS):
        for norm, t in mean[mean.kind == kind].groupby("norm", sort=False):
            (points,) = ax.plot(t.layers, t.output_change, "o", label=NORM_LABELS[norm])
            n = np.linspace(t.layers.min(), t.layers.max(), 100)
            for growth, style, label, f in fit_lines(fits, norm, kind):
                x = n if growth == "linear" else np.log(n)
                ax.plot(n, f.slope * x + f.intercept, style, color=points.get_color(), lw=1, label=label)
        label_panel(ax, kind)
        ax.grid(alpha=0.3)
    save_figure(fig, title, pdf, mark=mark)
    return fig


def draw_exponents(table, fits, title, pdf, mark=None):
    """The lab's figure: one panel per perturbation kind, log-log, every scheme's means and its power
    law c N^k, the exponent k in the legend (Theorem 4.2: Post-LN's O(N) is k ~ 1, O(log N) flatter)."""
    mean = table.groupby(["norm", "kind", "layers"], as_index=False, sort=False).output_change.mean()
    fig, axes = plt.subplots(1, len(KINDS), figsize=(11, 4.2))
    for ax, kind in zip(axes, KINDS):
        for norm, t in mean[mean.kind == kind].groupby("norm", sort=False):
            power = fits[(fits.norm == norm) & (fits.kind == kind) & (fits.growth == "power")]
            label = NORM_LABELS[norm] + (f": N^{power.slope.iloc[0]:.2f}" if len(power) else ": no fit (a change of 0)")
            (points,) = ax.plot(t.layers, t.output_change, "o", label=label)
            if len(power):
                n = np.geomspace(t.layers.min(), t.layers.max(), 50)
                ax.plot(n, np.exp(power.intercept.iloc[0]) * n ** power.slope.iloc[0], "-", color=points.get_color(), lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        label_panel(ax, kind)
        ax.grid(alpha=0.3, which="both")
    save_figure(fig, title + "\nlines: least squares of ln change on ln N (change ~ c N^k, k in the legend)", pdf, mark=mark)
    return fig


DRAWINGS = {"paper": draw, "power": draw_exponents}


def add_arguments(p):
    add_init_probe_arguments(p)
    p.add_argument("--depths", type=int, nargs="+", required=True, help="N of the N-N models measured")
    p.add_argument("--norms", nargs="+", default=list(OUTPUT_CHANGE_NORMS), choices=MODEL_NORMS,
                   help="residual sublayers measured (both sides)")
    p.add_argument("--delta", type=float, default=1e-4, help="perturbation size and the Adam step's lr")
    p.add_argument("--fit", choices=sorted(DRAWINGS), default="paper",
                   help="the fits drawn: the paper's N against ln N, or every scheme's power law on log-log axes")
    p.add_argument("--title", default="Liu et al. Fig 2: output change vs depth at initialization",
                   help="figure title")
    p.add_argument("--pdf", required=True, help="the figure")
    p.add_argument("--csv", required=True, help="every plotted point")
    p.add_argument("--fits", required=True, help="CSV: slope, intercept and r of each fit (power: the exponent's)")
    add_scale_note_argument(p)


def run(args):
    model_kwargs, data, batches = load_init_probe(args)
    table = measure(model_kwargs, args.norms, args.depths, args.seeds, data,
                    batches, args.delta, args.label_smoothing)
    fits = fit_growth(table)
    for path in (args.csv, args.fits, args.pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    fits.to_csv(args.fits, index=False)
    DRAWINGS[args.fit](table, fits, args.title, args.pdf, mark=args.scale_note)
    print(json.dumps(fits.to_dict("records"), indent=1))
    return 0
