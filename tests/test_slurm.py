"""Cluster execution against a real SLURM started by tests/slurm/harness.py (two nodes on this
machine, a fake GPU each, no accounting database).

A shrunken demo (one small generated corpus, tiny models, 2 epochs) is built once locally and once
through the project's SLURM profile, and the SLURM side is checked against SLURM's own job
records: every job went through sbatch, train/evaluate asked for a GPU and data jobs did not, and
every number equals the local run's. The test cluster's GPUs are fake, so its runs train on the CPU
(device cpu) and the config's `resources.gpu: always` makes train/evaluate ask for one anyway; the
job then sees the GPU SLURM gave it (CUDA_VISIBLE_DEVICES, logged by lnrepro train).
Then: a training job cancelled mid-run is retried and resumes; a training spans the two nodes.
"""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from slurm import harness

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
DATA_RULES = {"generate_corpus", "tokenize", "bpe_learn", "bpe_apply", "binarize_separate"}  # the demo's Xiong runs: a dictionary per side
LOCAL_RULES = {"plot_figure", "clean_corpus", "lowercase", "split_valid"}
TIMING = ["wall_s", "tokens_per_s", "sentences_per_s"]  # the only columns allowed to differ
pytestmark = pytest.mark.slow


def tiny_config():
    """The demo's settings on one small corpus: two figure runs, a longer run to cancel, a 2-node run."""
    demo = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    corpus = {**demo["corpora"]["deen"], "bpe_merges": 200,
              "generator": {"task": "deen", "seed": 1, "n_train": 400, "n_test": 30}}
    model = dict(enc_layers=2, dec_layers=2, d_model=32, ffn_dim=64, heads=4, dropout=0.1, attn_dropout=0.0,
                 act_dropout=0.0, share_all_embeddings=False)
    runs = ["post", "pre"]
    return {
        "corpora": {"tiny": corpus},
        "models": {"tiny": model},
        "train_defaults": {**demo["train_defaults"], "corpus": "tiny", "model": "tiny", "epochs": 2,
                           "warmup": 20, "max_tokens": 500, "device": "cpu"},
        "runs": {"post": {}, "pre": {"norm": "pre", "schedule": "constant", "warmup": 0},
                 "resume": {"epochs": 6, "max_tokens": 200},  # ~2 s per epoch: time to cancel it
                 "ddp": {"nodes": 2, "gpus": 1}},
        "figures": {"tiny": {"title": "tiny", "panels": [{"title": "loss", "metric": "valid_loss", "runs": runs},
                                                          {"title": "BLEU", "metric": "bleu", "runs": runs}]}},
        "threads": {"data": min(2, os.cpu_count()), "train": 1, "evaluate": 1},  # a job must fit a node
        "resources": {"gpu": "always", **{k: {"mem_mb": 500, "runtime": 10} for k in ("data", "train", "evaluate")}},
    }


def clean_env():
    """No SLURM variables of an enclosing job: the local run must not think it runs in one."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_"))}


def workflow_copy(dest):
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    for d in ("workflow", "config", "envs", "profiles"):
        shutil.copytree(ROOT / d, dest / d)
    (dest / "tiny.yaml").write_text(yaml.safe_dump(tiny_config()))
    return dest


def check(proc, what):
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-4000:]}"
    return proc.stdout


def slurm_command(*targets):
    """The user's command (the project's profile) plus what this test cluster needs: squeue for
    job states (no accounting database), and quick polling so the test does not idle."""
    return SNAKEMAKE + [*targets, "--profile", "profiles/slurm", "--slurm-status-command", "squeue",
                        "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "1",
                        "--jobs", "4", "--latency-wait", "5", "--configfile", "tiny.yaml"]


def slurm_snakemake(workdir, *targets):
    proc = subprocess.run(slurm_command(*targets), cwd=workdir, env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    return check(proc, "snakemake --profile slurm")


def run_id(output):
    """Snakemake's SLURM run ID: the job name of every job it submitted."""
    return re.search(r"SLURM run ID: (\S+)", output).group(1)


def slurm_jobs(name):
    """SLURM's records of the jobs named `name`: {JobId, JobState, Comment, TresPerJob, ...}."""
    jobs = []
    for line in harness.run("scontrol", "show", "job", "-o").stdout.splitlines():
        rec = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if rec.get("JobName") == name:
            rec["rule"] = re.match(r"rule_(.+?)(?:_wildcards_.*)?$", rec["Comment"]).group(1)
            jobs.append(rec)
    return sorted(jobs, key=lambda r: int(r["JobId"]))


