"""Bounded disk: which of a run's epoch checkpoints no later step of the config reads, their deletion and
its manifest (the command: lnrepro.training.retain; torch-free, so the workflow and the plan import it).

A run's checkpoints are read by its consumers (workflow/rules/retention.smk says which and what
each needs); the workflow runs `lnrepro retain` once every one of them has finished. What each needs,
as ``needs`` (JSON):

- ``average_last`` N: the last N checkpoints (evaluate --average-last, Liu et al.'s tables);
- ``after_updates`` U: the first checkpoint with U updates done (Fig 3's probe after warm-up;
  a run that ends before, e.g. capped: its last, as probe_gradients.checkpoint_after reads);
- ``update_pairs``: [i, ...] the pairs (i, i+1), or "all" (Liu et al. Figs 3 and 11);
- ``last``: true, the last checkpoint (Liu et al. Figs 7-8);
- ``rounds``: [r, ...] these rounds' checkpoints (BERT fine-tuning).

Per-epoch decoding (bleu.csv) reads every checkpoint but keeps its results (BLEU and hypotheses
per epoch), so it is waited for and not kept for: after it, a run keeps only what these need.
needed_epochs is the one place that turns needs into epochs: this command and the cost plan
(lnrepro plan, with its estimated updates per epoch) both call it.

Only files the training wrote are deleted: those its metrics.csv names (checkpoints/epochN.pt);
last.pt (resume) and anything else in the folder stay. The manifest (retained.json, beside
metrics.csv) lists what was kept and deleted; a later command that needs a deleted checkpoint
names it and the fix (deleted_note).
"""
import csv
import json
import re
from pathlib import Path

MANIFEST = "retained.json"
EPOCH_FILE = re.compile(r"checkpoints/epoch(\d+)\.pt")


# ---- what is needed: one function for the prune step and the plan --------------------------------
def needed_epochs(needs, checkpoints):
    """The epochs to keep of checkpoints [(epoch, updates done), ...] (in order) under needs."""
    epochs = [e for e, _ in checkpoints]
    if not epochs:
        return []
    keep = set(epochs[-needs["average_last"]:]) if needs.get("average_last") else set()
    if needs.get("last"):
        keep.add(epochs[-1])
    if "after_updates" in needs:
        keep.add(epoch_after(checkpoints, needs["after_updates"]))
    keep |= pair_epochs(epochs, needs.get("update_pairs"))
    keep |= set(needs.get("rounds", [])) & set(epochs)
    return sorted(keep)


def epoch_after(checkpoints, updates):
    """The first checkpoint with `updates` done; the last where none has (a capped run's)."""
    return next((e for e, done in checkpoints if done >= updates), checkpoints[-1][0])


def pair_epochs(epochs, firsts):
    """Both epochs of each consecutive pair (i, i+1) whose i is in firsts ("all": every i)."""
    have = set(epochs)
    starts = have if firsts == "all" else set(firsts or [])
    return {e for i in starts if i in have and i + 1 in have for e in (i, i + 1)}


# ---- the prune step ---------------------------------------------------------------------------
def trained_checkpoints(metrics_csv):
    """[(epoch, updates, path)] of the checkpoints the training recorded writing (metrics.csv)."""
    run_dir = Path(metrics_csv).parent
    with open(metrics_csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("checkpoint")]
    found = []
    for r in rows:
        named = EPOCH_FILE.fullmatch(r["checkpoint"])
        if named and int(named.group(1)) == int(r["epoch"]):  # anything else is not ours to delete
            found.append((int(r["epoch"]), int(r["updates"]), run_dir / r["checkpoint"]))
    return found


def file_entry(path, run_dir):
    return {"file": str(path.relative_to(run_dir)), "bytes": path.stat().st_size if path.exists() else 0}


def prune(metrics_csv, needs):
    """Delete the checkpoints needs do not keep; the manifest's content."""
    run_dir = Path(metrics_csv).parent
    found = trained_checkpoints(metrics_csv)
    keep = set(needed_epochs(needs, [(e, u) for e, u, _ in found]))
    kept, deleted, absent = [], [], []
    for epoch, _, path in found:
        if not path.exists():
            absent.append(str(path.relative_to(run_dir)))  # deleted earlier, or by hand
        elif epoch in keep:
            kept.append(file_entry(path, run_dir))
        else:
            deleted.append(file_entry(path, run_dir))
            path.unlink()
    last = run_dir / "checkpoints" / "last.pt"
    if last.exists():
        kept.append(file_entry(last, run_dir))
    return {"run": run_dir.name, "needs": needs, "kept": kept, "deleted": deleted, "absent": absent,
            "bytes_kept": sum(k["bytes"] for k in kept), "bytes_freed": sum(d["bytes"] for d in deleted)}


# ---- a later step that needs a deleted checkpoint ---------------------------------------------
def deleted_note(path):
    """One line where `path` is a checkpoint its run's manifest lists as deleted, else None."""
    path = Path(path)
    manifest = path.parent.parent / MANIFEST
    if path.parent.name != "checkpoints" or not manifest.exists():
        return None
    try:
        listed = json.loads(manifest.read_text())
        gone = {d["file"] for d in listed["deleted"]} | set(listed["absent"])  # absent: deleted by an earlier pass
    except (ValueError, KeyError, TypeError):
        return None
    if f"checkpoints/{path.name}" not in gone:
        return None
    return (f"{path}: deleted by checkpoint retention after the steps of that time had read it ({manifest}); "
            f"this step needs it now: retrain the run (rm -r {path.parent} && snakemake --force "
            f"{path.parent.parent / 'metrics.csv'}), with checkpoints: {{keep: all}} in the config to keep every one")
