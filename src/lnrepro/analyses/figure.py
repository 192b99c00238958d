"""Draw one figure from the runs' metrics and BLEU tables, and write the CSV it plots.

The figure spec (from the config) lists panels, each one metric over epochs for some runs.
Legends are built from the runs' settings, so they show what was trained (the demo's scaled
warm-up, say), not what the paper used. A diverged run is drawn up to its last value, marked
with x and labelled "diverged at update N"; one with no value at all (it diverged before its first
checkpoint) is not drawn, only named so in the legend. Capped runs (training_cap) are labelled
CAPPED. The CSV says the same in its ``note`` and ``capped`` columns.

A validation metric compares runs only if they were validated on the same pairs: the trainer records
how many in metrics.csv's ``valid_pairs``. A panel whose runs differ there is marked, in its title, its
legend (each run's count) and the CSV's ``valid_sets_differ``, and a warning names the runs' files.
(A metrics.csv written before ``valid_pairs`` existed has no count: nothing can be checked for it.)
"""
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from ..args import RunFiles, add_run_files_argument, add_scale_note_argument, json_object  # noqa: E402
from ..settings import STEP_SCHEDULES, TRAIN_DEFAULTS, lr_text  # noqa: E402
from .outcomes import divergence_text  # noqa: E402
from .plotting import NORM_FN_LABELS, NORM_LABELS, legend, save_figure, with_description  # noqa: E402

METRIC_LABELS = {"valid_loss": "validation loss (bits/token)", "bleu": "BLEU", "train_loss": "train loss",
                 "grad_norm": "gradient norm", "lr": "learning rate", "valid_ppl": "validation perplexity"}
LOG_SCALE = {"valid_ppl"}  # perplexities span orders of magnitude early in training
HIGHER_IS_BETTER = {"bleu"}
# a BLEU axis spans at least 0-1: SGD's runs at BLEU 0.02-0.07 autoscaled into a shape that was noise
MIN_BLEU_TOP = 1.0
# runs of different lengths in one panel (Fig 4's 20-epoch pair beside 8-epoch runs): where the longer
# ones rise so far that the epochs all runs share fill under this share of the axis, an inset shows them
ZOOM_BELOW_SHARE = 0.4


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object("title", "panels", "run_settings"), help="JSON: title, panels [{title, metric, runs}], run_settings")
    add_run_files_argument(p, "metrics", "the metrics.csv of every run a panel draws (lnrepro train's)")
    add_run_files_argument(p, "bleu", "the bleu.csv of every run a BLEU panel draws (lnrepro evaluate's); no other is read")
    p.add_argument("--pdf", required=True, help="the figure")
    p.add_argument("--csv", required=True, help="every plotted point")
    p.add_argument("--summary", default=None,
                   help="CSV of each run's final and best value per metric (report caption); none if left out")
    add_scale_note_argument(p)


def run_label(s):
    """'Post-LN, Adam, lr 5e-4, warm-up 4000' from a run's settings (after its `description`, if any)."""
    return with_description(s.get("description"), settings_label(s))


def settings_label(s):
    """What the run trained, in the words of the papers' legends."""
    d = TRAIN_DEFAULTS  # what the trainer used where the run sets nothing
    enc, dec = s.get("enc_norm", d["enc_norm"]), s.get("dec_norm", d["dec_norm"])
    norm = NORM_LABELS[enc] if enc == dec else f"{NORM_LABELS[enc]} enc / {NORM_LABELS[dec]} dec"
    if s.get("norm_fn", d["norm_fn"]) != d["norm_fn"]:
        norm += f" ({NORM_FN_LABELS[s['norm_fn']]})"
    opt = {"adam": "Adam", "sgd": "SGD", "radam": "RAdam"}[s.get("optimizer", d["optimizer"])]
    parts = [norm, opt, f"lr {lr_text(s.get('lr', d['lr']))}"]
    warmup = s.get("warmup", d["warmup"])
    parts.append(f"warm-up {warmup}" if warmup > 1 else "no warm-up")
    sched = s.get("schedule", d["schedule"])
    if sched in STEP_SCHEDULES and s.get("decay_epoch"):
        factor, epoch = s.get("decay_factor", d["decay_factor"]), s["decay_epoch"]
        if sched == "step":
            parts.append(f"x{factor} at ep {epoch}")
        else:  # step_inverse_sqrt: Xiong et al.'s WMT14 Pre-LN, whose two readings differ by the drop
            parts.append(f"x{factor} at ep {epoch}, then inv. sqrt" if factor != 1 else f"inv. sqrt from ep {epoch}")
    elif sched in ("linear", "constant"):
        parts.append(f"{sched} lr")
    return ", ".join(parts)


