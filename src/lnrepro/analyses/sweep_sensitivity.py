"""A sweep's learning-rate sensitivity (issue 45, the lab's figure (d)): for each scheme (the phase
diagram's facet) and depth (its y axis), the mean excess loss over the lr grid: each lr cell's mean
final validation loss minus the best of that scheme at that depth. Read from the phase diagram's cells
(lnrepro sweep-phase's CSV).

Our reading, not the papers': the excess is over the scheme's own best lr, so it measures how much the
choice of lr matters to it, not how good it is (the phase diagram shows that). A cell whose seeds all
diverged before an epoch finished has no loss: it is left out of the mean and counted beside it, as the
bar's label says; a failed cell with a loss (not converged, or diverged after some epochs: its last
finished epoch's) is in the mean."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .plotting import legend, save_figure  # noqa: E402
from .sweep_phase import AXIS_LABELS, add_cell_figure_arguments, run_cell_figure, value_label  # noqa: E402

COLUMNS = ["mean_excess_loss", "max_excess_loss", "best_lr", "best_loss", "lrs", "lrs_without_loss", "failed_cells"]


def sensitivity_rows(cells, facet, y, x="lr"):
    rows = []
    keys = [k for k in (facet, y) if k]
    for values, group in cells.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        measured = group.dropna(subset=["mean_final_valid_loss"])
        if len(measured):
            best = measured.loc[measured.mean_final_valid_loss.idxmin()]
            excess = measured.mean_final_valid_loss - best.mean_final_valid_loss
            mean, worst, best_lr, best_loss = float(excess.mean()), float(excess.max()), best[x], best.mean_final_valid_loss
        else:
            mean = worst = best_lr = best_loss = math.nan
        rows.append({**dict(zip(keys, values)), "mean_excess_loss": mean, "max_excess_loss": worst, "best_lr": best_lr,
                     "best_loss": best_loss, "lrs": len(measured), "lrs_without_loss": len(group) - len(measured),
                     "failed_cells": int((group.failed > 0).sum())})
    return pd.DataFrame(rows, columns=keys + COLUMNS)


def draw(rows, facet, y, x, title, pdf, mark=None):
    """Bars grouped by depth, one per scheme, labelled with the failed lr cells."""
    depths = sorted(rows[y].unique())
    facets = list(dict.fromkeys(rows[facet])) if facet else [None]
    width = 0.8 / len(facets)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(depths) * len(facets) ** 0.5 + 3), 4.2), layout="constrained")
    for k, value in enumerate(facets):
        bars = rows[rows[facet] == value] if facet else rows
        positions = np.array([depths.index(d) for d in bars[y]]) + (k - (len(facets) - 1) / 2) * width
        heights = bars.mean_excess_loss.fillna(0).to_numpy()
        drawn = ax.bar(positions, heights, width, label=value_label(facet, value) if facet else None)
        for bar, r in zip(drawn, bars.itertuples()):
            text = f"{r.failed_cells}/{r.lrs + r.lrs_without_loss}" + ("\nno loss" if math.isnan(r.mean_excess_loss) else "")
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                        fontsize=6, xytext=(0, 1), textcoords="offset points")
    ax.set_xticks(range(len(depths)), [value_label(y, d) for d in depths])
    ax.set_xlabel(AXIS_LABELS.get(y, y))
    ax.set_ylabel("mean excess final valid loss over the lr grid\n(bits/token above the scheme's best lr)")
    if facet:
        legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the plot: never over a bar or line
    title += "\nbar label: lr cells failed / lr cells (a cell without a loss is left out of the mean)"
    save_figure(fig, title, pdf, tight=False, mark=mark)
    return fig


def add_arguments(p):
    add_cell_figure_arguments(p, "lr", "one row per scheme and depth: mean and largest excess loss, best lr")


def run(args):
    return run_cell_figure(args, "sweep-lr-sensitivity", ("lr",), ["failed", "mean_final_valid_loss"], sensitivity_rows, draw)
