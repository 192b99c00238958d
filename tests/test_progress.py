"""Progress a person can follow: the training loop's lines (epoch N/M, update N/M of the run,
tok/s, the run's ETA), the few of them a Snakemake run shows in the terminal
(workflow/lib/run_progress.py), and its summary. The Snakemake run itself is in
test_own_corpus.py, whose build this reuses."""
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from lnrepro.core.progress import RunClock, duration

from test_train import cli
from workflow_helpers import ROOT

sys.path.insert(0, str(ROOT / "workflow" / "lib"))
import run_progress  # noqa: E402
from run_progress import LogFollower, Throttle  # noqa: E402


def progress(epoch, update, eta="1m00s"):
    return f"epoch {epoch}/3 | update {update}/90 | loss 7.1 | lr 0.0005 | 900 tok/s | run eta {eta}"


def done(epoch):
    return f"epoch {epoch}/3 done | train 7.0 ppl 98.42 | valid 6.9 ppl 90.51 | gnorm 1.0 | 900 tok/s | 9.0s | run eta 20s"


def test_a_job_shows_a_line_every_interval_an_epochs_end_first_and_its_last_at_once():
    t = Throttle(30)
    job = "train run"
    shown = []
    for now, line in [(0, "798,208 parameters, vocab 764, 30 updates/round"),  # the job is seen
                      (0, "settings: lr 0.0005, schedule inverse_sqrt, warmup 4000 updates from lr 0"),  # log only
                      (10, progress(1, 10)), (20, done(1)), (25, progress(2, 35)), (40, progress(2, 50)),
                      (55, progress(2, 55)), (65, progress(2, 58)), (70, progress(2, 59)),
                      (75, done(2)), (80, progress(3, 65)), (90, done(3))]:
        shown += [(now, out) for out in t.add(job, line, now)]
        shown += [(now, out) for out in t.due(now)]
    shown += [(100, out) for out in t.due(100)]  # nothing left after the run's last line
    # 30 s after the job started, epoch 1's end (not the later updates of epoch 2); 30 s later the
    # latest update; the run's last line at once, though only 20 s later
    assert shown == [(40, f"[{job}] {done(1)}"), (70, f"[{job}] {progress(2, 59)}"), (90, f"[{job}] {done(3)}")]


def test_interval_0_shows_every_line_and_a_divergence_at_once():
    t = Throttle(0)
    assert t.add("train a", progress(1, 10), 0) == [f"[train a] {progress(1, 10)}"]
    assert t.add("train a", "resuming after epoch 1 (30 updates)", 1) == []
    slow = Throttle(30)
    slow.add("train b", progress(1, 10), 0)
    diverged = "epoch 2/3 DIVERGED (train loss inf); recording the curve so far"
    assert slow.add("train b", diverged, 1) == [f"[train b] {diverged}"] and slow.due(100) == []


def test_a_jobs_device_is_said_at_once():
    """lnrepro.core.device.pick_device's lines reach the terminal though the job's stderr goes to its log."""
    from lnrepro.core.device import DEVICE_NOTE
    note = f"{DEVICE_NOTE} auto: torch 2.9.0+cpu (CPU-only build) cannot use a GPU here: running on the CPU"
    stop = f"{DEVICE_NOTE} cuda asked for, but node n1 has torch 2.9.0+cpu (CPU-only build), which cannot use a GPU."
    t = Throttle(30)
    assert t.add("eval a", note, 0) == [f"[eval a] {note}"] and t.add("train b", stop, 1) == [f"[train b] {stop}"]
    assert t.due(100) == []


@pytest.mark.parametrize("value, seconds", [(None, 30.0), ("", 30.0), ("5", 5.0), ("0", 0.0), ("off", None),
                                            ("soon", 30.0)])
def test_progress_interval_setting(value, seconds):
    assert run_progress.interval_setting(value) == seconds


def test_run_eta_is_the_updates_left_at_the_pace_so_far():
    now = [100.0]
    clock = RunClock(updates_done=60, total=300, clock=lambda: now[0])  # resumed after 60 updates
    assert clock.eta(60) == "?"
    now[0] = 130.0  # 30 s for 40 updates: 200 left take 150 s
    assert clock.eta(100) == "2m30s"
    assert [duration(s) for s in (0.4, 59.6, 61, 3600 * 2 + 7 * 60 + 3)] == ["0s", "1m00s", "1m01s", "2h07m"]


