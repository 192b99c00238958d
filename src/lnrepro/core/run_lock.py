"""One trainer per run folder.

Two trainers of one folder (a second Snakemake after `--unlock`, a SLURM job restarted while the
first still runs) would interleave their checkpoints and metrics, and one starting afresh would
empty the folder under the other. A trainer therefore holds an exclusive lock on OUT/.lnrepro.lock
for its whole life; a second one is refused at once, naming the first. The lock is the kernel's
(flock): it goes with the process however it ends (kill -9 included), so a stale lock file never
blocks a rerun. Its text (PID, host, start) is only for the message.
"""
import fcntl
import os
import socket
import time
from pathlib import Path

LOCK_NAME = ".lnrepro.lock"
TMP_SUFFIX = ".tmp"  # lnrepro.core.checkpoint's and loop's temporary files: NAME.PID.tmp


class RunFolderInUse(SystemExit):
    """Another live process trains into this folder."""


def lock_run_folder(out_dir):
    """Take the folder's lock for this process (the open file keeps it); RunFolderInUse if another holds it."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / LOCK_NAME
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "a process that wrote no details"
        f.close()
        raise RunFolderInUse(f"lnrepro: {out_dir} is in use by another trainer ({holder}): a second one would mix "
                             f"its checkpoints and metrics into the first's. Wait for it to end, or stop it "
                             f"(kill its PID), then rerun") from None
    f.seek(0)
    f.truncate()
    f.write(f"PID {os.getpid()} on {socket.gethostname()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
    f.flush()
    remove_dead_writers_files(out_dir)
    return f


def remove_dead_writers_files(out_dir):
    """Temporary files a killed trainer of this folder left (NAME.PID.tmp, written by lnrepro.core.checkpoint
    and lnrepro.core.loop): under the lock no other trainer of it is alive, so none is being written."""
    for folder in (out_dir, out_dir / "checkpoints"):
        if folder.is_dir():
            for path in folder.glob(f"*.*{TMP_SUFFIX}"):
                if path.is_file() and path.name.rsplit(".", 2)[-2].isdigit():
                    path.unlink()


def temporary_path(path):
    """Where a writer of `path` writes before it renames: unique per process."""
    return path.with_name(f"{path.name}.{os.getpid()}{TMP_SUFFIX}")
