"""A run's checkpoints: written whole or not at all (save_round, atomic_save), read as weights only and
checked to be what their name and place say (load_checkpoint), and resumed only where last.pt is of
this run's settings, data, model shape and processes (resume_state). They hold plain dicts, tensors
and numbers (torch.load(weights_only=True) reads them): no class is pickled by its module path. Also
the loading of the data files a step reads (load_input), which stops on a corrupt one the same way."""
import dataclasses
import errno
import hashlib
import os
import re
import shutil
import time
from pathlib import Path

import torch

from .. import __version__
from .config import result_settings, same_settings, with_precision, without_later_defaults
from .data import dictionary_files
from .progress import log
from .run_lock import temporary_path

# last.pt's layout: 2 = attention's stacked in_proj (older optimizer moments do not fit the
# parameters); 3 = records its data's digests. An older state is not resumed (its epoch weights
# still load for evaluation)
CHECKPOINT_FORMAT = 3


def save_round(model, optimizer, mixed, cfg, rows, epoch, updates, ckpt_dir, world, data):
    """Weights of this round (for evaluation) and the full resumable state (with fp16's loss scaler) and
    what it was trained on (data: file_digests of the task's files), each written atomically."""
    model_cfg = dataclasses.asdict(model.cfg)
    # what it is, beside its name, so evaluation can tell a copied or renamed file (check_checkpoint)
    run = {"epoch": epoch, "updates": updates, "run": ckpt_dir.parent.name, "fingerprint": cfg.fingerprint()}
    atomic_save({"model": model.state_dict(), "model_config": model_cfg, **run}, ckpt_dir / f"epoch{epoch}.pt")
    atomic_save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "loss_scaler": mixed.state_dict(),
                 "model_config": model_cfg,
                 "train_config": cfg.as_dict(), "fingerprint": cfg.fingerprint(), "epoch": epoch,
                 "updates": updates, "seed": cfg.seed, "metrics": rows, "version": __version__, "world": world,
                 "data": data, "format": CHECKPOINT_FORMAT, "run": run["run"]},
                ckpt_dir / "last.pt")


def atomic_save(obj, path):
    """obj in path, whole or not at all: written to path.PID.tmp, synced, renamed over path. A killed job
    or a full disk leaves the previous file (a failed write also removes its .tmp); a full disk stops
    the run with a message naming the file, not torch's "basic_ios::clear: iostream error"."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:  # a Python file, so a full disk raises OSError(ENOSPC)
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())  # a full disk may only show here (delayed allocation)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise SystemExit(f"disk full ({errno.errorcode[e.errno]}) while writing {path}: the checkpoints "
                             f"written before it are intact; free space and rerun, it resumes from "
                             f"{path.parent / 'last.pt'}") from e
        raise
    os.replace(tmp, path)


class Unreadable(Exception):
    """A file that exists but does not load: truncated, empty or garbage."""


def load_torch(path, **kwargs):
    """torch.load(path, weights_only=True), raising Unreadable naming the file for a truncated, empty
    or garbage one (torch's own errors name no file; for garbage it suggests weights_only=False,
    which is unsafe)."""
    try:
        return torch.load(path, weights_only=True, **kwargs)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as e:  # RuntimeError (zip), EOFError (empty), UnpicklingError/KeyError (garbage), OSError
        size = path.stat().st_size if path.exists() else 0
        raise Unreadable(f"{path}: unreadable, {size} bytes (truncated, empty or not written by torch.save: "
                         f"{type(e).__name__})") from e


def load_input(load, path):
    """load(path) of a data file an earlier step wrote; a truncated or corrupt one stops the command
    with its name and how to rebuild it."""
    try:
        return load(path)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as e:
        size = Path(path).stat().st_size
        raise SystemExit(f"{path}: unreadable, {size} bytes (truncated or corrupt: {type(e).__name__}); rebuild "
                         f"it: snakemake --force {path} (or delete it and rerun Snakemake)") from e


def load_checkpoint(path, device="cpu"):
    """An epoch checkpoint's state, weights only; a file that does not load, or whose content is not
    what its name and place say (check_checkpoint), stops the command naming it and the fix."""
    path = Path(path)
    try:
        state = load_torch(path, map_location=device)
    except Unreadable as e:
        raise SystemExit(f"{e}; {rebuild(path)}") from e
    check_checkpoint(path, state)
    return state


def rebuild(path):
    """How to get an epoch checkpoint back: only by retraining its run (the epochs before it are needed)."""
    if path.parent.name != "checkpoints":
        return "replace it"
    return f"retrain its run: rm -r {path.parent} && snakemake --force {path.parent.parent / 'metrics.csv'}"


def check_checkpoint(path, state):
    """An epoch checkpoint named epochN.pt must hold epoch N, and one in a run's checkpoints/ must be of
    that run's settings (the fingerprint of the run's last.pt): a copied or mixed-up file would
    otherwise give one epoch another's BLEU. Checkpoints written before they recorded these pass."""
    named = re.fullmatch(r"epoch(\d+)\.pt", path.name)
    if named and "epoch" in state and state["epoch"] != int(named.group(1)):
        raise SystemExit(f"{path}: holds epoch {state['epoch']}{of_run(state)}, not epoch {named.group(1)} as its "
                         f"name says (a copied or mixed-up checkpoint); {rebuild(path)}")
    last = path.parent / "last.pt"
    if not (named and state.get("fingerprint") and last.exists()):
        return
    try:
        run = load_torch(last, map_location="cpu", mmap=True)  # mapped: its tensors are not read
    except Unreadable:
        return  # the trainer moves it aside at its next start; nothing to compare with
    if run.get("fingerprint") not in (None, state["fingerprint"]):
        raise SystemExit(f"{path}: epoch {state['epoch']}{of_run(state)} with settings {state['fingerprint']}, but "
                         f"{last} is of settings {run['fingerprint']}{of_run(run)}: a checkpoint of another run "
                         f"(copied in?); {rebuild(path)}")


