"""One trainer per run folder (issue 42, item 5): a second `lnrepro train` of a folder a live trainer
holds is refused at once, naming it; after the first is killed with -9 the folder is free again and the
run resumes; no writer's temporary file is another's."""
import os
import signal
import subprocess
import sys
import time

import pytest

from lnrepro.core.run_lock import lock_run_folder

FLAGS = ["--enc-layers", "2", "--dec-layers", "2", "--d-model", "32", "--ffn-dim", "64", "--heads", "4",
         "--dropout", "0", "--max-tokens", "100", "--threads", "1", "--device", "cpu"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}


def trainer(data, out, *extra, **popen):
    return subprocess.Popen([sys.executable, "-m", "lnrepro.cli", "train", "--data", str(data), "--out", str(out),
                             *FLAGS, *extra], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)


def wait_for(path, proc, timeout=120):
    deadline = time.time() + timeout
    while not path.exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.2)


@pytest.mark.medium
def test_a_second_trainer_is_refused_and_a_killed_ones_folder_resumes(toy_data, tmp_path):
    out = tmp_path / "run"
    first = trainer(toy_data, out, "--epochs", "40", "--lr", "1e-3")
    try:
        wait_for(out / "checkpoints/epoch1.pt", first)
        second = trainer(toy_data, out, "--epochs", "40", "--lr", "5e-1")  # other settings: would start afresh
        text = second.communicate(timeout=120)[0]
        assert second.returncode != 0
        assert f"is in use by another trainer (PID {first.pid} on " in text, text
        assert first.poll() is None  # the first trains on, its checkpoints untouched
        assert (out / "checkpoints/epoch1.pt").exists()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # kill -9 leaves the lock file, not the lock: a rerun of the first's settings resumes its run
    done = epochs_done(out)
    leftover = out / "checkpoints" / "last.pt.999999.tmp"  # as a writer killed mid-save leaves it
    leftover.write_bytes(b"half a checkpoint")
    third = trainer(toy_data, out, "--epochs", "40", "--lr", "1e-3")
    try:
        lines = iter(third.stdout.readline, "")
        resumed = next((line for line in lines if "resuming after" in line or "starting afresh" in line), "")
        assert f"resuming after epoch {done} " in resumed, resumed
        assert not leftover.exists()  # a dead writer's temporary file went with its lock
    finally:
        third.send_signal(signal.SIGKILL)
        third.wait()


def epochs_done(out):
    import torch
    return torch.load(out / "checkpoints/last.pt", map_location="cpu", weights_only=True)["epoch"]


def test_temporary_files_of_dead_writers_go_and_other_files_stay(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    dead = [tmp_path / "metrics.csv.4242.tmp", tmp_path / "checkpoints/last.pt.4242.tmp"]
    mine = [tmp_path / "notes.tmp", tmp_path / "checkpoints/epoch1.pt", tmp_path / "data.v2.tmp"]
    for path in dead + mine:
        path.write_text("x")
    lock = lock_run_folder(tmp_path)
    try:
        assert [p.exists() for p in dead] == [False, False] and all(p.exists() for p in mine)
        assert f"PID {os.getpid()} on " in (tmp_path / ".lnrepro.lock").read_text()
    finally:
        lock.close()
