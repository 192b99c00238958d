"""Fig 3 of Xiong et al. 2020 from the gradient probes, and the CSV of every plotted number.

(a, b): ||E[dL/dW^1]||_F and ||E[dL/dW^2]||_F of every FFN sub-layer of the N-N model (encoder
layers 1..N, then decoder layers N+1..2N): Post-LN and Pre-LN at initialization, Post-LN after
the warm-up stage. (c, d): ||dL/dW^{2,L}||_F of the last FFN sub-layer (the decoder's) against
model size, Pre-LN (c) and Post-LN (d). Mean over seeds, with one standard deviation.

The CSV is long: panel (ab | cd | concentration), state, norm, layers, side, layer, index,
matrix, statistic, x, mean, std, seeds. Rows of panel "concentration" are not drawn: they hold
the (epsilon, delta) concentration of ||x_L||^2 the paper reports in §3.4, measured on the same models.
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..args import add_scale_note_argument, json_object  # noqa: E402
from .plotting import save_figure  # noqa: E402

SERIES = [("init", "post", "Post-LN (init)", "tab:red", "o-"),
          ("init", "pre", "Pre-LN (init)", "tab:blue", "s-"),
          ("after_warmup", "post", "Post-LN (after warm-up)", "tab:orange", "^--")]
COLUMNS = ["panel", "state", "norm", "layers", "side", "layer", "index", "matrix", "statistic", "x", "mean", "std", "seeds"]


def summarize(grads, concentration, panel_layers):
    """Mean and standard deviation over seeds of what each panel draws."""
    keys = ["state", "norm", "layers", "side", "layer", "index", "matrix"]
    rows = []
    ab = grads[(grads.layers == panel_layers) | (grads.state == "after_warmup")]
    for key, g in ab.groupby(keys):
        rows.append({**dict(zip(keys, key)), "panel": "ab", "statistic": "expected_grad_norm", "x": key[5],
                     "mean": g.expected_grad_norm.mean(), "std": g.expected_grad_norm.std(ddof=0), "seeds": len(g)})
    last = grads[(grads.state == "init") & (grads.matrix == "W2") & (grads["index"] == 2 * grads.layers)]
    for key, g in last.groupby(keys):
        rows.append({**dict(zip(keys, key)), "panel": "cd", "statistic": "mean_grad_norm", "x": key[2],
                     "mean": g.mean_grad_norm.mean(), "std": g.mean_grad_norm.std(ddof=0), "seeds": len(g)})
    ckeys = ["state", "norm", "layers", "epsilon"]
    for key, g in concentration.groupby(ckeys):
        rows.append({**dict(zip(ckeys[:3], key[:3])), "panel": "concentration", "statistic": "delta_hat",
                     "x": key[3], "mean": g.delta_hat.mean(), "std": g.delta_hat.std(ddof=0), "seeds": len(g)})
    table = pd.DataFrame(rows, columns=COLUMNS).astype({"layer": "Int64", "index": "Int64"})
    return table.sort_values(["panel", "state", "norm", "matrix", "layers", "x"], kind="stable")


def series_summary(table):
    """Each drawn series in one line: first and last point, and max/min (the report caption)."""
    names = {("init", "post"): "Post-LN (init)", ("init", "pre"): "Pre-LN (init)", ("after_warmup", "post"): "Post-LN (after warm-up)"}
    rows = []
    for (panel, matrix, state, norm), s in table[table.panel != "concentration"].groupby(
            ["panel", "matrix", "state", "norm"], sort=False):
        s = s.sort_values("x")
        what = f"‖E[dL/d{matrix}]‖ per layer" if panel == "ab" else "‖dL/dW2‖ of the last FFN per model size"
        rows.append({"panel": panel, "series": f"{names.get((state, norm), state + ' ' + norm)}: {what}",
                     "first_x": int(s.x.iloc[0]), "first": round(s["mean"].iloc[0], 4), "last_x": int(s.x.iloc[-1]),
                     "last": round(s["mean"].iloc[-1], 4), "max_over_min": round(s["mean"].max() / s["mean"].min(), 2)})
    return pd.DataFrame(rows)


def draw(table, spec, pdf, mark=None):
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4))
    n = spec["panel_layers"]
    for ax, matrix, letter in ((axes[0][0], "W1", "a"), (axes[0][1], "W2", "b")):
        for state, norm, label, color, style in SERIES:
            s = table[(table.panel == "ab") & (table.state == state) & (table.norm == norm) & (table.matrix == matrix)]
            if len(s):
                ax.errorbar(s.x, s["mean"], yerr=s["std"], fmt=style, ms=4, capsize=2, color=color, label=label)
        ax.axvline(n + 0.5, color="gray", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(1, 2 * n + 1))
        ax.set(title=f"({letter}) $\\|E[\\partial L/\\partial W^{matrix[1]}]\\|_F$ of every FFN sub-layer, {n}-{n} model",
               xlabel=f"layer (1-{n} encoder, {n + 1}-{2 * n} decoder)", ylabel="norm of the expected gradient")
    for ax, norm, letter, label in ((axes[1][0], "pre", "c", "Pre-LN"), (axes[1][1], "post", "d", "Post-LN")):
        s = table[(table.panel == "cd") & (table.norm == norm)]
        ax.errorbar(s.x, s["mean"], yerr=s["std"], fmt="o-", capsize=3, color="tab:blue" if norm == "pre" else "tab:red",
                    label=f"{label} (init)")
        ax.set_xticks(list(s.x))
        ax.set_xticklabels([f"{int(x)}-{int(x)}" for x in s.x])
        ax.set_ylim(bottom=0)
        ax.set(title=f"({letter}) {label}: $\\|\\partial L/\\partial W^2\\|_F$ of the last FFN sub-layer", xlabel="model size",
               ylabel="gradient norm")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, spec["title"], pdf, mark=mark)


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object("title", "panel_layers"), help="JSON: title, panel_layers (N of the model drawn in a, b)")
    p.add_argument("--grads", nargs="+", required=True, help="grads.csv of every probe")
    p.add_argument("--concentration", nargs="+", required=True, help="concentration.csv of every probe")
    p.add_argument("--pdf", required=True, help="the figure (Fig 3)")
    p.add_argument("--csv", required=True, help="every plotted point")
    p.add_argument("--summary", required=True, help="CSV: each series' first and last point (report caption)")
    add_scale_note_argument(p)


def run(args):
    spec = json.loads(args.spec)
    grads = pd.concat([pd.read_csv(f) for f in args.grads], ignore_index=True)
    conc = pd.concat([pd.read_csv(f) for f in args.concentration], ignore_index=True)
    table = summarize(grads, conc, spec["panel_layers"])
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    series_summary(table).to_csv(args.summary, index=False)
    draw(table, spec, args.pdf, mark=args.scale_note)
    return 0