def of_run(state):
    return f" of run '{state['run']}'" if state.get("run") else ""


def data_files(data_dir):
    """The files of a binarized data dir that a task trains and validates on: its dictionaries (one joined
    or one per side: lnrepro.core.data), train.pt, valid.pt."""
    return [*dictionary_files(data_dir), data_dir / "train.pt", data_dir / "valid.pt"]


def file_digests(paths):
    """{file name: sha256} of the files a run trains and validates on. Read in chunks, so a
    multi-GB train.pt costs seconds at each run start, not its size in memory."""
    digests = {}
    for path in paths:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 24):
                h.update(chunk)
        digests[path.name] = h.hexdigest()
    return digests


def differing(saved, current):
    """The keys whose values differ between two dicts (a key missing on one side differs)."""
    return sorted(k for k in saved.keys() | current.keys() if saved.get(k) != current.get(k))


def differ(names):
    return f"{', '.join(names)} differ{'s' if len(names) == 1 else ''}"


def stale_reason(state, cfg, world, identity):
    """Why a saved state cannot continue this run, or None when it can. identity: this run's
    {"data": file digests, "model_config": the model's config}; None checks the rest only."""
    fmt = state.get("format", 1)
    if fmt != CHECKPOINT_FORMAT:
        return f"was written by an older version of lnrepro (checkpoint format {fmt}, now {CHECKPOINT_FORMAT})"
    if state.get("world", 1) != world:  # it sets the batch of every update
        return f"was trained by {state.get('world', 1)} process(es), this run has {world}"
    if not same_settings(state, cfg):
        keys = differing(result_settings(with_precision(state.get("train_config", {}))), cfg.settings())
        return f"was trained with other settings ({differ(keys) if keys else 'fingerprint differs'})"
    if identity is None:
        return None
    # data first: a new vocabulary also changes the model's shape, and the data is the cause
    for what, label in (("data", "on other data"), ("model_config", "for another model shape")):
        keys = differing(without_later_defaults(state.get(what) or {}), without_later_defaults(identity[what]))
        if keys:
            return f"was trained {label} ({differ(keys)})"
    return None


def resume_state(ckpt_dir, cfg, world=1, identity=None):
    """The last complete round's state, or None. Starting afresh empties ckpt_dir (the loop's own
    folder), so no epoch checkpoint of other settings or data is left for evaluation to read.
    identity: see stale_reason; fit's other processes pass None, after rank 0 has checked it."""
    last = ckpt_dir / "last.pt"
    if not last.exists():
        clear(ckpt_dir)  # epoch checkpoints without their last.pt: of an unknown run
        return None
    try:
        state = load_torch(last, map_location="cpu")
    except Unreadable as e:  # moved aside, never deleted: the user may want it
        aside = last.with_name(f"last.pt.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(last, aside)
        log(f"{e}; moved aside to {aside.name}; starting afresh (its epoch checkpoints cannot resume a run: "
            f"they hold no optimizer state)")
        clear(ckpt_dir)
        return None
    reason = stale_reason(state, cfg, world, identity)
    if reason:
        log(f"{last} {reason}; starting afresh")
        clear(ckpt_dir)
        return None
    log(f"resuming after epoch {state['epoch']} ({state['updates']} updates)")
    return state


def clear(ckpt_dir):
    """Empty the run's checkpoint folder, but for the files moved aside as corrupt (last.pt.corrupt-*)."""
    for path in ckpt_dir.iterdir():
        if ".corrupt-" not in path.name:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def resumes(ckpt_dir):
    return ("resumes from " + str(ckpt_dir / "last.pt")) if (ckpt_dir / "last.pt").exists() else "starts afresh"
