"""Which config's run wrote each result, so that one checkout can hold the demo's results and another
config's without either overwriting the other's.

The demo and config/config.yaml share run, figure and table names (the same experiments at two
scales) and so the same paths under results/: a run of the one would retrain the other's runs and
redraw its figures. Before a real run starts its jobs (Snakemake's onstart: not -n, not a cluster
job), the outputs it will write are checked against a ledger of the config that last planned each
(`.snakemake/lnrepro/owners.json`, beside Snakemake's own records of this working directory): an
output that exists and belongs to another config stops the run, with the way out, before any job
runs; otherwise the run claims its outputs. A config is named by its first --configfile (layered
files after it are edits of it; `--config key=value` too), the demo by config/demo.yaml. Results
built before the ledger existed have no owner: they are not protected.
"""
import json
import os
from pathlib import Path

LEDGER = Path(".snakemake/lnrepro/owners.json")
DEFAULT_CONFIG = "config/demo.yaml"
# a training keeps its state beside its outputs (resume checkpoints): that it exists is its run's too
STATE_BESIDE_OUTPUT = {"train": "checkpoints", "pretrain": "checkpoints"}
SHOWN = 5


class OtherConfigsResults(Exception):
    """A planned job would overwrite a result another config's run wrote."""


def config_name(configfiles, workdir="."):
    """The config a run uses: its first --configfile, relative to the working directory; the demo's by default."""
    first = os.fspath(configfiles[0]) if configfiles else DEFAULT_CONFIG
    return os.path.relpath(os.path.realpath(os.path.join(workdir, first)), os.path.realpath(workdir))


def read_ledger(workdir="."):
    path = Path(workdir) / LEDGER
    try:
        ledger = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:  # a ledger that cannot be read protects nothing: say so, never guess
        raise OtherConfigsResults(f"{path}: unreadable ({e}); it records which config wrote each result: "
                                  f"restore or remove it") from None
    return ledger if isinstance(ledger, dict) else {}


def write_ledger(ledger, workdir="."):
    path = Path(workdir) / LEDGER
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(ledger, indent=0, sort_keys=True))
    os.replace(tmp, path)


def written(rule, output, workdir="."):
    """Whether a planned output holds something now: the file, or the state its job keeps beside it."""
    path = Path(workdir) / output
    state = STATE_BESIDE_OUTPUT.get(rule)
    return path.exists() or bool(state and (path.parent / state).exists())


def conflicts(planned, config, ledger, workdir="."):
    """[(output, its owner)] of the planned (rule, output) pairs that another config wrote and that hold something."""
    return sorted({(output, ledger[output]) for rule, output in planned
                   if ledger.get(output, config) != config and written(rule, output, workdir)})


def refusal(found, config):
    owners = sorted({owner for _, owner in found})
    shown = [f"  {output} (written by {owner})" for output, owner in found[:SHOWN]]
    more = [f"  ... and {len(found) - SHOWN} more"] if len(found) > SHOWN else []
    return "\n".join([
        f"lnrepro: this run ({config}) would overwrite {len(found)} result(s) of another config "
        f"({', '.join(owners)}) in this checkout:", *shown, *more,
        "Nothing ran. Build each config in a checkout of its own, which shares this one's git history "
        "and .venv:",
        '  git worktree add ../lnrepro-other && ln -s "$PWD/.venv" ../lnrepro-other/.venv && cd ../lnrepro-other',
        f"or, to replace them, delete those results (or {LEDGER}, which records who wrote what) first."])


def claim(planned, configfiles, workdir="."):
    """Check the planned (rule, output) pairs against the ledger and record them as this config's.
    Raises OtherConfigsResults (nothing recorded) where one would overwrite another config's result."""
    config = config_name(configfiles, workdir)
    ledger = read_ledger(workdir)
    found = conflicts(planned, config, ledger, workdir)
    if found:
        raise OtherConfigsResults(refusal(found, config))
    ledger.update({output: config for _, output in planned})
    write_ledger(ledger, workdir)


def planned_outputs(workflow):
    """(rule, output) of every job a real run is about to run (Snakemake's DAG, built before onstart)."""
    return [(job.rule.name, str(output)) for job in workflow.dag.needrun_jobs() for output in job.output]


def claim_planned_outputs(workflow):
    """Snakefile's onstart: refuse, in one message and before any job, a run over another config's results."""
    try:
        claim(planned_outputs(workflow), workflow.overwrite_configfiles)
    except OtherConfigsResults as e:
        raise SystemExit(str(e)) from None
