"""The README's quick start, as written (issue 31): its test command is the one CI runs, and its demo
command is the one the end-to-end test runs (test_workflow's `demo` fixture takes its arguments
from the README) and plans every figure here in a dry run, not a second demo."""
import re

import pytest

from workflow_helpers import ROOT, quick_start_commands, quick_start_demo_args, snakemake, workflow_copy


def ci_command():
    """The last command of .ci/run, the CI script (after its `set` and `cd`)."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    return [line for line in lines if line and not line.startswith(("#", "set ", "cd "))][-1]


def test_the_quick_start_has_two_commands_both_setting_up_first():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert all(command.startswith("bash workflow/scripts/setup.sh && .venv/bin/") for command in commands)
    assert (ROOT / "workflow" / "scripts" / "setup.sh").exists()


def test_the_quick_starts_test_command_is_what_ci_runs():
    assert quick_start_commands()[1] == ci_command()


@pytest.mark.medium
def test_the_quick_starts_demo_command_plans_every_figure(tmp_path):
    workflow_copy(tmp_path)
    plan = snakemake(tmp_path, *quick_start_demo_args(), "-n").stdout
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", plan, re.M))
    assert int(jobs["total"]) > 200 and jobs["all"] == "1"
    for rule in ("plot_figure", "plot_gradient_norms", "check_theory", "plot_fig5", "check_claims", "lr_grid"):
        assert rule in jobs, rule


def test_the_readmes_fast_lane_leaves_out_only_registered_tiers(pytestconfig):
    """The README's and docs/testing.md's fast lane names markers pytest knows (a typo there selects
    every test: `-m "not slwo"` runs the hour), the same expression in both."""
    lanes = {re.search(r'pytest -m "([^"]+)"', (ROOT / doc).read_text()).group(1) for doc in ("README.md", "docs/testing.md")}
    assert lanes == {"not slow and not medium"}
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert {"slow", "medium"} <= registered
