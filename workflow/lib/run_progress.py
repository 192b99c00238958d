"""What a person running the workflow sees besides Snakemake's job blocks: now and then a line of
each training's progress, and a summary when the run ends.

The trainings' commands send everything to their logs (logs/train/<run>.log, logs/pretrain/<run>.log);
Snakemake's main process reads what the logs gain and shows at once a job's line about its device
(auto runs on the CPU, or the GPU asked for is unusable; these logs and logs/eval/), and a job's latest progress line at most
every LNREPRO_PROGRESS seconds (default 30; 0: every line; off: none), an epoch's end rather than an
update inside the next one, and the run's last line at once. Reading the logs, not the jobs' output,
keeps the rules' commands as they were (a changed command reruns every training) and follows jobs
that a cluster runs too. Only the Snakefile's onstart/onsuccess/onerror handlers call this: they run
in the main process and never in a dry run. Plain Python without lnrepro, which Snakemake's own
environment need not have.
"""
import os
import re
import shlex
import sys
import textwrap
import threading
import time
from contextlib import suppress
from datetime import datetime
from pathlib import Path

FOLLOWED = ("logs/train", "logs/pretrain", "logs/eval")  # the logs of lnrepro.core.loop's trainings, and decoding's
# lnrepro.core.device.DEVICE_NOTE: a job of device auto running on the CPU, or one that asked for a GPU
# torch cannot use (its error, otherwise only in its log); shown at once
DEVICE_NOTE = "lnrepro: device"
# the loop's progress lines: "epoch 3/8 | update ...", "epoch 3/8 done | ...", "epoch 3/8 DIVERGED ..."
PROGRESS = re.compile(r"epoch (\d+)/(\d+)( done| DIVERGED)?\b")
DEFAULT_INTERVAL = 30.0
POLL_S = 2.0


def say(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def interval_setting(value):
    """LNREPRO_PROGRESS's seconds between one job's lines, or None for off."""
    if value is None or not value.strip():
        return DEFAULT_INTERVAL
    if value.strip().lower() == "off":
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        say(f"LNREPRO_PROGRESS={value!r}: expected seconds or off; using {DEFAULT_INTERVAL:g}")
        return DEFAULT_INTERVAL


class Throttle:
    """Which of the jobs' progress lines reach the terminal, given when each was read."""

    def __init__(self, interval):
        self.interval = interval
        self.shown = {}    # job: when its last line was shown (at first: when the job was first seen)
        self.pending = {}  # job: (its latest line not shown yet, whether that line ends an epoch)

    def add(self, job, line, now):
        """The lines to show now."""
        self.shown.setdefault(job, now)
        if line.startswith(DEVICE_NOTE):
            return [f"[{job}] {line}"]
        match = PROGRESS.match(line)
        if not match:
            return []
        epoch, rounds, end = match.groups()
        if end == " DIVERGED" or (end and epoch == rounds):  # the run's last line
            self.pending.pop(job, None)
            return [self.show(job, line, now)]
        if not end and self.pending.get(job, ("", False))[1]:
            return []  # an epoch's result says more than an update of the next one
        self.pending[job] = (line, bool(end))
        return self.due(now, [job])

    def due(self, now, jobs=None):
        """The pending lines of jobs (default: all) whose last line is interval seconds old."""
        return [self.show(job, self.pending.pop(job)[0], now)
                for job in list(jobs or self.pending)
                if job in self.pending and now - self.shown[job] >= self.interval]

    def show(self, job, line, now):
        self.shown[job] = now
        return f"[{job}] {line}"


def log_job(path):
    """logs/train/adam_5e-4_warm4000.log -> 'train adam_5e-4_warm4000'."""
    return f"{path.parent.name} {path.stem}"


class LogFollower:
    """Reads the lines the followed logs gain and shows what the throttle lets through, every
    POLL_S seconds in a thread of its own."""

    def __init__(self, throttle, dirs=FOLLOWED, clock=time.monotonic):
        self.throttle, self.dirs, self.clock = throttle, [Path(d) for d in dirs], clock
        self.read = {}  # path: (inode, bytes read)
        for path in self.logs():  # logs from before this run: their lines are not its progress
            with suppress(OSError):  # removed since listed
                self.read[path] = (path.stat().st_ino, path.stat().st_size)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.follow, name="lnrepro-progress", daemon=True)

    def logs(self):
        return [path for d in self.dirs for path in sorted(d.glob("*.log"))]

    def new_lines(self, path):
        """The complete lines path gained since the last call. Snakemake deletes a job's log before
        the job starts: a new inode, or a shorter file (the inode reused), is read from the start."""
        try:
            stat = path.stat()
            inode, offset = self.read.get(path, (stat.st_ino, 0))
            if inode != stat.st_ino or stat.st_size < offset:
                offset = 0
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read(stat.st_size - offset)
        except OSError:  # removed between listing and reading: its next job's log comes later
            return []
        data = data[:data.rfind(b"\n") + 1]  # a line still being written waits for the next poll
        self.read[path] = (stat.st_ino, offset + len(data))
        return data.decode(errors="replace").splitlines()

    def poll(self):
        now = self.clock()
        shown = [out for path in self.logs() for line in self.new_lines(path)
                 for out in self.throttle.add(log_job(path), line, now)]
        for line in shown + self.throttle.due(now):
            say(line)

    def follow(self):
        while not self.stopped.wait(POLL_S):
            self.poll()

    def start(self):
        self.thread.start()

    def stop(self):
        """Stops the thread; the last poll shows the last lines of the jobs that just finished."""
        self.stopped.set()
        self.thread.join()
        self.poll()


