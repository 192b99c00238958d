"""Commands read the files their rule declares (issue 43, item 2): each rule renders `--flag RUN=PATH`
pairs from the one mapping its input is made of, and each command reads exactly the files it is given,
wherever they lie; a run its spec needs without a file is one line naming the run and the flag."""
import json
import shlex
import types

import pandas as pd
import pytest
import yaml

from lnrepro.analyses import layer_dependency, update_norms
from lnrepro.args import RunFiles, run_path_pair
from lnrepro.cli import main
from test_cli import one_line_error, subparser
from workflow_helpers import ROOT, pipeline_of


def given(rendered):
    """{flag: {key: path}} of a rule's rendered `--flag KEY=PATH ...` param."""
    pairs, flag = {}, None
    for token in shlex.split(rendered):
        if token.startswith("--"):
            flag = token[2:]
            pairs[flag] = {}
        else:
            key, path = run_path_pair(token)
            pairs[flag][key] = path
    return pairs


def paths(files):
    return sorted(path for pairs in files.values() for path in pairs.values())


def listed(inputs, *names):
    """The files of a rule's named input lists."""
    return sorted(f for name in names for f in inputs[name])


@pytest.fixture(scope="module", params=["demo", "config"])
def pipeline(request):
    p = pipeline_of(yaml.safe_load((ROOT / "config" / f"{request.param}.yaml").read_text()))
    p.validate()
    return p


def options(command):
    return {o[2:] for a in subparser(command)._actions for o in a.option_strings}


def rules(p):
    """(command, rendered pairs, the run files of its input) of every rule that hands its files over."""
    w = types.SimpleNamespace
    for fig in p.config["figures"]:
        yield "figure", p.figures.figure_pairs(w(fig=fig)), listed(p.figures.figure_inputs(w(fig=fig)), "metrics", "bleu")
    yield "claims", p.claims.claims_pairs(None), p.claims.claims_inputs(None)
    yield "claims", p.claims.lab_claims_pairs(None), p.claims.lab_claims_inputs(None)
    admin = p.config.get("admin", {})
    for section in ("table1", "table2", "lr_grid"):
        if section in admin:
            yield ("lr-grid" if section == "lr_grid" else "admin-tables", p.admin.table_pairs(section)(None),
                   listed(p.admin.table_inputs(section)(None), "metrics", "bleu"))
    for fig in admin.get("layer_dependency", {}):
        yield "layer-dependency", p.admin.dependency_pairs(w(ldfig=fig)), listed(p.admin.dependency_inputs(w(ldfig=fig)), "metrics")
    for fig in admin.get("update_norms", {}):
        yield "update-norms", p.admin.update_norms_pairs(w(unfig=fig)), listed(p.admin.update_norms_inputs(w(unfig=fig)), "metrics")
    if p.runs.bert_section().get("fig5"):
        yield "figure5", p.bert.fig5_pairs(None), listed(p.bert.fig5_inputs(None), "metrics", "summaries")


def test_each_rule_hands_its_command_exactly_the_files_of_its_input(pipeline):
    seen = set()
    for command, rendered, inputs in rules(pipeline):
        files = given(rendered)
        assert paths(files) == sorted(inputs), command
        assert set(files) <= options(command), (command, set(files))
        seen.add(command)
    assert seen == {"figure", "claims", "admin-tables", "lr-grid", "layer-dependency", "update-norms", "figure5"}


def test_the_claims_are_given_a_bert_runs_pretraining_metrics(pipeline):
    """The rule knows which runs are BERT runs (no file probed for): their --metrics are results/pretrain's."""
    metrics = given(pipeline.claims.claims_pairs(None))["metrics"]
    bert = [run for run in metrics if run in pipeline.runs.bert_runs()]
    assert bert and all(metrics[run] == f"results/pretrain/{run}/metrics.csv" for run in bert)
    assert all(path == f"results/train/{run}/metrics.csv" for run, path in metrics.items() if run not in bert)


# ---- the commands read the files given, and only them ----
def curve(path, losses):
    path.parent.mkdir(parents=True, exist_ok=True)
    epochs = range(1, len(losses) + 1)
    pd.DataFrame({"epoch": list(epochs), "updates": [10 * e for e in epochs], "valid_loss": losses,
                  "valid_nll": losses, "train_loss": losses, "diverged": 0, "capped": 0,
                  "checkpoint": [f"checkpoints/epoch{e}.pt" for e in epochs]}).to_csv(path, index=False)
    return path


SPEC = {"title": "t", "run_settings": {}, "panels": [{"title": "p", "metric": "valid_loss", "runs": ["r1"]}]}


def test_a_figure_reads_the_metrics_file_given_wherever_it_lies(tmp_path, monkeypatch):
    """A metrics.csv outside any results/ layout is drawn; the results/train/r1/metrics.csv beside it is not."""
    monkeypatch.chdir(tmp_path)
    curve(tmp_path / "results" / "train" / "r1" / "metrics.csv", [9.0, 9.0])  # where the old command looked
    odd = curve(tmp_path / "elsewhere" / "copy of r1.csv", [5.0, 4.0])
    assert main(["figure", "--spec", json.dumps(SPEC), "--metrics", f"r1={odd}", "--pdf", "out/f.pdf",
                 "--csv", "out/f.csv"]) == 0
    assert list(pd.read_csv("out/f.csv").value) == [5.0, 4.0]


