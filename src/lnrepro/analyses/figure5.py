"""Draw Xiong et al.'s Figure 5 and write the CSV it plots: (a) BERT validation loss against
pre-training updates, Post-LN vs Pre-LN; (b, c) dev accuracy of each round's checkpoint
fine-tuned on each GLUE task (mean over seeds, 95% confidence band).

As in figure.py, nothing is invented or dropped quietly: a pre-training that diverged is drawn to
its last value, marked x and labelled "diverged at update N" (one with no validation at all is only
named in the legend, its CSV row NaN with a note); a diverged checkpoint's accuracy is NaN, not
plotted. Capped runs (training_cap) are labelled [CAPPED] and the title says so. A point from one
seed has no band (its ci95 is NaN) and says "n = 1 seed"; ``n`` of ``seeds`` counts the seeds that
gave an accuracy. The CSV carries ``note``, ``capped``, ``n`` and ``seeds``.
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..args import RunFiles, add_run_files_argument, add_scale_note_argument, json_object  # noqa: E402
from ..settings import PRETRAIN_DEFAULTS, finetune_summary_key, lr_text  # noqa: E402
from ..training.finetune import seeds_note  # noqa: E402
from .outcomes import divergence_text  # noqa: E402
from .plotting import NORM_LABELS, legend, save_figure, with_description  # noqa: E402


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object("title", "runs", "tasks", "run_settings", "rounds"),
                   help="JSON: title, runs, tasks, run_settings, rounds {run: [the rounds fine-tuned]}")
    add_run_files_argument(p, "metrics", "the pre-training metrics.csv of every run (lnrepro pretrain's)")
    add_run_files_argument(p, "summaries", "the fine-tuning summary of every run, task and round the spec's `rounds` "
                           "list (lnrepro finetune's ROUND.summary.csv); no other round's is read", key="RUN:TASK:ROUND")
    p.add_argument("--pdf", required=True, help="the figure")
    p.add_argument("--csv", required=True, help="every plotted point")
    add_scale_note_argument(p)


def run_label(s):
    """'Pre-LN, lr 3e-4, no warm-up' from a BERT run's settings (after its `description`, if any)."""
    d = PRETRAIN_DEFAULTS  # what the trainer used where the run sets nothing
    warmup = s.get("warmup", d["warmup"])
    trained = (f"{NORM_LABELS[s.get('norm', d['norm'])]}, lr {lr_text(s.get('lr', d['lr']))}" +
               (f", warm-up {warmup}" if warmup > 1 else ", no warm-up"))
    return with_description(s.get("description"), trained)


def long_table(spec, files):
    """Every plotted number: panel, run, label, round, updates, value, ci95, n of seeds, diverged,
    capped and note (why a value is missing or weaker than it looks). files: the RunFiles given
    (lnrepro.args): --metrics by run, --summaries by RUN:TASK:ROUND."""
    files.require("metrics", spec["runs"])
    files.require("summaries", [finetune_summary_key(run, task, r) for run in spec["runs"] for task in spec["tasks"]
                                for r in spec["rounds"][run]])
    rows = []
    for run in spec["runs"]:
        label = run_label(spec["run_settings"][run])
        metrics = pd.read_csv(files("metrics", run))
        capped = int(metrics.capped.any()) if "capped" in metrics else 0
        diverged = divergence_text(metrics)
        for _, r in metrics.iterrows():
            rows.append({"panel": "valid_loss", "run": run, "label": label, "round": int(r["epoch"]),
                         "updates": int(r["updates"]), "value": r["valid_loss"], "ci95": float("nan"),
                         "n": float("nan"), "seeds": float("nan"), "diverged": int(r["diverged"]),
                         "capped": capped, "note": diverged if r["diverged"] else ""})
        for task in spec["tasks"]:
            for round_ in spec["rounds"][run]:  # the configured rounds: a file of another setting's is stale
                s = pd.read_csv(files("summaries", finetune_summary_key(run, task, round_))).iloc[0]
                ok = s["diverged"] == 0  # a diverged checkpoint has no accuracy to plot, whatever the file holds
                n = s["n"] if "n" in s else s["seeds"]  # summaries before the n column: every seed gave a value
                note = s.get("note") if isinstance(s.get("note"), str) else ""
                if ok and not note:
                    note = seeds_note(int(n), int(s["seeds"]))
                rows.append({"panel": task, "run": run, "label": label, "round": int(s["round"]),
                             "updates": s["updates"] if ok else float("nan"),
                             "value": s["mean_acc"] if ok else float("nan"), "ci95": s["ci95"] if ok else float("nan"),
                             "n": n if ok else float("nan"), "seeds": s["seeds"], "diverged": int(s["diverged"]),
                             "capped": int(capped or s.get("max_updates", 0) > 0), "note": note,
                             "majority": s.get("majority_acc", float("nan"))})  # summaries before it: none drawn
    return pd.DataFrame(rows).sort_values(["panel", "run", "round"], kind="stable")


def plotted(curve):
    """The points drawn: finite values only (a diverged round's loss is NaN or infinite)."""
    return curve[np.isfinite(curve.value.astype(float))]


def legend_label(curve, divergence):
    """'label: diverged at update N; n = 1 seed [CAPPED]': the run's label, then what its curve is not."""
    notes = [divergence] if divergence else []
    notes += sorted({n for n in curve.note if n and not n.startswith(("diverged", "pre-training diverged"))})
    label = curve.label.iloc[0] + (f": {'; '.join(notes)}" if notes else "")
    return label + (" [CAPPED]" if curve.capped.any() else "")


def draw(spec, table, pdf, mark=None):
    panels = ["valid_loss"] + list(spec["tasks"])
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    for i, panel in enumerate(panels):
        ax = axes[0][i]
        for run in spec["runs"]:
            loss = table[(table.panel == "valid_loss") & (table.run == run)]
            divergence = next((n for n in loss.note if n), "")  # the pre-training's, on every panel
            curve = table[(table.panel == panel) & (table.run == run)]
            if not len(curve):  # no summary read: named, not left out of the legend
                ax.plot([], [], marker="x", label=f"{run_label(spec['run_settings'][run])}: no fine-tuned checkpoint")
                continue
            ok = plotted(curve)
            # a run with no value gets a legend entry and no point
            (line,) = ax.plot(ok.updates, ok.value, marker="o" if len(ok) else "x", ms=3,
                              label=legend_label(curve, divergence))
            if (curve.diverged == 1).any() and len(ok):  # at its last value, where it diverged
                ax.plot([ok.updates.iloc[-1]], [ok.value.iloc[-1]], marker="x", ms=10, mew=2, color=line.get_color())
            band = np.isfinite(ok.ci95.astype(float)).to_numpy()  # one seed: no band, not a zero-width one
            if panel != "valid_loss" and band.any():
                ax.fill_between(ok.updates, ok.value - ok.ci95, ok.value + ok.ci95, where=band,
                                color=line.get_color(), alpha=0.2)
        majority = table[table.panel == panel].get("majority", pd.Series(dtype=float)).dropna().unique()
        if len(majority) == 1:  # one dev set per task: the chance level every fine-tuning is measured against
            ax.axhline(majority[0], ls="--", lw=1, color="grey", label=f"majority class of dev: {majority[0]:.3f}")
        name = "validation loss (bits / masked token)" if panel == "valid_loss" else f"{panel.upper()} dev accuracy"
        ax.set_title(f"({chr(97 + i)}) {name}", fontsize=10)
        ax.set_xlabel("pre-training updates")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        legend(ax)
    capped = "\nCAPPED (training_cap): a smoke test, not a result" if table.capped.any() else ""
    save_figure(fig, spec["title"] + capped, pdf, mark=mark)


def run(args):
    spec = json.loads(args.spec)
    table = long_table(spec, RunFiles("figure5", metrics=args.metrics, summaries=args.summaries))
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    draw(spec, table, args.pdf, mark=args.scale_note)
    return 0