def clock_time(seconds):
    """0:31:05."""
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def listing(label, folder, pattern, since, beside=""):
    """'  figures: results/figures/ fig2.pdf fig4.pdf* (2...; * written by this run)', wrapped."""
    paths = sorted(Path(folder).glob(pattern))
    if not paths:
        return []
    names = " ".join(p.name + ("*" if p.stat().st_mtime >= since else "") for p in paths)
    text = f"{label} {folder}/ {names} ({len(paths)}{beside}; * written by this run)"
    return textwrap.wrap(text, 110, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False)


def built(since):
    """The figures, tables and claims table on disk."""
    lines = listing("figures:", "results/figures", "*.pdf", since, ", each with its CSV")
    lines += listing("tables: ", "results/tables", "*.md", since, ", each with its CSV")
    if Path("results/claims.md").exists():
        lines.append("  claims:  results/claims.md (PASS/FAIL of every claim; results/claims.csv)")
    return lines


def here(path):
    """Snakemake keeps config files as absolute paths; the command reads better relative."""
    with suppress(ValueError):
        return Path(path).relative_to(Path.cwd())
    return path


def report_command(configfiles, all_targets):
    """The report command of docs/papers.md for what is on disk: rule all's when all of it is built."""
    flags = "".join(f" --configfile {shlex.quote(str(here(c)))}" for c in configfiles)
    if all(Path(t).exists() for t in all_targets):
        return f"snakemake{flags} --report report.html"
    return (f"snakemake{flags} $(ls results/figures/*.pdf results/tables/*.csv results/claims.csv 2>/dev/null)"
            " --report report.html")


class Progress:
    """The Snakefile's handlers: start() at onstart, finished() at onsuccess, failed() at onerror."""

    def __init__(self):
        self.follower = None

    def start(self):
        interval = interval_setting(os.environ.get("LNREPRO_PROGRESS"))
        if interval is not None:
            self.follower = LogFollower(Throttle(interval))
            self.follower.start()

    def stop(self):
        if self.follower:
            self.follower.stop()
            self.follower = None

    def finished(self, workflow, all_targets):
        self.stop()
        start = workflow.start_time
        # the scheduler's count: the DAG is rebuilt after each checkpoint job (train, pretrain), and its
        # needrun jobs are then only those left
        jobs = workflow.scheduler.finished_jobs
        outputs = built(start.timestamp())
        lines = [f"lnrepro: {jobs} job{'s' * (jobs != 1)} done in {clock_time((datetime.now() - start).total_seconds())}",
                 *outputs, "  logs:    logs/<step>/... per job; time and memory of the heavy ones: benchmarks/"]
        if outputs:
            lines.append(f"  next:    {report_command(workflow.overwrite_configfiles or [], all_targets)}")
        say("\n".join(lines))

    def failed(self, workflow, shown=5):
        """Where to look: the failed jobs' logs (Snakemake names its own log after this)."""
        self.stop()
        elapsed = clock_time((datetime.now() - workflow.start_time).total_seconds())
        logs = [f"{job.rule.name}: {log}" for job in getattr(workflow.scheduler, "failed", None) or () for log in job.log]
        where = ", ".join(logs[:shown]) + (f" and {len(logs) - shown} more" if len(logs) > shown else "")
        say(f"lnrepro: stopped after {elapsed}; {'see ' + where if logs else 'see the error above'}\n"
            "  after a fix, the same command continues: finished outputs are kept, trainings resume")