def bleu_runs(spec):
    """The runs a BLEU panel draws: only theirs are decoded (the rule asks for no other bleu.csv)."""
    return {run for panel in spec["panels"] if panel["metric"] == "bleu" for run in panel["runs"]}


def load_run(files, run, with_bleu):
    """One row per epoch: the trainer's metrics, joined with the BLEU of that epoch's checkpoint if asked
    (files: the RunFiles given, lnrepro.args)."""
    table = pd.read_csv(files("metrics", run))
    if with_bleu:
        path = files("bleu", run)
        bleu = pd.read_csv(path)
        missing = sorted(set(table.epoch[table.checkpoint.notna()]) - set(bleu.epoch))
        if missing:  # a gap would be drawn as if the run had no value there
            sys.exit(f"{path}: no BLEU for epoch(s) {missing}, which have checkpoints; rebuild it "
                     f"(snakemake --force {path})")
        table = table.merge(bleu[["epoch", "bleu"]], on="epoch", how="left")
    # fairseq's perplexity: 2^(label-smoothing-free NLL in bits), what Liu et al. Figs 1 and 9 plot
    table["valid_ppl"] = 2.0 ** table["valid_nll"]
    table.insert(0, "run", run)
    return table


def long_table(spec, files):
    """Every plotted number: figure panel, run, label, epoch, metric, value, diverged, capped, the
    note of the diverged epoch (outcomes.divergence_text), valid_pairs (the pairs the run validated on;
    empty if its metrics.csv does not say) and valid_sets_differ (see mark_valid_sets)."""
    decoded = bleu_runs(spec)
    drawn = list(dict.fromkeys(run for panel in spec["panels"] for run in panel["runs"]))
    files.require("metrics", drawn)
    files.require("bleu", [run for run in drawn if run in decoded])
    tables = {run: load_run(files, run, run in decoded) for run in drawn}
    rows = []
    for i, panel in enumerate(spec["panels"]):
        for run in panel["runs"]:
            label = run_label(spec["run_settings"].get(run, {}))
            note = divergence_text(tables[run])
            for _, r in tables[run].iterrows():
                rows.append({"panel": i, "panel_title": panel["title"], "run": run, "label": label,
                             "epoch": int(r["epoch"]), "metric": panel["metric"], "value": r[panel["metric"]],
                             "diverged": int(r["diverged"]), "capped": int(r["capped"]),
                             "note": note if r["diverged"] else "", "valid_pairs": valid_pairs(tables[run])})
    return mark_valid_sets(pd.DataFrame(rows), files)


def valid_pairs(metrics):
    """The pairs a run validated on (metrics.csv's valid_pairs, the same every epoch), or NaN if unknown."""
    counts = metrics["valid_pairs"].dropna() if "valid_pairs" in metrics else ()
    return int(counts.iloc[-1]) if len(counts) else float("nan")


def mark_valid_sets(table, files):
    """valid_sets_differ = 1 on the rows of a validation panel whose runs were validated on different numbers
    of pairs (their curves are not comparable), with a warning naming the runs; else 0."""
    table["valid_sets_differ"] = 0
    if table.empty:
        return table
    for i, panel in table.groupby("panel", sort=False):
        if not panel.metric.iloc[0].startswith("valid_"):
            continue
        counts = panel.groupby("run", sort=False).valid_pairs.first().dropna()
        if counts.nunique() > 1:
            table.loc[panel.index, "valid_sets_differ"] = 1
            said = ", ".join(f"{files('metrics', run)}: {int(n)}" for run, n in counts.items())
            print(f"WARNING: panel ({chr(97 + int(i))}) {panel.panel_title.iloc[0]!r} compares runs validated on "
                  f"different sets (valid_pairs {said}); its curves are not comparable. Train them on the same "
                  f"data (the same corpus and valid split) and retrain the odd ones", file=sys.stderr)
    return table


def plotted(curve):
    """The points drawn: finite values only (a diverged epoch's loss may be NaN or infinite)."""
    return curve[np.isfinite(curve.value.astype(float))]


def final_values(table):
    """Per panel metric and run: the last epoch, its value, the best value, whether it diverged and was capped."""
    rows = []
    for (metric, run), curve in table.groupby(["metric", "run"], sort=False):
        ok = plotted(curve)
        best = (ok.value.max() if metric == "bleu" else ok.value.min()) if len(ok) else float("nan")
        rows.append({"metric": metric, "run": run, "label": curve.label.iloc[0], "last_epoch": int(curve.epoch.max()),
                     "final": round(ok.value.iloc[-1], 2) if len(ok) else float("nan"), "best": round(best, 2),
                     "diverged": int(curve.diverged.any()), "capped": int(curve.capped.any()),
                     "note": " ".join(n for n in curve.note if n)})
    return pd.DataFrame(rows)


