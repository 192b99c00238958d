"""Cluster set-up without a cluster: what jobs ask SLURM for, how a training launches its
processes, the profiles, and the conda environment against pyproject.toml. (The same against a
real SLURM: test_slurm.py.)"""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from lnrepro.core import launch

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
tomllib = pytest.importorskip("tomllib")  # Python >= 3.11


# ---- envs/lnrepro.yaml agrees with pyproject.toml ------------------------------------------------
def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def conda_env():
    """(python version, {name: Requirement}) of envs/lnrepro.yaml's pip section."""
    deps = yaml.safe_load((ROOT / "envs" / "lnrepro.yaml").read_text())["dependencies"]
    python = next(d.split("=", 1)[1] for d in deps if isinstance(d, str) and d.startswith("python="))
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    reqs = [Requirement(line) for line in pip if not line.startswith("-e")]
    return python, {canonicalize_name(r.name): r for r in reqs}


def test_conda_env_pins_agree_with_pyproject():
    """Every dependency in both, the env's exact pins inside pyproject's ranges, ranges identical."""
    python, env = conda_env()
    project = pyproject()
    assert SpecifierSet(project["requires-python"]).contains(python)
    deps = [Requirement(d) for d in project["dependencies"]]
    wanted = {canonicalize_name(d.name) for d in deps if not d.marker or d.marker.evaluate({"python_version": python})}
    assert set(env) == wanted, f"only in env: {set(env) - wanted}; only in pyproject: {wanted - set(env)}"
    for dep in deps:
        pinned = env.get(canonicalize_name(dep.name))
        if pinned is None:
            continue
        exact = [s.version for s in pinned.specifier if s.operator == "=="]
        if exact:
            assert dep.specifier.contains(exact[0]), f"{dep.name}: env pins {exact[0]}, pyproject says {dep.specifier}"
        else:
            assert pinned.specifier == dep.specifier, f"{dep.name}: env {pinned.specifier} != pyproject {dep.specifier}"


def test_requires_python_is_what_snakemake_needs():
    """pyproject's floor is Snakemake's own (the README says Python >= 3.11): not a lower one pip would accept."""
    from importlib.metadata import metadata
    ours, snakemakes = SpecifierSet(pyproject()["requires-python"]), SpecifierSet(metadata("snakemake")["Requires-Python"])
    floors = [min(s.version for s in spec if s.operator == ">=") for spec in (ours, snakemakes)]
    assert floors[0] == floors[1] == "3.11"
    assert "Python ≥ 3.11" in (ROOT / "README.md").read_text()


def test_setup_installs_the_torch_the_env_pins():
    setup = (ROOT / "workflow" / "scripts" / "install_torch.sh").read_text()
    default = re.search(r"TORCH_SPEC:-([^}]+)\}", setup).group(1)
    assert str(conda_env()[1]["torch"]) == default


# ---- setup.sh's torch ---------------------------------------------------------------------------
INSTALL_TORCH = ROOT / "workflow" / "scripts" / "install_torch.sh"  # setup.sh's torch step, on .venv