def test_the_claims_read_and_record_exactly_the_files_given(tmp_path, monkeypatch):
    """Provenance lists the files given; a pre-training folder of the same run name (the old command took
    it where it existed) is neither read nor listed."""
    monkeypatch.chdir(tmp_path)
    curve(tmp_path / "results" / "pretrain" / "a" / "metrics.csv", [1.0])
    a, b = curve(tmp_path / "x" / "a.csv", [6.0, 5.0]), curve(tmp_path / "y" / "b.csv", [6.0, 5.5])
    bleu = tmp_path / "a_bleu.csv"
    pd.DataFrame({"epoch": [1, 2], "bleu": [3.0, 4.0]}).to_csv(bleu, index=False)
    spec = {"gap": {"kind": "gap", "metric": "valid_loss", "a": "a", "b": "b", "paper": "p", "figure": "f", "max": 0},
            "level": {"kind": "level", "metric": "bleu", "a": "a", "paper": "p", "figure": "f", "min": 4}}
    assert main(["claims", "--spec", json.dumps(spec), "--metrics", f"a={a}", f"b={b}", "--bleu", f"a={bleu}",
                 "--csv", "c.csv", "--md", "c.md", "--provenance-csv", "p.csv"]) == 0
    table = pd.read_csv("c.csv").set_index("claim")
    assert table.loc["gap", "ours"] == -0.5 and table.loc["level", "ours"] == 4.0
    assert sorted(pd.read_csv("p.csv").result) == sorted(map(str, (a, b, bleu)))
    assert "Its 3 inputs were made by:" in (tmp_path / "c.md").read_text()


# ---- a run the spec needs without a file: one line naming the run and the flag ----
TABLE2 = {"table2": {"title": "t", "corpus_label": "c", "depths": [6], "runs": {"post": ["r"]}}}
GRID = {"lr_grid": {"title": "g", "cells": [{"norm": "post", "lr": 1e-3, "beta2": 0.98, "run": "r"}]}}
FIG5 = {"title": "t", "runs": ["r"], "tasks": ["mrpc"], "run_settings": {"r": {}}, "rounds": {"r": [1]}}
OUTCOME = {"c": {"kind": "outcome", "a": "r", "paper": "p", "min": 1}}


@pytest.mark.parametrize("argv, message", [
    (["figure", "--spec", json.dumps(SPEC), "--pdf", "f.pdf", "--csv", "f.csv"],
     "lnrepro figure: error: argument --metrics: no file given for r1 (its spec reads it: add r1=PATH)"),
    (["admin-tables", "--table", "2", "--spec", json.dumps(TABLE2), "--csv", "t.csv", "--md", "t.md"],
     "lnrepro admin-tables: error: argument --metrics: no file given for r (its spec reads it: add r=PATH)"),
    (["lr-grid", "--spec", json.dumps(GRID), "--metrics", "r=m.csv", "--pdf", "g.pdf", "--csv", "g.csv"],
     "lnrepro lr-grid: error: argument --bleu: no file given for r (its spec reads it: add r=PATH)"),
    (["figure5", "--spec", json.dumps(FIG5), "--metrics", "r=m.csv", "--pdf", "f.pdf", "--csv", "f.csv"],
     "lnrepro figure5: error: argument --summaries: no file given for r:mrpc:1 (its spec reads it: add r:mrpc:1=PATH)"),
    (["claims", "--spec", json.dumps(OUTCOME), "--csv", "c.csv", "--md", "c.md"],
     "lnrepro claims: error: argument --metrics: no file given for r (its spec reads it: add r=PATH)"),
    (["figure", "--spec", json.dumps(SPEC), "--metrics", "r1=a.csv", "r1=b.csv", "--pdf", "f.pdf", "--csv", "f.csv"],
     "lnrepro figure: error: argument --metrics: r1 is given twice (a.csv, b.csv)"),
    (["figure", "--spec", json.dumps(SPEC), "--metrics", "r1", "--pdf", "f.pdf", "--csv", "f.csv"],
     "lnrepro figure: error: argument --metrics: expected RUN=PATH, got 'r1' (see lnrepro figure --help)"),
], ids=["figure", "admin_tables", "lr_grid_bleu", "figure5_summary", "claims", "given_twice", "not_a_pair"])
def test_a_run_without_its_file_is_one_line(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert one_line_error(argv, capsys) == message


@pytest.mark.parametrize("module, command, data", [(layer_dependency, "layer-dependency", (None, None)),
                                                   (update_norms, "update-norms", (None,))])
def test_a_probe_refuses_a_run_without_its_metrics_before_reading_anything(module, command, data, capsys):
    files = RunFiles(command, metrics={"r1": "r1.csv"})
    with pytest.raises(SystemExit) as done:
        module.measure({"runs": {"r1": {}, "r2": {}}}, files, *data)
    assert done.value.code == 2
    assert capsys.readouterr().err == (f"lnrepro {command}: error: argument --metrics: no file given for r2 "
                                       "(its spec reads it: add r2=PATH)\n")
