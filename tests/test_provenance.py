"""Provenance (issue 30, item 6): each result a figure, table or claim reads has a sidecar saying which
code, versions and settings made it; claims.md and its provenance table flag inputs other code made;
LNREPRO_DEMO_DIR refuses a demo another commit built. Real commands (a tiny `lnrepro train`,
`evaluate`, `claims`) and real git repositories."""
import json
import os
import platform
import subprocess
import sys
from importlib import metadata

import pandas as pd
import pytest
import yaml

import lnrepro
from lnrepro.cli import RESULTS, main, template_fields
from lnrepro.core import provenance
from workflow_helpers import ROOT, foreign_demo, snakemake, workflow_copy

TINY = ["--enc-layers", "1", "--dec-layers", "1", "--d-model", "16", "--ffn-dim", "32", "--heads", "2",
        "--max-tokens", "400", "--epochs", "1", "--device", "cpu", "--threads", "1"]
OTHER_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def train(data, out, *flags):
    assert main(["train", "--data", str(data), "--out", str(out), *TINY, *flags]) == 0
    return provenance.read(out / "metrics.csv")


def evaluate(data, run, out, *flags):
    assert main(["evaluate", "--metrics", str(run / "metrics.csv"), "--data", str(data), "--reference",
                 str(data / "test.ref"), "--beam", "1", "--device", "cpu", "--threads", "1", "--out", str(out),
                 *flags]) == 0
    return provenance.read(out)


@pytest.fixture(scope="module")
def trained(toy_data, tmp_path_factory, one_thread):
    run = tmp_path_factory.mktemp("prov") / "run"
    return run, train(toy_data, run, "--lr", "1e-3")


def test_training_records_code_versions_and_settings_beside_its_metrics(trained):
    run, entry = trained
    assert (run / "metrics.csv.provenance.json").is_file()
    assert entry["result"] == "metrics.csv" and entry["command"] == "train"
    assert entry["command_line"].startswith("lnrepro train --data ")
    assert entry["lnrepro"] == lnrepro.__version__
    assert entry["torch"] == metadata.version("torch") and entry["sacrebleu"] == metadata.version("sacrebleu")
    assert entry["python"] == platform.python_version()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert entry["commit"] == (head or "unknown") and entry["dirty"] in (True, False, "unknown")
    assert len(entry["settings_sha256"]) == 64 and entry["time"].endswith("+00:00")


def test_the_settings_digest_changes_with_a_setting_and_nothing_else(trained, toy_data, tmp_path):
    run, entry = trained
    # the same settings: another output folder, the flags in another order, 1e-3 spelled 0.001
    same = train(toy_data, tmp_path / "elsewhere", "--lr", "0.001")
    assert same["settings_sha256"] == entry["settings_sha256"]
    other = train(toy_data, tmp_path / "other_lr", "--lr", "2e-3")
    assert other["settings_sha256"] != entry["settings_sha256"]


def test_a_result_rewritten_after_its_record_is_flagged(trained, tmp_path):
    run, entry = trained
    copy = tmp_path / "metrics.csv"
    copy.write_bytes((run / "metrics.csv").read_bytes())
    provenance.write_sidecars([copy], entry)
    assert provenance.concern(provenance.read(copy), entry["commit"], copy) in ("", provenance.DIRTY_TEXT)
    copy.write_text(copy.read_text() + "\n")  # edited by hand, or written by other code that records nothing
    assert provenance.concern(provenance.read(copy), entry["commit"], copy) == provenance.CHANGED


def test_evaluation_records_its_bleu_tables_provenance(trained, toy_data, tmp_path):
    run, _ = trained
    beam1 = evaluate(toy_data, run, tmp_path / "bleu.csv")
    assert beam1["command"] == "evaluate" and beam1["result"] == "bleu.csv"
    assert evaluate(toy_data, run, tmp_path / "again" / "bleu.csv")["settings_sha256"] == beam1["settings_sha256"]
    assert evaluate(toy_data, run, tmp_path / "b2.csv", "--lenpen", "0.5")["settings_sha256"] != beam1["settings_sha256"]


def test_a_provenance_that_cannot_be_written_never_fails_the_job(trained, toy_data, tmp_path, monkeypatch, capsys):
    def broken(results, entry):
        raise OSError("disk full")
    monkeypatch.setattr(provenance, "write_sidecars", broken)
    run, _ = trained
    assert evaluate(toy_data, run, tmp_path / "bleu.csv") is None  # evaluate() asserted exit 0
    assert "warning: provenance not recorded: disk full" in capsys.readouterr().err


