"""A sweep's phase diagram (issue 45, the lab's first figure): one panel per value of the facet axis (the
normalization scheme), cells over two other axes (depth x warm-up, or depth x lr), each coloured by the
share of its seeds that failed (diverged, or not converged below the sweep's converged_below: as
lnrepro.analyses.sweep_table judged them) and labelled with the seeds' mean final validation loss and
how many failed. Read from the sweep's table (results/sweeps/NAME.csv), written as a CSV of one row per
panel and cell."""
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..args import add_scale_note_argument, json_object  # noqa: E402
from .plotting import NORM_FN_LABELS, NORM_LABELS, save_figure  # noqa: E402

AXIS_LABELS = {"layers": "layers per side", "warmup": "warm-up (updates)", "lr": "learning rate",
               "adam_beta2": "Adam beta2"}
CELL_COLUMNS = ["seeds", "failed", "diverged", "failed_share", "mean_final_valid_loss", "sd_final_valid_loss",
                "statuses", "runs"]


def value_label(axis, value):
    if axis in ("norm", "enc_norm", "dec_norm"):
        return NORM_LABELS.get(value, str(value))
    if axis == "norm_fn":
        return NORM_FN_LABELS.get(value, str(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def phase_cells(table, facet, y, x):
    """One row per (facet, y, x): the seeds' statuses summed up; a diverged seed's loss is its last
    finished epoch's (the table's final_valid_loss), so the mean says where the runs stopped."""
    keys = [k for k in (facet, y, x) if k]
    rows = []
    for values, cell in table.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        failed = int((cell.status != "converged").sum())
        losses = cell.final_valid_loss.dropna()
        rows.append({**dict(zip(keys, values)), "seeds": len(cell), "failed": failed,
                     "diverged": int((cell.status == "diverged").sum()), "failed_share": failed / len(cell),
                     "mean_final_valid_loss": float(losses.mean()) if len(losses) else math.nan,
                     "sd_final_valid_loss": float(losses.std(ddof=1)) if len(losses) > 1 else math.nan,
                     "statuses": "/".join(cell.status), "runs": " ".join(cell.run)})
    return pd.DataFrame(rows, columns=keys + CELL_COLUMNS)


def failed_words(converged_below):
    """What 'failed' means in this figure: the sweep table's reading, stated where the colours are."""
    if converged_below is None:
        return "diverged (no converged_below: a run that trains without diverging counts)"
    return f"diverged, or final valid loss >= {converged_below:g} bits"


def draw(cells, facet, y, x, title, pdf, mark=None, capped=False, converged_below=None):
    facets = list(dict.fromkeys(cells[facet])) if facet else [None]
    columns = len(facets) if len(facets) <= 4 else min(math.ceil(len(facets) / 2), 4)  # six schemes: 2 rows of 3
    rows = math.ceil(len(facets) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.3 * columns + 1.2, 2.9 * rows + 0.6), squeeze=False,
                             layout="constrained")
    ys, xs = sorted(cells[y].unique()), sorted(cells[x].unique())
    for ax, value in zip(axes.flat, facets):
        panel = cells[cells[facet] == value] if facet else cells
        grid = np.full((len(ys), len(xs)), np.nan)
        for r in panel.itertuples():
            i, j = ys.index(getattr(r, y)), xs.index(getattr(r, x))
            grid[i, j] = r.failed_share
            spread = "" if math.isnan(r.sd_final_valid_loss) else f" ± {r.sd_final_valid_loss:.2f}"
            ax.text(j, i, f"{r.mean_final_valid_loss:.2f}{spread}\n{r.failed}/{r.seeds} failed", ha="center",
                    va="center", fontsize=8)
        image = ax.imshow(grid, cmap="RdYlGn_r", vmin=0, vmax=1, origin="lower", aspect="auto", alpha=0.8)
        failed, total = int(panel.failed.sum()), int(panel.seeds.sum())
        ax.set_title(f"{value_label(facet, value) if facet else ''}: {failed}/{total} runs failed".lstrip(": "), fontsize=10)
        ax.set_xticks(range(len(xs)), [value_label(x, v) for v in xs])
        ax.set_yticks(range(len(ys)), [value_label(y, v) for v in ys])
        ax.set_xlabel(AXIS_LABELS.get(x, x))
        ax.set_ylabel(AXIS_LABELS.get(y, y))
    for ax in list(axes.flat)[len(facets):]:
        ax.set_visible(False)
    fig.colorbar(image, ax=axes.ravel().tolist(), label=f"share of seeds failed:\n{failed_words(converged_below)}")
    title += "\ncell: mean ± sd of the final valid loss (bits/token) over seeds, seeds failed"
    if capped:
        title += "\nCAPPED (training_cap): a smoke test, not a result"
    save_figure(fig, title, pdf, tight=False, mark=mark)
    return fig


def add_cell_figure_arguments(p, x_words, csv_help):
    """A figure drawn from the phase diagram's cells (lnrepro sweep-thresholds, sweep-lr-sensitivity)."""
    p.add_argument("--cells", required=True, help="the phase diagram's cells (lnrepro sweep-phase --csv)")
    p.add_argument("--spec", required=True, type=json_object("title", "y", "x"),
                   help=f"JSON: {{title, facet (an axis or null), y (depth), x ({x_words})}}")
    p.add_argument("--pdf", required=True, help="the figure (and its PNG beside it)")
    p.add_argument("--csv", required=True, help=csv_help)
    add_scale_note_argument(p)


def run_cell_figure(args, figure, x_axes, columns, make_rows, draw_rows):
    """A figure from the phase diagram's cells along x (one of x_axes): its rows (make_rows(cells, facet,
    y, x)) to --csv, drawn (draw_rows(rows, facet, y, x, title, pdf, mark)) to --pdf. Refused where the
    spec's x is not one it reads, or the cells lack its axes or the columns it reads."""
    spec = json.loads(args.spec)
    facet, y, x = spec.get("facet"), spec["y"], spec["x"]
    if x not in x_axes:
        raise SystemExit(f"{figure}: x axis '{x}' is not one it reads ({', '.join(x_axes)})")
    cells = pd.read_csv(args.cells, keep_default_na=False, na_values=[""])
    missing = [a for a in (facet, y, x, *columns) if a and a not in cells.columns]
    if missing:
        raise SystemExit(f"{args.cells}: no column {', '.join(missing)}")
    rows = make_rows(cells, facet, y, x)
    for path in (args.csv, args.pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    rows.to_csv(args.csv, index=False)
    draw_rows(rows, facet, y, x, spec["title"], args.pdf, mark=args.scale_note)
    print(rows.to_string(index=False))
    return 0


def add_arguments(p):
    p.add_argument("--table", required=True, help="the sweep's table (lnrepro sweep-table)")
    p.add_argument("--spec", required=True, type=json_object("title", "y", "x"),
                   help="JSON: {title, facet (an axis or null), y, x, converged_below}: the axes of the panels and "
                        "their cells, and the sweep table's threshold (said in the colour bar's label)")
    p.add_argument("--pdf", required=True, help="the phase diagram (and its PNG beside it)")
    p.add_argument("--csv", required=True, help="one row per panel and cell: seeds, failed, mean final valid loss")
    add_scale_note_argument(p)


def run(args):
    spec = json.loads(args.spec)
    table = pd.read_csv(args.table, keep_default_na=False, na_values=[""])
    axes = [a for a in (spec.get("facet"), spec["y"], spec["x"]) if a]
    missing = [a for a in axes if a not in table.columns]
    if missing:
        raise SystemExit(f"{args.table}: no column {', '.join(missing)} (the sweep's axes are its columns)")
    cells = phase_cells(table, spec.get("facet"), spec["y"], spec["x"])
    for path in (args.csv, args.pdf):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    cells.to_csv(args.csv, index=False)
    draw(cells, spec.get("facet"), spec["y"], spec["x"], spec["title"], args.pdf, mark=args.scale_note,
         capped=bool(table.capped.any()), converged_below=spec.get("converged_below"))
    print(cells.drop(columns=["runs"]).to_string(index=False))
    return 0
