"""Fig 10 of Liu et al. 2020: RAdam without warm-up over learning rate x beta2, per norm.

One heatmap per norm (Post-LN, Pre-LN, Admin): a cell per (lr, beta2) run, coloured by its
final test BLEU (one colour bar for all panels) and labelled with it, or grey and labelled with its outcome when the run diverged or
did not converge (outcomes as in lnrepro.analyses.outcomes); a BLEU of fewer averaged checkpoints
than asked says so in its cell, and capped runs (training_cap) mark the title. The paper: Post-LN
diverges in 7 of 15 settings (large lr, small beta2), Pre-LN and Admin in none.
"""
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..args import RunFiles, add_scale_note_argument, json_object  # noqa: E402
from .outcomes import add_outcome_arguments, outcome  # noqa: E402
from .plotting import NORM_LABELS, save_figure  # noqa: E402

OUTCOME = ["status", "diverged_reason", "bleu", "valid_loss", "epochs", "averaged", "average_last", "capped",
           "note"]  # of each cell's run
COLUMNS = ["norm", "lr", "beta2", "run", *OUTCOME]


def grid_table(spec, files):
    rows = []
    for cell in spec["lr_grid"]["cells"]:
        o = outcome(spec, files, cell["run"])
        rows.append({"norm": cell["norm"], "lr": cell["lr"], "beta2": cell["beta2"], "run": cell["run"],
                     **{k: o[k] for k in OUTCOME}})
    return pd.DataFrame(rows, columns=COLUMNS)


def draw(table, title, pdf, mark=None):
    norms = list(dict.fromkeys(table.norm))
    ok = table[table.status == "converged"].bleu
    vmin, vmax = (ok.min(), ok.max()) if len(ok) else (0, 1)
    fig, axes = plt.subplots(1, len(norms), figsize=(3.8 * len(norms) + 1, 3.6), squeeze=False, layout="constrained")
    for ax, norm in zip(axes[0], norms):
        t = table[table.norm == norm]
        lrs, betas = sorted(t.lr.unique()), sorted(t.beta2.unique())
        grid = np.full((len(lrs), len(betas)), np.nan)
        for r in t.itertuples():
            i, j = lrs.index(r.lr), betas.index(r.beta2)
            if r.status == "converged":
                grid[i, j] = r.bleu
            text = f"{r.bleu:.1f}" if r.status == "converged" else r.status.replace("not converged", "not conv.")
            if r.status == "converged" and r.averaged < r.average_last:
                text += f"\navg {r.averaged}/{r.average_last}"  # not the model asked for: say so in the cell
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
        image = ax.imshow(np.where(np.isnan(grid), vmin, grid), cmap="Greens", vmin=vmin, vmax=max(vmax, vmin + 1e-9),
                          origin="lower", aspect="auto", alpha=0.85)
        ax.imshow(np.where(np.isnan(grid), 1.0, math.nan), cmap="Greys", vmin=0, vmax=2, origin="lower",
                  aspect="auto")  # failed cells in grey
        failed = int((t.status != "converged").sum())
        ax.set_title(f"{NORM_LABELS[norm]}: {failed}/{len(t)} failed", fontsize=10)
        ax.set_xticks(range(len(betas)), [str(b) for b in betas])
        ax.set_yticks(range(len(lrs)), [f"{lr:g}" for lr in lrs])
        ax.set_xlabel("beta2")
        ax.set_ylabel("learning rate")
    # one scale for every panel (vmin, vmax over all converged cells): one colour bar, in BLEU
    fig.colorbar(image, ax=axes[0].tolist(), label="test BLEU (grey: failed)")
    if table.capped.any():
        title += "\nCAPPED (training_cap): a smoke test, not a result"
    save_figure(fig, title, pdf, tight=False, mark=mark)  # laid out by constrained layout (the colour bar)
    return fig


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object("lr_grid"),
                   help="JSON: lr_grid {title, cells [{norm, lr, beta2, run}]}, converged_below, average_last {run: N}")
    add_outcome_arguments(p, "every cell's run")
    p.add_argument("--pdf", required=True, help="the heatmap")
    p.add_argument("--csv", required=True, help="one row per grid cell: status, BLEU, valid loss")
    add_scale_note_argument(p)


def run(args):
    spec = json.loads(args.spec)
    files = RunFiles("lr-grid", metrics=args.metrics, bleu=args.bleu)
    table = grid_table(spec, files)
    for path in (args.csv, args.pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    draw(table, spec["lr_grid"]["title"], args.pdf, mark=args.scale_note)
    print(table.to_string(index=False))
    return 0