def asks_gpu(rec):
    return any("gpu" in rec.get(k, "") for k in ("TresPerJob", "TresPerNode", "TRES"))


def table(workdir, path):
    return pd.read_csv(workdir / path).drop(columns=TIMING, errors="ignore")


def assert_same_numbers(local, remote, path):
    pd.testing.assert_frame_equal(table(local, path), table(remote, path), check_exact=True, obj=path)


@pytest.fixture(scope="module")
def cluster():
    reason = harness.unavailable()
    if reason:
        pytest.skip(f"cannot start a local SLURM: {reason}")
    t0 = time.time()
    started = harness.up()
    print(f"\nSLURM test cluster ready in {time.time() - t0:.1f}s", file=sys.stderr)
    yield
    if started:
        harness.down()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The reference: every target of the tests built locally (2 cores)."""
    workdir = workflow_copy(tmp_path_factory.mktemp("local"))
    targets = ["results/figures/tiny.pdf", "results/train/resume/metrics.csv", "results/train/ddp/metrics.csv"]
    proc = subprocess.run(SNAKEMAKE + targets + ["--cores", "2", "--configfile", "tiny.yaml"], cwd=workdir,
                          env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(proc, "local snakemake")
    return workdir


@pytest.fixture(scope="module")
def slurm_dir(tmp_path_factory):
    return workflow_copy(tmp_path_factory.mktemp("slurm"))


def test_figure_through_slurm_equals_the_local_run(cluster, local_run, slurm_dir):
    terminal = slurm_snakemake(slurm_dir, "results/figures/tiny.pdf")
    jobs = slurm_jobs(run_id(terminal))
    rules = {j["rule"] for j in jobs}
    assert DATA_RULES | {"train", "evaluate"} <= rules and not rules & LOCAL_RULES, rules  # local: beside Snakemake
    assert all(j["JobState"] == "COMPLETED" for j in jobs), [(j["rule"], j["JobState"]) for j in jobs]
    for j in jobs:
        wanted = j["rule"] in ("train", "evaluate")
        assert asks_gpu(j) == wanted, (j["rule"], j.get("TresPerJob"), j["TRES"])
    train_ids = {j["JobId"] for j in jobs if j["rule"] == "train"}
    for run in ("post", "pre"):
        line = re.search(r"SLURM job (\d+) on node \w+, GPUs allocated \(CUDA_VISIBLE_DEVICES\): (\S+)",
                         (slurm_dir / "logs" / "train" / f"{run}.log").read_text())
        assert line and line.group(1) in train_ids and line.group(2) == "0"
        assert "SLURM job" not in (local_run / "logs" / "train" / f"{run}.log").read_text()
        assert_same_numbers(local_run, slurm_dir, f"results/train/{run}/metrics.csv")
        assert_same_numbers(local_run, slurm_dir, f"results/eval/{run}/bleu.csv")
    assert_same_numbers(local_run, slurm_dir, "results/figures/tiny.csv")
    assert (slurm_dir / "results" / "figures" / "tiny.pdf").read_bytes()[:5] == b"%PDF-"
    # the jobs' progress reaches the user's terminal: Snakemake's own process follows their logs
    # on the shared file system (docs/demo.md, "Following a run"), then sums up
    for run in ("post", "pre"):
        assert f"[train {run}] epoch 2/2 done | train " in terminal, terminal[-3000:]
    assert re.search(r"lnrepro: \d+ jobs done in ", terminal) and "tiny.pdf*" in terminal


def running_job(comment, proc, output, timeout=300):
    end = time.time() + timeout
    while time.time() < end:
        assert proc.poll() is None, f"snakemake ended early:\n{output.read_text()[-4000:]}"
        out = harness.run("squeue", "-h", "-t", "RUNNING", "-o", "%i %k").stdout.split("\n")
        ids = [line.split()[0] for line in out if line.endswith(f" {comment}")]
        if ids:
            return ids[0]
        time.sleep(0.2)
    raise AssertionError(f"no running job {comment}")


def test_cancelled_training_job_is_retried_and_resumes(cluster, local_run, slurm_dir):
    """As a time limit or preemption would: SLURM kills the job after its first epoch; Snakemake
    (retries in the profile) submits it again and the training resumes from its checkpoint."""
    progress = slurm_dir / "results" / "train" / "resume" / "progress.csv"  # written after each epoch
    log = slurm_dir / "resume.out"  # a file: a pipe nobody reads while we wait would fill and block
    with open(log, "w") as out:
        proc = subprocess.Popen(slurm_command("results/train/resume/metrics.csv"), cwd=slurm_dir, env=clean_env(),
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        job = running_job("rule_train_wildcards_resume", proc, log)
        end = time.time() + 300
        while not (progress.exists() and len(pd.read_csv(progress)) >= 1):
            assert time.time() < end and proc.poll() is None, "no epoch finished"
            time.sleep(0.1)
        harness.run("scancel", job)
        proc.wait(timeout=600)
    finally:
        proc.kill()
    output = log.read_text()
    assert proc.returncode == 0, output[-4000:]
    trains = [j for j in slurm_jobs(run_id(output)) if j["rule"] == "train"]
    assert [j["JobState"] for j in trains] == ["CANCELLED", "COMPLETED"], trains
    assert trains[0]["JobId"] == job
    assert (trains[0]["TimeLimit"], trains[1]["TimeLimit"]) == ("00:10:00", "00:20:00")  # attempt 2: x2
    resumed = re.search(r"resuming after epoch (\d+)", (slurm_dir / "logs" / "train" / "resume.log").read_text())
    assert resumed and 1 <= int(resumed.group(1)) < 6
    # the cancelled attempt's log is kept beside the retry's (Snakemake deletes a job's log before each attempt)
    cancelled = (slurm_dir / "logs" / "train" / "resume.log.failed").read_text()
    assert f"epoch {resumed.group(1)}/6 done" in cancelled and "resuming" not in cancelled, cancelled[-2000:]
    assert_same_numbers(local_run, slurm_dir, "results/train/resume/metrics.csv")  # = uninterrupted


def test_training_over_two_nodes(cluster, local_run, slurm_dir):
    """nodes: 2 -> one SLURM job on both nodes, one task (a torchrun agent) per node, a GPU each;
    its numbers equal the same two processes started on one machine."""
    (job,) = [j for j in slurm_jobs(run_id(slurm_snakemake(slurm_dir, "results/train/ddp/metrics.csv")))
              if j["rule"] == "train"]
    assert (job["JobState"], job["NumNodes"], job["NumTasks"]) == ("COMPLETED", "2", "2"), job
    assert job["TresPerNode"] == "gres:gpu:1", job
    text = (slurm_dir / "logs" / "train" / "ddp.log").read_text()
    assert "srun --nodes=2 --ntasks=2" in text and "2 worker(s)" in text
    for node in ("n1", "n2"):  # a process on each node, each with that node's GPU
        assert f"SLURM job {job['JobId']} on node {node}, GPUs allocated (CUDA_VISIBLE_DEVICES): 0" in text
    assert_same_numbers(local_run, slurm_dir, "results/train/ddp/metrics.csv")


def test_a_job_given_a_gpu_without_usable_cuda_stops_at_once(cluster, tmp_path):
    """A device-auto run on a node whose torch cannot use the GPU SLURM gave it (here every node: the
    GPUs are fake) fails in its first seconds, naming the node, instead of training on the CPU."""
    workdir = workflow_copy(tmp_path)
    cfg = tiny_config()
    cfg["runs"]["gpu_auto"] = {"device": "auto"}
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    target = "results/train/gpu_auto/metrics.csv"
    # its data built here first, so that the cluster runs the training job alone
    check(subprocess.run(SNAKEMAKE + [target, "--cores", "2", "--configfile", "tiny.yaml", "--until", "binarize_separate"],
                         cwd=workdir, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True),
          "local data")
    # no retries: the profile's would fail the same way twice more (each attempt asks for a longer slot)
    proc = subprocess.run(slurm_command(target) + ["--retries", "0"], cwd=workdir, env=clean_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode != 0
    (job,) = [j for j in slurm_jobs(run_id(proc.stdout)) if j["rule"] == "train"]
    assert job["JobState"] == "FAILED" and asks_gpu(job), job
    log = (workdir / "logs" / "train" / "gpu_auto.log").read_text()
    assert re.search(r"device auto in a job given GPUs \(CUDA_VISIBLE_DEVICES=0\), but node n[12] has torch ", log), log
    assert "epoch 1/" not in log
