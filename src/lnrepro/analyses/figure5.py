"""Draw Xiong et al.'s Figure 5 and write the CSV it plots: (a) BERT validation loss against
pre-training updates, Post-LN vs Pre-LN; (b, c) dev accuracy of each round's checkpoint
fine-tuned on each GLUE task (mean over seeds, 95% confidence band)."""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .plotting import NORM_LABELS, save_figure  # noqa: E402


def add_arguments(p):
    p.add_argument("--spec", required=True, help="JSON: title, runs, tasks, run_settings")
    p.add_argument("--results", default="results", help="holds pretrain/{run}/metrics.csv and finetune/{run}/{task}/")
    p.add_argument("--pdf", required=True, help="the figure")
    p.add_argument("--csv", required=True, help="every plotted point")


def run_label(s):
    """'Pre-LN, lr 3e-4, no warm-up' from a BERT run's settings."""
    if s.get("description"):
        return s["description"]
    warmup = s.get("warmup", 0)
    return (f"{NORM_LABELS[s.get('norm', 'post')]}, lr {s.get('lr', 0):.0e}".replace("e-0", "e-") +
            (f", warm-up {warmup}" if warmup > 1 else ", no warm-up"))


def long_table(spec, results):
    """Every plotted number: panel, run, label, updates, value, ci95, diverged."""
    rows = []
    for run in spec["runs"]:
        label = run_label(spec["run_settings"][run])
        metrics = pd.read_csv(results / "pretrain" / run / "metrics.csv")
        for _, r in metrics.iterrows():
            rows.append({"panel": "valid_loss", "run": run, "label": label, "updates": int(r["updates"]),
                         "value": r["valid_loss"], "ci95": float("nan"), "diverged": int(r["diverged"])})
        for task in spec["tasks"]:
            for path in sorted((results / "finetune" / run / task).glob("round*.summary.csv")):
                s = pd.read_csv(path).iloc[0]
                updates = s["updates"] if s["diverged"] == 0 else float("nan")
                rows.append({"panel": task, "run": run, "label": label, "updates": updates, "value": s["mean_acc"],
                             "ci95": s["ci95"], "diverged": int(s["diverged"])})
    return pd.DataFrame(rows).sort_values(["panel", "run", "updates"], kind="stable")


def draw(spec, table, pdf):
    panels = ["valid_loss"] + list(spec["tasks"])
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    for i, panel in enumerate(panels):
        ax = axes[0][i]
        for run in spec["runs"]:
            curve = table[(table.panel == panel) & (table.run == run) & table.value.notna()]
            (line,) = ax.plot(curve.updates, curve.value, marker="o", ms=3, label=curve.label.iloc[0] if len(curve) else run)
            if panel != "valid_loss":
                ax.fill_between(curve.updates, curve.value - curve.ci95, curve.value + curve.ci95,
                                color=line.get_color(), alpha=0.2)
        name = "validation loss (bits / masked token)" if panel == "valid_loss" else f"{panel.upper()} dev accuracy"
        ax.set_title(f"({chr(97 + i)}) {name}", fontsize=10)
        ax.set_xlabel("pre-training updates")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, spec["title"], pdf)


def run(args):
    spec = json.loads(args.spec)
    table = long_table(spec, Path(args.results))
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    draw(spec, table, args.pdf)
    return 0