# ---- the commit and the dirty flag, in a throwaway checkout -------------------------------------
def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path):
    """A committed checkout with the project's layout; returns (repo, its package folder)."""
    repo = tmp_path / "repo"
    for path in ("src/lnrepro/__init__.py", "workflow/rules/x.smk", "config/demo.yaml", "Snakefile", "README.md",
                 "tests/test_x.py"):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("original\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    provenance.source_state.cache_clear()
    yield repo, repo / "src" / "lnrepro"
    provenance.source_state.cache_clear()


def state(package_dir):
    provenance.source_state.cache_clear()
    return provenance.source_state(package_dir)


def test_a_clean_checkout_records_its_commit(checkout):
    repo, package = checkout
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert state(package) == {"commit": head, "dirty": False}


@pytest.mark.parametrize("path", ["src/lnrepro/__init__.py", "workflow/rules/x.smk", "config/demo.yaml", "Snakefile"])
def test_a_changed_tracked_file_of_code_rules_or_config_is_dirty(checkout, path):
    repo, package = checkout
    (repo / path).write_text("changed\n")
    assert state(package)["dirty"] is True


@pytest.mark.parametrize("path", ["README.md", "tests/test_x.py", "config/my_own.yaml", "src/lnrepro/scratch.txt"])
def test_docs_tests_and_untracked_files_are_not_dirty(checkout, path):
    repo, package = checkout
    (repo / path).write_text("changed\n")
    assert state(package)["dirty"] is False


def test_no_checkout_no_git_or_a_copy_inside_a_checkout_is_unknown(checkout, tmp_path, monkeypatch):
    repo, _ = checkout
    unknown = {"commit": "unknown", "dirty": "unknown"}
    installed = repo / ".venv" / "lib" / "site-packages" / "lnrepro"  # a wheel's copy inside the checkout
    installed.mkdir(parents=True)
    assert state(installed) == unknown
    (tmp_path / "plain" / "src" / "lnrepro").mkdir(parents=True)
    assert state(tmp_path / "plain" / "src" / "lnrepro") == unknown
    monkeypatch.setenv("PATH", str(tmp_path / "no_such_bin"))
    assert state(repo / "src" / "lnrepro") == unknown


# ---- claims.md and the report's provenance table -------------------------------------------------
def fake_result(path, entry):
    """A CSV a claim reads, and its sidecar (None: none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"epoch": [1, 2], "valid_loss": [5.0, 4.0], "diverged": [0, 0]}).to_csv(path, index=False)
    if entry is not None:
        provenance.write_sidecars([path], entry)


def test_claims_flag_every_input_other_code_made(tmp_path):
    mine = {**provenance.current(), "dirty": False}
    made_by = {"ours": mine, "older": {**mine, "commit": OTHER_COMMIT}, "edited": {**mine, "dirty": True},
               "before": None}
    for run, entry in made_by.items():
        fake_result(tmp_path / "train" / run / "metrics.csv", entry)
    spec = {f"{run}_vs_ours": {"kind": "gap", "metric": "valid_loss", "a": run, "b": "ours", "paper": "p",
                               "figure": "fig2", "min": -1} for run in made_by if run != "ours"}
    given = [f"{run}={tmp_path / 'train' / run / 'metrics.csv'}" for run in made_by]
    assert main(["claims", "--spec", json.dumps(spec), "--metrics", *given, "--csv", str(tmp_path / "c.csv"),
                 "--md", str(tmp_path / "c.md"), "--provenance-csv", str(tmp_path / "p.csv")]) == 0
    concerns = pd.read_csv(tmp_path / "p.csv", keep_default_na=False, dtype=str).set_index("result").concern
    concerns.index = [p.split("/")[-2] for p in concerns.index]
    assert concerns["ours"] == "" and concerns["before"] == "no provenance"
    assert concerns["older"] == "other commit 0123456789" and concerns["edited"].startswith("dirty")
    md = (tmp_path / "c.md").read_text()
    section = md[md.index("## Provenance"):]
    assert f"This table: lnrepro {lnrepro.__version__} at commit {provenance.short(mine['commit'])}" in section
    assert "Its 4 inputs were made by:" in section and "**3 of them not made by this commit's clean code:**" in section
    assert f"- `{tmp_path / 'train' / 'older' / 'metrics.csv'}`: other commit 0123456789" in section
    assert f"- `{tmp_path / 'train' / 'before' / 'metrics.csv'}`: no provenance" in section
    assert f"`{tmp_path / 'train' / 'ours' / 'metrics.csv'}`" not in section
    # and the claims' own outputs have theirs
    assert provenance.read(tmp_path / "c.csv")["command"] == "claims"


@pytest.mark.medium
def test_the_report_flags_a_claims_input_other_code_made(tmp_path):
    """The real workflow on a config of the theory checks alone (~20 s): its claims and report name
    the commit of their input; one made by older code (its sidecar says so) is flagged in both."""
    workdir = workflow_copy(tmp_path)
    demo = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    theory_only = {**{k: demo[k] for k in ("corpora", "models", "train_defaults", "threads", "theory")}, "runs": {}}
    (workdir / "theory_only.yaml").write_text(yaml.safe_dump(theory_only))
    snakemake(workdir, "--configfile", "theory_only.yaml", "--cores", "2")
    checks = workdir / "results" / "figures" / "theory_checks.csv"
    assert provenance.read(checks)["command"] == "theory"
    png = workdir / "results" / "figures" / "theory.png"  # the report shows the PNG: it has its own record
    assert provenance.read(png)["command"] == "theory" and provenance.read(png)["result_sha256"] == provenance.file_digest(png)
    provenance.write_sidecars([checks], {**provenance.read(checks), "commit": OTHER_COMMIT})  # as older code left it
    snakemake(workdir, "--configfile", "theory_only.yaml", "--cores", "2", "--forcerun", "check_claims")
    assert "- `results/figures/theory_checks.csv`: other commit 0123456789" in (workdir / "results" / "claims.md").read_text()
    snakemake(workdir, "--configfile", "theory_only.yaml", "--report", "report.html")
    html = (workdir / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "claims_provenance.csv" in html and "other commit 0123456789" in html
    assert "## By figure" in html and "system-message" not in html  # the claims' text, never parsed as markup


# ---- LNREPRO_DEMO_DIR ------------------------------------------------------------------------------
def demo_dir(tmp_path, commit, dirty=False, others=OTHER_COMMIT):
    """A finished demo's results: claims.csv made by commit (None: no record), a run's metrics by others."""
    fake_result(tmp_path / "results" / "claims.csv", None if commit is None else
                {**provenance.current(), "commit": commit, "dirty": dirty})
    fake_result(tmp_path / "results" / "train" / "run" / "metrics.csv", {**provenance.current(), "commit": others,
                                                                          "dirty": False})
    for unrecorded in ("train/run/checkpoints/epoch1.pt", "train/run/progress.csv", "data/deen/train.src",
                       "README.md"):  # what no command records: never asked for a record
        (tmp_path / "results" / unrecorded).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "results" / unrecorded).write_text("x\n")
    return tmp_path


def test_a_demo_of_this_commit_is_checked(tmp_path):
    assert foreign_demo(demo_dir(tmp_path, OTHER_COMMIT), commit=OTHER_COMMIT) is None


@pytest.mark.parametrize("commit, dirty, why", [
    ("fedcba9876543210fedcba9876543210fedcba98", False, "results/claims.csv: other commit fedcba9876"),
    (OTHER_COMMIT, True, "results/claims.csv: dirty"),
    (None, False, "results/claims.csv: no provenance"),
])
def test_a_demo_of_other_code_is_refused_unless_told_otherwise(tmp_path, commit, dirty, why):
    demo = demo_dir(tmp_path, commit, dirty)
    message = foreign_demo(demo, commit=OTHER_COMMIT)
    assert message.startswith(f"LNREPRO_DEMO_DIR={demo}: 1 result(s) not made by this checkout's clean commit 0123456789")
    assert why in message and "LNREPRO_DEMO_ANY_COMMIT=1" in message
    # another commit's or edited code's demo may be checked anyway; one without a record may not
    assert (foreign_demo(demo, commit=OTHER_COMMIT, any_commit=True) is None) == (commit is not None)


def test_a_result_without_its_record_or_changed_is_refused_even_for_any_commit(tmp_path):
    """A tampered bleu.csv whose .provenance.json was deleted passed LNREPRO_DEMO_DIR (issue 42)."""
    demo = demo_dir(tmp_path, OTHER_COMMIT)
    fake_result(demo / "results" / "eval" / "run" / "bleu.csv", None)  # its record deleted
    metrics = demo / "results" / "train" / "run" / "metrics.csv"
    metrics.write_text(metrics.read_text().replace("4.0", "3.0"))  # edited after it was recorded
    hyp = demo / "results" / "eval" / "run" / "hyp_epoch1.txt"
    fake_result(hyp, {**provenance.current(), "commit": OTHER_COMMIT, "dirty": False})
    hyp.unlink()  # deleted after it was recorded
    for any_commit in (False, True):
        message = foreign_demo(demo, commit=OTHER_COMMIT, any_commit=any_commit)
        assert message.startswith(f"LNREPRO_DEMO_DIR={demo}: 3 result(s) not made by this checkout's clean commit")
        assert "  results/eval/run/bleu.csv: no provenance" in message
        assert f"  results/eval/run/hyp_epoch1.txt: {provenance.DELETED}" in message
        assert f"  results/train/run/metrics.csv: {provenance.CHANGED}" in message


# ---- what a figure or table was drawn from, and the hypotheses beside a BLEU table ------------------
def test_evaluation_records_its_hypotheses_and_removes_its_stale_ones(trained, toy_data, tmp_path):
    """Retraining with fewer epochs left the old hyp_epoch*.txt beside the new table (issue 42)."""
    run, _ = trained
    folder = tmp_path / "eval"
    stale, other = folder / "hyp_epoch7.txt", folder / "hyp_avg1_epoch3.txt"  # the latter: another job's
    for path in (stale, other):
        fake_result(path, {**provenance.current(), "command": "evaluate"})
    evaluate(toy_data, run, folder / "bleu.csv")
    assert not stale.exists() and not provenance.sidecar_path(stale).exists()
    assert other.exists() and provenance.sidecar_path(other).exists()
    hyp = folder / "hyp_epoch1.txt"
    entry = provenance.read(hyp)
    assert entry["command"] == "evaluate" and entry["result_sha256"] == provenance.file_digest(hyp)
    assert len(hyp.read_text().splitlines()) == len((toy_data / "test.ref").read_text().splitlines())


@pytest.mark.medium
def test_a_figure_drawn_from_an_unrecorded_or_edited_result_says_so(trained, tmp_path):
    """A figure redrew a hand-edited metrics.csv without a mark (issue 42): now its title and log say so."""
    run, entry = trained
    for name in ("unrecorded", "edited", "recorded"):
        copy = tmp_path / "results" / "train" / name / "metrics.csv"
        copy.parent.mkdir(parents=True)
        copy.write_bytes((run / "metrics.csv").read_bytes())
        if name != "unrecorded":
            provenance.write_sidecars([copy], entry)
    edited = tmp_path / "results" / "train" / "edited" / "metrics.csv"
    edited.write_text(edited.read_text() + "\n")
    spec = {"title": "t", "panels": [{"title": "p", "metric": "valid_loss", "runs": ["unrecorded", "edited", "recorded"]}],
            "run_settings": {}}
    given = [f"{name}=results/train/{name}/metrics.csv" for name in ("unrecorded", "edited", "recorded")]
    proc = subprocess.run([sys.executable, "-m", "lnrepro.cli", "figure", "--spec", json.dumps(spec), "--metrics", *given,
                           "--pdf", "f.pdf", "--csv", "f.csv"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: drawn from")]
    assert warnings == ["warning: drawn from results/train/edited/metrics.csv: " + provenance.CHANGED,
                        "warning: drawn from results/train/unrecorded/metrics.csv: no provenance"], proc.stderr
    assert provenance.read(tmp_path / "f.pdf")["command"] == "figure"


def test_the_mark_stands_under_the_figures_title(tmp_path, monkeypatch):
    from lnrepro.analyses.plotting import plt, save_figure
    result = tmp_path / "results" / "eval" / "run" / "bleu.csv"
    fake_result(result, None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(provenance, "_inputs_read", {str(result)})  # what watch_reads() noted
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    save_figure(fig, "Title", tmp_path / "f.pdf", mark="DEMO SCALE")
    assert fig._suptitle.get_text() == "Title\nDEMO SCALE\nUNRECORDED INPUT (1): results/eval/run/bleu.csv: no provenance"


# ---- which commands record -----------------------------------------------------------------------
@pytest.mark.parametrize("command", sorted(RESULTS))
def test_each_recording_commands_results_name_its_own_options(command):
    """A template naming an option the command lacks would record nothing (a KeyError, caught)."""
    from test_cli import subparser
    dests = {action.dest for action in subparser(command)._actions}
    fields = set().union(*(template_fields(t) for t in RESULTS[command]))
    assert fields and fields <= dests, fields - dests


@pytest.mark.medium
def test_the_end_to_end_tests_refuse_a_demo_of_another_commit(tmp_path):
    """The demo fixture itself, in a pytest of its own: a setup error naming the result, no build (the
    folder has no Snakefile either: were it not refused, snakemake would fail at once)."""
    demo = demo_dir(tmp_path, "fedcba9876543210fedcba9876543210fedcba98",
                    others=provenance.source_state(ROOT / "src" / "lnrepro")["commit"])
    env = {**os.environ, "LNREPRO_DEMO_DIR": str(demo), "LNREPRO_DEMO_ANY_COMMIT": "0"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "test_workflow.py"), "-k", "test_nothing_to_do_after_the_demo"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert f"LNREPRO_DEMO_DIR={demo}: 1 result(s) not made by this checkout's clean commit" in proc.stdout
    assert "results/claims.csv: other commit fedcba9876" in proc.stdout and "snakemake" not in proc.stdout.lower()