def test_the_follower_reads_only_new_complete_lines(tmp_path, capsys):
    logs = tmp_path / "logs" / "train"
    logs.mkdir(parents=True)
    (logs / "old.log").write_text(done(2) + "\n" + done(3) + "\n")  # before this run: not shown
    follower = LogFollower(Throttle(0), dirs=[logs])
    with open(logs / "new.log", "w") as f:
        f.write(progress(1, 10) + "\n" + progress(1, 20)[:12])  # the second line is still being written
        f.flush()
        follower.poll()
        f.write(progress(1, 20)[12:] + "\n")
    (logs / "old.log").unlink()  # Snakemake deletes a job's log before the job starts; the new one
    (logs / "old.log").write_text(done(1) + "\n")  # may reuse the inode, but is shorter at first
    follower.poll()
    assert capsys.readouterr().err.splitlines() == [f"[train new] {progress(1, 10)}", f"[train new] {progress(1, 20)}",
                                                    f"[train old] {done(1)}"]


@pytest.mark.medium
def test_lnrepro_train_prints_epochs_of_the_run_with_tok_s_and_the_run_eta(toy_data, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(cli(tmp_path, toy_data, epochs=2), check=True, capture_output=True, text=True, env=env)
    lines = proc.stderr.splitlines()
    updates = [line for line in lines if line.startswith("epoch 1/2 | update ")]
    assert updates and all(" tok/s | run eta " in line for line in updates), proc.stderr
    total = int(updates[-1].split(" | ")[1].split("/")[1])
    assert updates[-1].startswith(f"epoch 1/2 | update {total // 2}/{total} ")  # the first epoch's last update
    assert any(line.startswith("epoch 2/2 done | ") and line.endswith("| run eta 0s") for line in lines), proc.stderr


def fake_workflow(start, jobs=3, configfiles=(), failed=()):
    return SimpleNamespace(start_time=start, overwrite_configfiles=list(configfiles),
                           scheduler=SimpleNamespace(failed=failed, finished_jobs=jobs))


def test_the_summary_lists_what_is_on_disk_marks_what_this_run_wrote_and_the_report_command(tmp_path, monkeypatch,
                                                                                             capsys):
    monkeypatch.chdir(tmp_path)
    for name in ("results/figures/fig2.pdf", "results/figures/fig4.pdf", "results/tables/admin_table1.md",
                 "results/claims.md"):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).touch()
    start = datetime.now() - timedelta(minutes=31, seconds=5)
    os.utime("results/figures/fig2.pdf", (start.timestamp() - 60,) * 2)  # from an earlier run
    run_progress.Progress().finished(fake_workflow(start, configfiles=[tmp_path / "config/mine.yaml"]), ["results/claims.md"])
    assert capsys.readouterr().err.splitlines() == [
        "lnrepro: 3 jobs done in 0:31:05",
        "  figures: results/figures/ fig2.pdf fig4.pdf* (2, each with its CSV; * written by this run)",
        "  tables:  results/tables/ admin_table1.md* (1, each with its CSV; * written by this run)",
        "  claims:  results/claims.md (PASS/FAIL of every claim; results/claims.csv)",
        "  logs:    logs/<step>/... per job; time and memory of the heavy ones: benchmarks/",
        "  next:    snakemake --configfile config/mine.yaml --report report.html"]


def test_a_failed_run_names_the_failed_jobs_logs(capsys):
    job = SimpleNamespace(rule=SimpleNamespace(name="train"), log=["logs/train/adam.log"])
    run_progress.Progress().failed(fake_workflow(datetime.now() - timedelta(seconds=75), failed=[job]))
    assert capsys.readouterr().err.splitlines() == [
        "lnrepro: stopped after 0:01:15; see train: logs/train/adam.log",
        "  after a fix, the same command continues: finished outputs are kept, trainings resume"]


def test_after_a_partial_build_the_report_command_names_what_is_on_disk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_progress.report_command([], ["results/figures/fig2.pdf"]) == (
        "snakemake $(ls results/figures/*.pdf results/tables/*.csv results/claims.csv 2>/dev/null) --report report.html")