def fake_torch_wheel(folder, version):
    """A wheel of a package named torch whose module says its version: what pip sees of a build."""
    import zipfile
    folder.mkdir(parents=True, exist_ok=True)
    info = f"torch-{version}.dist-info"
    files = {"torch/__init__.py": f"__version__ = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    path = folder / f"torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
    return path


def simple_index(root, wheels):
    """A PEP 503 index in files: file://root serves as pip's --index-url."""
    (root / "torch").mkdir(parents=True)
    links = "".join(f'<a href="{w.as_uri()}">{w.name}</a>\n' for w in wheels)
    (root / "torch" / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    return root.as_uri()


def installed_torch(venv):
    return subprocess.run([venv / "bin" / "python", "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.medium
def test_setup_installs_the_torch_asked_for_and_replaces_one_that_does_not_match(tmp_path):
    """TORCH_SPEC with pip options and TORCH_INDEX_URL both reach pip; an installed torch of another
    version, or of the same version from other options (a CPU build where a CUDA index is asked
    for), is replaced; a matching one is kept. Fake torch wheels in a throwaway venv, no network."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)  # its own pip, never .venv's

    def setup(**env):
        proc = subprocess.run(["bash", INSTALL_TORCH, venv], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", **env})
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    wheels = tmp_path / "wheels"
    fake_torch_wheel(wheels, "1.0")
    say = setup(TORCH_SPEC=f"torch==1.0 --no-index --find-links {wheels}")  # options split into pip's arguments
    assert installed_torch(venv) == "1.0" and f"setup: installing torch==1.0 --no-index --find-links {wheels}" in say
    assert setup(TORCH_SPEC=f"torch==1.0 --no-index --find-links {wheels}") == ""  # matches: kept
    index = simple_index(tmp_path / "simple", [fake_torch_wheel(wheels, "2.0+cpu")])
    say = setup(TORCH_SPEC="torch==2.0", TORCH_INDEX_URL=index)
    assert installed_torch(venv) == "2.0+cpu" and "torch 1.0 does not satisfy torch==2.0" in say
    cuda = simple_index(tmp_path / "cuda", [fake_torch_wheel(tmp_path / "cuda_wheels", "2.0+cu128")])
    say = setup(TORCH_SPEC="torch==2.0", TORCH_INDEX_URL=cuda)  # 2.0+cpu satisfies torch==2.0, from another index
    assert installed_torch(venv) == "2.0+cu128" and "was not installed with 'torch==2.0 --index-url file:" in say
    assert setup(TORCH_SPEC="torch==2.0", TORCH_INDEX_URL=cuda) == ""
    assert setup(TORCH_SPEC="torch>=2") == ""  # no options: any build that satisfies it


# ---- the documented local commands for the papers' settings --------------------------------------
def readme_paper_commands():
    """The commands of README.md and docs/*.md that run config/config.yaml here (with --cores; not the
    SLURM profile), but the cost plan's (results/plan.md: one local job that reads the config, no GPU)."""
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    return [c for c in re.findall(r"(?:\.venv/bin/)?snakemake [^`\n]*", text)
            if "--configfile config/config.yaml" in c and "--cores" in c and "--profile" not in c
            and not c.startswith("snakemake results/plan.md ")]


def most_gpus_at_once(log):
    """The most GPUs the jobs of a verbose Snakemake log held at once: each job block (jobid, then
    resources) takes its gpu until its 'Finished jobid: N'."""
    running, most, job = {}, 0, None
    for line in log.splitlines():
        if m := re.match(r"\s+jobid: (\d+)$", line):
            job = m.group(1)
        elif (m := re.match(r"\s+resources: .*\bgpu=(\d+)", line)) and job:
            running[job] = int(m.group(1))
            most = max(most, sum(running.values()))
        elif m := re.match(r"Finished jobid: (\d+)", line):
            running.pop(m.group(1), None)
    return most


@pytest.mark.medium
def test_readme_paper_commands_run_at_most_the_gpus_they_name(tmp_path):
    """Each command run as written, but with --touch instead of the jobs' commands: Snakemake's
    scheduler then starts every job of the papers' DAG (433) under the command's resources, in
    seconds (a dry run plans without them). Without --resources gpu=N, the same run holds 2 GPU jobs
    at once (a touched job ends at once; real trainings, hours long, pile up to --cores 8)."""
    commands = readme_paper_commands()
    assert len(commands) >= 2, commands
    for i, command in enumerate(commands):
        limit = re.search(r"--resources gpu=(\d+)", command)
        assert limit, f"README.md or docs/: {command!r} does not limit its GPU jobs (--resources gpu=N)"
        args = [a for a in command.split()[1:] if a not in ("...", "-n")]  # "...": the targets; -n: run it
        proc = subprocess.run([sys.executable, "-m", "snakemake", *args, "--touch", "--verbose",
                               "--directory", str(tmp_path / str(i))], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        log = proc.stdout + proc.stderr
        assert log.count("gpu=1") >= 10  # its GPU jobs ran (trainings and decodings)
        assert most_gpus_at_once(log) == int(limit.group(1)), command


# ---- profiles --------------------------------------------------------------------------------------
def profile(name):
    return yaml.safe_load((ROOT / "profiles" / name / "config.yaml").read_text())


def test_slurm_profile_retries_with_more_time_and_memory():
    p = profile("slurm")
    assert p["executor"] == "slurm" and p["retries"] >= 1 and p["jobs"] >= 1
    assert {"attempt" in str(p["default-resources"][k]) for k in ("runtime", "mem_mb")} == {True}


def test_no_cluster_executor_in_the_workflow_profile():
    """profiles/default beside the Snakefile applies to every run, the local demo included."""
    default = ROOT / "profiles" / "default" / "config.yaml"
    assert not default.exists() or "executor" not in (yaml.safe_load(default.read_text()) or {})


@pytest.mark.medium
@pytest.mark.parametrize("name", ["profiles/slurm", "profiles/local"])
def test_profiles_plan_the_demo(name):
    proc = subprocess.run(SNAKEMAKE + ["results/figures/fig4.pdf", "-n", "--profile", name], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.medium
def test_profile_named_slurm_resolves_after_setup():
    """docs/cluster.md's `snakemake --profile slurm ...` from the repo root (setup.sh installed it)."""
    from snakemake.common import get_appdirs
    if not (Path(get_appdirs().user_config_dir) / "slurm").exists():
        pytest.skip("no ~/.config/snakemake/slurm: run workflow/scripts/setup.sh")
    proc = subprocess.run(SNAKEMAKE + ["--profile", "slurm", "results/figures/fig4.pdf", "-n"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Using profile slurm" in proc.stdout + proc.stderr


# ---- what each job asks for ------------------------------------------------------------------------
def planned_resources(workdir, cfg, targets):
    """{(rule, wildcards): {resource: value}} from a dry run."""
    (workdir / "c.yaml").write_text(yaml.safe_dump(cfg))
    out = subprocess.run(SNAKEMAKE + targets + ["-n", "--cores", "64", "--configfile", "c.yaml"], cwd=workdir,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    jobs = {}
    for block in re.split(r"\n(?=(?:rule|checkpoint) \w+:)", out.stdout):  # train, pretrain: checkpoint rules
        rule = re.match(r"(?:rule|checkpoint) (\w+):", block)
        res = re.search(r"^\s+resources: (.*)$", block, re.M)
        if rule and res:
            wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
            threads = re.search(r"^\s+threads: (\d+)", block, re.M)
            values = dict(kv.split("=", 1) for kv in res.group(1).split(", "))
            values["threads"] = threads.group(1) if threads else "1"
            jobs[(rule.group(1), wc.group(1) if wc else "")] = values
    return jobs


@pytest.mark.medium
def test_jobs_ask_for_gpus_nodes_and_tasks_from_the_config(tmp_path):
    shutil.copy(ROOT / "Snakefile", tmp_path)
    for d in ("workflow", "config", "envs"):
        shutil.copytree(ROOT / d, tmp_path / d)
    demo = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    cfg = {k: demo[k] for k in ("corpora", "models", "train_defaults", "threads")}
    cfg["runs"] = {"cpu": {}, "one": {"device": "cuda", "gpus": 2}, "two": {"device": "cuda", "nodes": 2, "gpus": 4}}
    cfg["figures"] = {}
    cfg["resources"] = {"gpu": "auto", "gpu_model": "a100", "train": {"mem_mb": 1000, "runtime": 30}}
    jobs = planned_resources(tmp_path, cfg, [f"results/eval/{r}/bleu{avg}.csv" for r in cfg["runs"] for avg in ("", "_avg2")])
    train = {wc.split("=")[1]: r for (rule, wc), r in jobs.items() if rule == "train"}
    evaluate = {wc.split("=")[1]: r for (rule, wc), r in jobs.items() if rule == "evaluate"}
    averaged = {wc.split(",")[0].split("=")[1]: r for (rule, wc), r in jobs.items() if rule == "evaluate_averaged"}
    # the same decoding, on the run's device: the same request, but for the time: evaluate has none configured,
    # so each job asks for its planned runtime (one decode of the average vs one per epoch; at least 10 minutes)
    strip = lambda jobs: {run: {k: v for k, v in r.items() if k != "runtime"} for run, r in jobs.items()}  # noqa: E731
    assert strip(averaged) == strip(evaluate)
    assert all(int(averaged[r]["runtime"]) >= 10 and int(evaluate[r]["runtime"]) >= int(averaged[r]["runtime"])
               for r in cfg["runs"])
    # device cpu: no GPU anywhere
    assert "gpu" not in train["cpu"] and "gpu" not in evaluate["cpu"] and "nodes" not in train["cpu"]
    # one node, 2 GPUs: sbatch --gpus=a100:2, two training processes' threads
    assert (train["one"]["gpu"], train["one"]["gpu_model"], train["one"]["threads"]) == ("2", "a100", "2")
    # two nodes x 4 GPUs: one task per node, the GPUs per node, the rule's own srun (mpi)
    two = train["two"]
    assert (two["nodes"], two["tasks"], two["mpi"]) == ("2", "2", "srun") and "gpu" not in two
    assert two["slurm_extra"] == "--ntasks-per-node=1 --gpus-per-node=a100:4"
    assert all(evaluate[r]["gpu"] == "1" for r in ("one", "two"))
    assert (train["cpu"]["mem_mb"], train["cpu"]["runtime"]) == ("1000", "30")  # attempt 1: as configured
    for (rule, _), r in jobs.items():  # data rules: CPU only
        if rule not in ("train", "evaluate", "evaluate_averaged"):
            assert "gpu" not in r and "nodes" not in r, (rule, r)


# ---- how a training starts its processes ------------------------------------------------------------
ARGS = ["--data", "d", "--out", "o"]


def test_one_process_trains_in_place():
    assert launch.command(1, 1, 4, ARGS, env={}) is None


def test_one_node_several_processes_use_torchrun_standalone():
    cmd = launch.command(1, 2, 8, ARGS, env={})
    assert cmd[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    assert cmd[-2:] == ["--threads", "4"] and cmd[cmd.index("lnrepro.cli") + 1] == "train"


def test_several_nodes_in_slurm_use_srun_and_a_rendezvous_on_the_first_node(monkeypatch):
    monkeypatch.setattr(launch, "first_node_address", lambda job: "10.0.0.7")
    cmd = launch.command(2, 4, 8, ARGS, env={"SLURM_JOB_ID": "42"})
    assert cmd[:6] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--cpus-per-task=8",
                       "--kill-on-bad-exit=1"]
    assert "--nnodes=2" in cmd and "--nproc-per-node=4" in cmd and "--rdzv-backend=c10d" in cmd
    assert "--rdzv-endpoint=10.0.0.7:20042" in cmd and cmd[-2:] == ["--threads", "2"]


def test_several_nodes_outside_slurm_run_every_process_here():
    cmd = launch.command(2, 4, 8, ARGS, env={})
    assert "--nproc-per-node=8" in cmd and "--standalone" in cmd and cmd[-2:] == ["--threads", "1"]


def test_a_checkpoint_is_resumed_only_by_the_same_number_of_processes(toy_data, tmp_path):
    """Each process takes its own batch, so 2 processes train other updates than 1: no mixing."""
    from lnrepro.core.checkpoint import resume_state
    from lnrepro.core.translation import TrainConfig, train
    cfg = TrainConfig(enc_layers=1, dec_layers=1, d_model=16, ffn_dim=32, heads=2, max_tokens=400, epochs=1,
                      device="cpu", threads=1)
    train(cfg, toy_data, tmp_path)
    assert resume_state(tmp_path / "checkpoints", cfg, world=1)["epoch"] == 1
    assert resume_state(tmp_path / "checkpoints", cfg, world=2) is None
    assert not (tmp_path / "checkpoints" / "last.pt").exists()
