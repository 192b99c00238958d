"""A run's outcome, read from its own metrics and BLEU tables (Liu et al. Tables 1-2, Fig 10).

``diverged`` when the trainer recorded a divergence (loss NaN or exploded, or fp16's loss scale at
its floor; the trainer's reason in ``diverged_reason``), ``not converged``
when its final validation loss stays above the spec's ``converged_below`` (bits/token; a run
stuck on a plateau trains without exploding), else ``converged``. Its BLEU is the last epoch's
of eval/RUN/bleu.csv, or of eval/RUN/bleu_avgN.csv where the spec averages the last N
checkpoints for that run.
"""
import math
from pathlib import Path

import pandas as pd


def run_outcome(runs_dir, run, converged_below=None, average_last=0):
    """{'status', 'diverged_reason', 'bleu', 'valid_loss', 'epochs', 'averaged'} of one run."""
    runs_dir = Path(runs_dir)
    metrics = pd.read_csv(runs_dir / "train" / run / "metrics.csv")
    name = f"bleu_avg{average_last}.csv" if average_last else "bleu.csv"
    bleu = pd.read_csv(runs_dir / "eval" / run / name)
    finished = metrics[metrics.diverged == 0]
    valid = float(finished.valid_loss.iloc[-1]) if len(finished) else math.nan
    if metrics.diverged.any():
        status = "diverged"
    elif converged_below is not None and not valid < converged_below:
        status = "not converged"
    else:
        status = "converged"
    return {"status": status, "diverged_reason": diverged_reason(metrics),
            "bleu": float(bleu.bleu.iloc[-1]) if len(bleu) else math.nan, "valid_loss": valid,
            "epochs": int(metrics.epoch.max()), "averaged": average_last}


def diverged_reason(metrics):
    """Why the trainer stopped the run: '' when it did not, or when its metrics predate the column."""
    if "diverged_reason" not in metrics or not metrics.diverged.any():
        return ""
    reason = metrics.diverged_reason[metrics.diverged == 1].iloc[-1]
    return "" if pd.isna(reason) else str(reason)


def outcome(spec, runs_dir, run):
    """A run's outcome under the spec's threshold, its BLEU averaged as the spec says (run -> N)."""
    return run_outcome(runs_dir, run, spec.get("converged_below"), spec.get("average_last", {}).get(run, 0))
