"""A run's outcome, read from its own metrics and BLEU tables (Liu et al. Tables 1-2, Fig 10, and the
claims that a run diverges or trains: one status for all of them).

``diverged`` when the trainer recorded a divergence (loss NaN or exploded, or fp16's loss scale at
its floor; the trainer's reason in ``diverged_reason``), ``not converged``
when its final validation loss stays above the spec's ``converged_below`` (bits/token; a run
stuck on a plateau trains without exploding), else ``converged``. Its BLEU is the last epoch's
of the run's BLEU table given (lnrepro evaluate's bleu.csv, or its bleu_avgN.csv where the spec averages
the last N checkpoints for that run). What a reader must know beside the number is in ``note`` (fewer
checkpoints averaged than asked, and why) and ``capped`` (training_cap: a smoke test, not a result).
"""
import math
import sys

import pandas as pd

from ..args import add_run_files_argument


def run_outcome(metrics_csv, bleu_csv, converged_below=None, average_last=0):
    """{'status', 'diverged_reason', 'bleu', 'valid_loss', 'epochs', 'averaged', 'average_last', 'capped',
    'note'} of one run, from its metrics.csv and its BLEU table (bleu_avgN.csv where average_last is N);
    'averaged' is how many checkpoints the BLEU's model really averaged."""
    metrics = pd.read_csv(metrics_csv)
    bleu = pd.read_csv(bleu_csv)
    check_bleu_is_current(metrics, bleu, bleu_csv)
    status, valid = metrics_status(metrics, converged_below)
    averaged = int(bleu.averaged.iloc[-1]) if average_last and len(bleu) else 0
    return {"status": status, "diverged_reason": diverged_reason(metrics),
            "bleu": float(bleu.bleu.iloc[-1]) if len(bleu) else math.nan, "valid_loss": valid,
            "epochs": int(metrics.epoch.max()), "averaged": averaged, "average_last": average_last,
            "capped": int(metrics.capped.any()), "note": average_note(metrics, average_last, averaged)}


def metrics_status(metrics, converged_below=None):
    """(status, final validation loss in bits) of a run's metrics table: the one verdict of whether a run
    trained, read by Liu et al.'s tables, Fig 10's grid and the claims that a run diverges or converges."""
    finished = metrics[metrics.diverged == 0]
    valid = float(finished.valid_loss.iloc[-1]) if len(finished) else math.nan
    if metrics.diverged.any():
        return "diverged", valid
    if converged_below is not None and not valid < converged_below:
        return "not converged", valid
    return "converged", valid


def status_and_why(metrics, converged_below=None):
    """(status, final validation loss, why in words) of a run's metrics table (the claims' outcome
    verdicts, a sweep's table)."""
    status, valid = metrics_status(metrics, converged_below)
    if status == "diverged":
        why = diverged_reason(metrics) or divergence_text(metrics)
    elif converged_below is None:
        why = f"final valid loss {valid:.3g} bits; no converged_below: only a recorded divergence fails"
    else:
        relation = "<" if status == "converged" else ">="
        why = f"final valid loss {valid:.3g} bits {relation} converged_below {converged_below:g}"
    return status, valid, why


def check_bleu_is_current(metrics, bleu, path):
    """The BLEU read must be the last checkpoint's: a table that stops earlier was not rebuilt."""
    checkpoints = metrics.epoch[metrics.checkpoint.notna()]
    want = int(checkpoints.iloc[-1]) if len(checkpoints) else None
    have = int(bleu.epoch.iloc[-1]) if len(bleu) else None
    if want != have:
        sys.exit(f"{path}: its last BLEU is of epoch {have}, but the run's last checkpoint is of epoch {want}; "
                 f"rebuild it (snakemake --force {path})")


def divergence_text(metrics):
    """'diverged at update 130', 'diverged before its first checkpoint (update 7)', or ''."""
    if not metrics.diverged.any():
        return ""
    update = int(metrics.updates[metrics.diverged == 1].iloc[-1])
    if metrics.checkpoint.notna().any():
        return f"diverged at update {update}"
    return f"diverged before its first checkpoint (update {update})"


def average_note(metrics, asked, averaged):
    """'' when the BLEU is of what was asked, else what it is of: 'avg of 4 of 10 checkpoints: <why>'."""
    if not asked or averaged == asked:
        return ""
    why = divergence_text(metrics) or f"the run has {averaged} epoch checkpoint(s)"
    if not averaged:
        return f"no checkpoint to average: {why}"
    return f"avg of {averaged} of {asked} checkpoints: {why}"


def diverged_reason(metrics):
    """Why the trainer stopped the run: '' when it did not, or when its metrics predate the column."""
    if "diverged_reason" not in metrics or not metrics.diverged.any():
        return ""
    reason = metrics.diverged_reason[metrics.diverged == 1].iloc[-1]
    return "" if pd.isna(reason) else str(reason)


def outcome(spec, files, run):
    """A run's outcome under the spec's threshold, from the files given for it (files: lnrepro.args.RunFiles,
    --metrics and --bleu; the BLEU table is of the model the spec's average_last {run: N} names)."""
    return run_outcome(files("metrics", run), files("bleu", run), spec.get("converged_below"),
                       spec.get("average_last", {}).get(run, 0))


def add_outcome_arguments(p, whose):
    """--metrics and --bleu: the files outcome() reads, each run's own."""
    add_run_files_argument(p, "metrics", f"the metrics.csv of {whose} (lnrepro train's)")
    add_run_files_argument(p, "bleu", f"the BLEU table of {whose}: its bleu.csv, or its bleu_avgN.csv where the "
                           "spec's average_last gives the run N (lnrepro evaluate's)")
