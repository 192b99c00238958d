"""Running the real workflow from a test: a scratch copy of it, a Snakemake call that fails loudly, and
the README's quick start commands as written."""
import contextlib
import copy
import io
import json
import re
import shlex
import shutil
import subprocess
import sys
import types
from pathlib import Path

from lnrepro.core import provenance
from lnrepro.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def workflow_copy(dest):
    """Snakefile, workflow/, config/ and envs/ (rules name their conda env) in a scratch directory."""
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    for d in ("workflow", "config", "envs"):
        shutil.copytree(ROOT / d, dest / d)
    return dest


def snakemake(workdir, *args, check=True, timeout=None):
    proc = subprocess.run(SNAKEMAKE + list(args), cwd=workdir, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def pipeline_of(config):
    """The Pipeline of a config, as common.smk makes it, without Snakemake (no target, not the main process)."""
    return Pipeline(config, types.SimpleNamespace(basedir=str(ROOT), is_main_process=False, rules=[]))


def refusal_before_any_job(config):
    """What planning the config prints before it stops (exit status 1), in-process: the checks the rule
    files and the Snakefile run as Snakemake reads them, in their order, with no target named (every
    section checked). A few end-to-end runs show the Snakefile calls them (tests/test_workflow.py)."""
    p = pipeline_of(copy.deepcopy(config))  # the checks fill in defaults and expand sweeps in place: not the caller's
    printed = io.StringIO()
    with contextlib.redirect_stderr(printed):
        try:
            for check in (p.validate, p.sections.check_all):  # common.smk's, then the Snakefile's (rule all)
                check()
        except SystemExit as stopped:
            assert stopped.code == 1, stopped.code
            return printed.getvalue()
    raise AssertionError("the config was accepted")


DEMO_CHECKED = "claims.csv"  # the demo's last result: a demo without its sidecar has no provenance


def foreign_demo(workdir, commit=None, any_commit=False):
    """Why a finished demo (LNREPRO_DEMO_DIR) is not one this checkout's clean commit built, or None:
    the end-to-end tests would otherwise pass on what older code made. any_commit (LNREPRO_DEMO_ANY_COMMIT=1)
    checks it anyway."""
    commit = commit or provenance.source_state(ROOT / "src" / "lnrepro")["commit"]
    results = Path(workdir) / "results"
    flagged = provenance.foreign_results(results, commit, (DEMO_CHECKED, *provenance.recorded_results(results)))
    if any_commit:  # another commit's results, checked anyway: but none without its record or changed since
        flagged = [(path, why) for path, why in flagged
                   if why in (provenance.NO_PROVENANCE, provenance.CHANGED, provenance.DELETED, provenance.MISSING)]
    if not flagged:
        return None
    shown = [f"  {path.relative_to(workdir)}: {why}" for path, why in flagged[:10]]
    more = [f"  ... and {len(flagged) - 10} more"] if len(flagged) > 10 else []
    return "\n".join([f"LNREPRO_DEMO_DIR={workdir}: {len(flagged)} result(s) not made by this checkout's clean "
                      f"commit {provenance.short(commit)}:", *shown, *more,
                      "Build the demo with this commit (leave LNREPRO_DEMO_DIR unset), or set "
                      "LNREPRO_DEMO_ANY_COMMIT=1 to check another commit's demo anyway (never one whose results "
                      "lack their records or changed since)."])


def quick_start_commands():
    """The two commands of README.md's quick start code block, as written (comments dropped)."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^## Quick start.*?^```bash\n(.*?)^```", readme, re.S | re.M).group(1)
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines() if line.strip()]


def quick_start_demo_args():
    """The arguments the quick start gives Snakemake after setting up (`.venv/bin/snakemake ARGS`)."""
    setup, run = quick_start_commands()[0].split(" && ")
    argv = shlex.split(run)
    assert setup == "bash workflow/scripts/setup.sh" and argv[0] == ".venv/bin/snakemake", run
    return argv[1:]


def report_captions(report):
    """{result path: its caption's HTML} from a Snakemake report (the page's `var results = {...}`)."""
    text = report.read_text(encoding="utf-8")
    start = text.index("var results = {") + len("var results = ")
    results, _ = json.JSONDecoder().raw_decode(text[start:])
    return {path: entry["caption"] for path, entry in results.items()}