def legend_label(curve):
    """The run's label, then what its curve is not: 'label: diverged at update N [CAPPED]', and its
    valid pairs where the panel's runs were validated on different sets."""
    label = curve.label.iloc[0]
    notes = [n for n in curve.note if n]
    if notes:
        label += f": {notes[-1]}"
    if curve.valid_sets_differ.any():
        pairs = curve.valid_pairs.iloc[0]
        label += f" [{int(pairs)} valid pairs]" if pairs == pairs else " [valid pairs unknown]"
    return label + (" [CAPPED]" if curve.capped.any() else "")


def run_colours(table):
    """One colour per legend label for the whole figure, so a colour means the same training in every
    panel: each panel's own cycle gave Fig 2's first Adam run and first SGD run the same blue, while
    Liu et al.'s Fig 9 keeps Post-LN, Pre-LN and Admin in one colour each at every depth."""
    labels = list(dict.fromkeys(table.label))
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    colour = {label: cmap(i % cmap.N) for i, label in enumerate(labels)}
    return {run: colour[label] for run, label in zip(table.run, table.label)}


def draw_curves(ax, curves, colours, labelled=True):
    for run, curve in curves.groupby("run", sort=False):
        ok = plotted(curve)
        # a run with no value (diverged before its first checkpoint) gets a legend entry, no point
        ax.plot(ok.epoch, ok.value, marker="o" if len(ok) else "x", ms=3, color=colours[run],
                label=legend_label(curve) if labelled else None)
        if curve.diverged.any() and len(ok):  # at its last value, where it diverged
            ax.plot([curve.epoch.max()], [ok.value.iloc[-1]], marker="x", ms=10, mew=2, color=colours[run])


def shared_epochs_zoom(ax, curves, metric, colours):
    """An inset over the epochs every run of the panel has, where runs of different lengths squash them
    (the shorter runs' values fill under ZOOM_BELOW_SHARE of the axis); None where none is needed."""
    ok = plotted(curves)
    lengths = ok.groupby("run").epoch.max()
    if ok.empty or lengths.nunique() < 2 or metric in LOG_SCALE:
        return None
    shared = ok[ok.epoch <= lengths.min()]
    low, high = ax.get_ylim()
    if shared.value.max() - shared.value.min() >= ZOOM_BELOW_SHARE * (high - low):
        return None
    # where the longer runs are not: low on the right for a rising metric, high on the right for a falling one
    inset = ax.inset_axes([0.55, 0.1, 0.42, 0.36] if metric in HIGHER_IS_BETTER else [0.55, 0.55, 0.42, 0.36])
    draw_curves(inset, curves[curves.epoch <= lengths.min()], colours, labelled=False)
    inset.set_title(f"epochs 1-{int(lengths.min())}, zoomed", fontsize=7)
    inset.tick_params(labelsize=6)
    inset.xaxis.set_major_locator(MaxNLocator(integer=True))
    inset.grid(alpha=0.3)
    return inset


def draw(spec, table, pdf, mark=None):
    panels = spec["panels"]
    ncols = min(2, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 4.2 * nrows), squeeze=False)
    colours = run_colours(table)
    for i, panel in enumerate(panels):
        ax = axes[i // ncols][i % ncols]
        curves = table[table.panel == i]
        draw_curves(ax, curves, colours)
        differ = "\nNOT COMPARABLE: runs validated on different sets" if curves.valid_sets_differ.any() else ""
        ax.set_title(f"({chr(97 + i)}) {panel['title']}{differ}", fontsize=10, **({"color": "red"} if differ else {}))
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # 3-epoch runs: no ticks at 1.25
        ax.set_ylabel(METRIC_LABELS[panel["metric"]])
        if panel["metric"] in LOG_SCALE:
            ax.set_yscale("log")
            # 1-2-5 labels in plain numbers: perplexities of 100-2,000 had two labels, 10^2 and 10^3
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        if panel.get("ylim"):
            ax.set_ylim(*panel["ylim"])
        elif panel["metric"] == "bleu":
            ax.set_ylim(0, max(MIN_BLEU_TOP, ax.get_ylim()[1]))
        ax.grid(alpha=0.3)
        shared_epochs_zoom(ax, curves, panel["metric"], colours)
        legend(ax)
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols][j % ncols].axis("off")
    capped = "\nCAPPED (training_cap): a smoke test, not a result" if table.capped.any() else ""
    save_figure(fig, spec["title"] + capped, pdf, mark=mark)


def run(args):
    spec = json.loads(args.spec)
    table = long_table(spec, RunFiles("figure", metrics=args.metrics, bleu=args.bleu))
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    if args.summary:
        final_values(table).to_csv(args.summary, index=False)
    draw(spec, table, args.pdf, mark=args.scale_note)
    return 0
