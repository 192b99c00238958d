"""A sweep's table (config `sweeps:`, lnrepro.pipeline.sweeps): one row per cell and seed, read from each
run's metrics.csv given on the command line: its axis values, its status as Liu et al.'s tables judge a
run (lnrepro.analyses.outcomes: diverged, not converged below `converged_below`, converged) and why,
its epochs and its validation loss (final and best, bits per token). The lab's figures and claims read
this table, not the runs' folders."""
import json
import math

import pandas as pd

from ..args import json_object, run_path_pair
from .outcomes import status_and_why

COLUMNS = ["sweep", "run", "seed", "status", "why", "epochs", "updates", "final_valid_loss", "best_valid_loss",
           "final_train_loss", "capped"]


def cell_row(sweep, run, values, seed, metrics, converged_below):
    status, valid, why = status_and_why(metrics, converged_below)  # as the claims' outcome verdicts say it
    finished = metrics[metrics.diverged == 0]
    return {"sweep": sweep, "run": run, **values, "seed": seed, "status": status, "why": why,
            "epochs": int(metrics.epoch.max()), "updates": int(metrics.updates.max()), "final_valid_loss": valid,
            "best_valid_loss": float(finished.valid_loss.min()) if len(finished) else math.nan,
            "final_train_loss": float(finished.train_loss.iloc[-1]) if len(finished) else math.nan,
            "capped": int(metrics.capped.any())}


def sweep_table(spec, metrics_files):
    """spec: {'sweep', 'axes': [...], 'cells': [[run, {axis: value}, seed], ...], 'converged_below'};
    metrics_files: {run: path of its metrics.csv}. A cell without its file stops the table (no silent gap)."""
    missing = [run for run, _, _ in spec["cells"] if run not in metrics_files]
    if missing:
        raise SystemExit(f"sweep {spec['sweep']}: no metrics given for {', '.join(missing[:5])}"
                         f"{f' and {len(missing) - 5} more' if len(missing) > 5 else ''}")
    rows = [cell_row(spec["sweep"], run, values, seed, pd.read_csv(metrics_files[run]), spec.get("converged_below"))
            for run, values, seed in spec["cells"]]
    columns = COLUMNS[:2] + list(spec["axes"]) + COLUMNS[2:]
    return pd.DataFrame(rows, columns=columns)


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object("sweep", "axes", "cells"), help="JSON: {sweep, axes, cells, converged_below}")
    p.add_argument("--metrics", nargs="+", required=True, type=run_path_pair, metavar="RUN=PATH",
                   help="each cell's run and its metrics.csv")
    p.add_argument("--csv", required=True, help="the table: one row per cell and seed")


def run(args):
    spec = json.loads(args.spec)
    table = sweep_table(spec, dict(args.metrics))
    table.to_csv(args.csv, index=False)
    print(f"sweep {spec['sweep']}: {len(table)} runs: {json.dumps(table.status.value_counts().to_dict())}")
    return 0
