"""Running the real workflow from a test: a scratch copy of it and a Snakemake call that fails loudly."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def workflow_copy(dest):
    """Snakefile, workflow/, config/ and envs/ (rules name their conda env) in a scratch directory."""
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    for d in ("workflow", "config", "envs"):
        shutil.copytree(ROOT / d, dest / d)
    return dest


def snakemake(workdir, *args, check=True):
    proc = subprocess.run(SNAKEMAKE + list(args), cwd=workdir, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc
