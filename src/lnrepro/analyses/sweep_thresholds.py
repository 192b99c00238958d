"""A sweep's thresholds against depth (issue 45, the lab's figure (b)): for each scheme (the phase
diagram's facet) and depth (its y axis), the edge of what trains along its x axis: the minimum warm-up
that trains, or the critical learning rate (the largest lr that trains). Read from the phase diagram's
cells (lnrepro sweep-phase's CSV: a cell trains where none of its seeds failed).

Our reading, not the papers': neither paper defines a critical lr or a minimum warm-up. A cell "trains"
where every seed converged (the sweep table's status); the threshold is the grid value at the edge, so
it is a bound, not a measurement between grid values; where the trained values are not contiguous up
to the edge (a larger warm-up failing again), the CSV says so."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..settings import SAFER_SIDE  # noqa: E402
from .plotting import legend, save_figure  # noqa: E402
from .sweep_phase import AXIS_LABELS, add_cell_figure_arguments, run_cell_figure, value_label  # noqa: E402

THRESHOLD_WORDS = {"warmup": "minimum warm-up that trains", "lr": "critical learning rate (the largest that trains)"}
AXIS_WORDS = {"warmup": "minimum warm-up\nthat trains (updates)", "lr": "critical lr\n(the largest that trains)"}
COLUMNS = ["threshold", "bound", "contiguous", "trained", "failed_values", "cells"]


def grid_text(values):
    """Grid values as text that reads back exactly (str of a float round-trips; the figure parses it)."""
    return " ".join(str(v) for v in values)


def threshold_rows(cells, facet, y, x):
    """One row per (facet, y): the edge along x of the cells that trained (no seed failed).

    bound: 'edge' where a grid value beyond the threshold failed; 'grid end' where every value on the
    risky side trained (the true edge lies beyond the grid); 'none trains' where no cell trained."""
    larger_is_safer = SAFER_SIDE[x] == "larger"
    rows = []
    keys = [k for k in (facet, y) if k]
    for values, group in cells.groupby(keys, sort=False):
        values = values if isinstance(values, tuple) else (values,)
        grid = sorted(group[x])
        trained = sorted(group[group.failed == 0][x])
        failed = sorted(group[group.failed > 0][x])
        if not trained:
            threshold, bound, contiguous = None, "none trains", True
        else:
            threshold = trained[0] if larger_is_safer else trained[-1]
            risky_end = grid[0] if larger_is_safer else grid[-1]
            bound = "grid end" if threshold == risky_end else "edge"
            # every value on the safe side of the threshold trains too
            safe_side = [v for v in grid if (v >= threshold if larger_is_safer else v <= threshold)]
            contiguous = set(safe_side) <= set(trained)
        rows.append({**dict(zip(keys, values)), "threshold": threshold, "bound": bound, "contiguous": contiguous,
                     "trained": grid_text(trained), "failed_values": grid_text(failed),
                     "cells": len(group)})
    return pd.DataFrame(rows, columns=keys + COLUMNS)


def draw(rows, facet, y, x, title, pdf, mark=None):
    """Depth on the horizontal axis, the grid's x values as rows plus 'none trains' beyond the risky end,
    a line per scheme (a little apart, so that equal thresholds stay visible)."""
    grid = sorted({float(v) for cell in rows.trained.tolist() + rows.failed_values.tolist() for v in cell.split()})
    larger_is_safer = SAFER_SIDE[x] == "larger"
    # 'none trains' sits past the grid's safest value (a longer warm-up, a smaller lr would be needed)
    none_level = len(grid) if larger_is_safer else -1
    depths = sorted(rows[y].unique())
    facets = list(dict.fromkeys(rows[facet])) if facet else [None]
    fig, ax = plt.subplots(figsize=(6.4, 4.8), layout="constrained")
    for k, value in enumerate(facets):
        line = rows[rows[facet] == value] if facet else rows
        offset = (k - (len(facets) - 1) / 2) * 0.06
        xs, ys, open_marks = [], [], []
        for r in line.sort_values(y).itertuples():
            level = none_level if pd.isna(r.threshold) else grid.index(float(r.threshold))
            xs.append(depths.index(getattr(r, y)) + offset)
            ys.append(level + offset)
            open_marks.append(r.bound != "edge")
        label = value_label(facet, value) if facet else None
        (drawn,) = ax.plot(xs, ys, "-", label=label)
        for px, py, hollow in zip(xs, ys, open_marks):
            ax.plot(px, py, "o", color=drawn.get_color(), markerfacecolor="white" if hollow else drawn.get_color())
    ax.set_xticks(range(len(depths)), [value_label(y, d) for d in depths])
    ticks = {i: value_label(x, v) for i, v in enumerate(grid)} | {none_level: "none trains"}
    ax.set_yticks(sorted(ticks), [ticks[i] for i in sorted(ticks)])
    ax.set_xlabel(AXIS_LABELS.get(y, y))
    ax.set_ylabel(AXIS_WORDS[x])
    ax.set_xlim(-0.5, len(depths) - 0.5)
    ax.set_ylim(min(ticks) - 0.5, max(ticks) + 0.5)
    if facet:
        legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the plot: never over a bar or line
    title += (f"\n{THRESHOLD_WORDS[x]} against depth; a cell trains where no seed failed; hollow: the grid's end "
              "(the edge lies beyond it) or none trains")
    save_figure(fig, title, pdf, tight=False, mark=mark)
    return fig


def add_arguments(p):
    add_cell_figure_arguments(p, "warmup or lr", "one row per scheme and depth: its threshold and what trained")


def run(args):
    return run_cell_figure(args, "sweep-thresholds", tuple(SAFER_SIDE), ["failed"], threshold_rows, draw)
