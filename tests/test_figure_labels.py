"""What a figure says about itself agrees with the papers and with what was trained (issue 31): each
title names the paper's figure as the paper numbers it, each legend label states the lr and warm-up
its run's training command gets (the demo's run names keep the papers' values while it trains scaled
ones), and only the demo carries the scale mark. Read from dry runs of both configs: seconds."""
import json
import re
import shlex

import pytest
import yaml

from lnrepro.analyses import figure, figure5
from lnrepro.settings import lr_text
from workflow_helpers import ROOT, snakemake, workflow_copy

CONFIGS = ("demo.yaml", "config.yaml")

# where each figure's title is in a config, and how the paper numbers that figure
PAPER_FIGURES = {
    ("figures", "fig2", "title"): "Xiong et al. Fig 2: ",
    ("figures", "fig4", "title"): "Xiong et al. Fig 4: ",
    ("figures", "figS1", "title"): "Xiong et al. Supplementary Fig 1 (cited as Figure 6 in its text): ",
    ("gradient_probe", "title"): "Xiong et al. Fig 3: ",
    ("bert", "fig5", "title"): "Xiong et al. Fig 5: ",
    ("theory", "title"): "Xiong et al. §3.3 (no figure of the paper): ",
    ("figures", "liu_fig1", "title"): "Liu et al. Fig 1: ",
    ("figures", "liu_fig9", "title"): "Liu et al. Fig 9: ",
    ("figures", "liu_warmup", "title"): "Liu et al. §5.3 (no figure of the paper): ",
    ("admin", "output_change", "title"): "Liu et al. Fig 2: ",
    ("admin", "update_norms", "fig3", "title"): "Liu et al. Fig 3 (our reading): ",
    ("admin", "gradients", "title"): "Liu et al. Fig 5: ",
    ("admin", "layer_dependency", "fig7", "title"): "Liu et al. Fig 7: ",
    ("admin", "layer_dependency", "fig8", "title"): "Liu et al. Fig 8: ",
    ("admin", "lr_grid", "title"): "Liu et al. Fig 10 (demo): ",
    ("admin", "update_norms", "fig11", "title"): "Liu et al. Fig 11 (our reading): ",
}


def config(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def lookup(cfg, keys):
    for key in keys:
        cfg = cfg[key]
    return cfg


@pytest.mark.parametrize("name", CONFIGS)
def test_every_title_names_the_papers_figure_as_the_paper_numbers_it(name):
    cfg = config(name)
    for keys, prefix in PAPER_FIGURES.items():
        if keys == ("admin", "lr_grid", "title") and name == "config.yaml":
            prefix = "Liu et al. Fig 10: "  # the paper's own grid
        assert lookup(cfg, keys).startswith(prefix), (name, keys)


def test_only_the_demo_carries_the_scale_mark():
    assert "DEMO SCALE" in config("demo.yaml")["scale_note"]
    assert "scale_note" not in config("config.yaml")


@pytest.fixture(scope="module", params=CONFIGS)
def dry_run(request, tmp_path_factory):
    """Each figure command of runs' legends (Xiong's figures, Liu's Figs 1 and 9, Fig 5) and each
    training command, as the workflow resolves a config: {tool: [argv]}, {run: argv}."""
    workdir = workflow_copy(tmp_path_factory.mktemp("labels"))
    cfg = config(request.param)
    targets = [f"results/figures/{fig}.pdf" for fig in cfg["figures"]] + ["results/figures/fig5.pdf"]
    out = snakemake(workdir, *targets, "-n", "-p", "--cores", "1", "--configfile", f"config/{request.param}").stdout
    commands = [shlex.split(line) for line in re.findall(r"^Shell command: (?:exec )?(lnrepro .*)$", out, re.M)]
    figures = [argv for argv in commands if argv[1] in ("figure", "figure5")]
    trained = {argv[argv.index("--out") + 1].split("/")[-1]: argv for argv in commands
               if argv[1] in ("train", "pretrain")}
    return request.param, figures, trained


def flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def warmup_text(warmup):
    return f"warm-up {warmup}" if warmup > 1 else "no warm-up"


@pytest.mark.medium
def test_every_legend_label_states_the_lr_and_warmup_its_run_trains(dry_run):
    name, figures, trained = dry_run
    assert len(figures) == len(config(name)["figures"]) + 1
    for argv in figures:
        spec = json.loads(flag(argv, "--spec"))
        label_of = figure.run_label if argv[1] == "figure" else figure5.run_label
        for run, settings in spec["run_settings"].items():
            label, command = label_of(settings), trained[run]
            assert f"lr {lr_text(float(flag(command, '--lr')))}," in label, (name, run, label)
            assert re.search(rf"\b{warmup_text(int(flag(command, '--warmup') or 0))}\b", label), (name, run, label)


def trained_depth_in(panel_title):
    """The depth a panel's title says its runs train: 'N layers', or '(demo: N)' where a demo's differs."""
    found = re.search(r"\(demo: (\d+)\)", panel_title) or re.match(r"(\d+) layers", panel_title)
    return int(found.group(1)) if found else None


def test_every_panel_that_names_a_depth_draws_runs_of_that_depth(dry_run):
    """Liu et al. Figs 1 and 9 and §5.3: '18 layers' over runs that train 18+18 layers."""
    name, figures, _ = dry_run
    depths = []
    for argv in figures:
        spec = json.loads(flag(argv, "--spec"))
        for panel in spec.get("panels", []):  # Fig 5's spec has none
            depth = trained_depth_in(panel["title"])
            for run in panel["runs"] if depth else ():
                settings = spec["run_settings"][run]
                assert (settings["enc_layers"], settings["dec_layers"]) == (depth, depth), (name, panel["title"], run)
                depths.append(depth)
    # Fig 1's two panels and Fig 9's three, of three runs each, and §5.3's panel (demo: 3 runs, its 16k
    # warm-up only; the paper's config 5, with 16k, 24k and 32k): the test saw them
    assert len(depths) == 15 + {"demo.yaml": 3, "config.yaml": 5}[name]


def test_the_scale_mark_reaches_every_demo_figure_command_only(dry_run):
    name, figures, _ = dry_run
    prefix = config("demo.yaml")["scale_note"]
    marks = {flag(argv, "--scale-note") for argv in figures}
    assert {m.split(": ")[0] for m in marks} == {prefix} if name == "demo.yaml" else marks == {None}


# ---- each demo figure's scale note against what its runs train (issue 44) --------------------------
@pytest.fixture(scope="module")
def demo_notes(tmp_path_factory):
    """{figure pdf: (its --scale-note, the runs its spec names, its argv)} of every demo figure command
    and {run: its training argv}, from one dry run of the whole demo."""
    workdir = workflow_copy(tmp_path_factory.mktemp("notes"))
    out = snakemake(workdir, "-n", "-p", "--forceall", "--cores", "1").stdout
    commands = [shlex.split(line.split(" > ")[0]) for line in
                re.findall(r"^Shell command: (?:exec )?(lnrepro .*)$", out, re.M)]
    trained = {argv[argv.index("--out") + 1].split("/")[-1]: argv for argv in commands
               if argv[1] in ("train", "pretrain")}

    def names(node):
        if isinstance(node, dict):
            return {n for k, v in node.items() for n in ({k} & set(trained)) | names(v)}
        if isinstance(node, list):
            return {n for v in node for n in names(v)}
        return {node} & set(trained) if isinstance(node, str) else set()
    notes = {flag(argv, "--pdf"): (flag(argv, "--scale-note"), names(json.loads(flag(argv, "--spec") or "{}")), argv)
             for argv in commands if "--scale-note" in argv}
    return notes, trained


def span_holds(text, unit, value):
    """'8-20 epochs' or '8 epochs' in the note holds value."""
    low, _, high = re.search(rf"(\d+(?:-\d+)?) {unit}", text).group(1).partition("-")
    return int(low) <= value <= int(high or low)


@pytest.mark.medium
def test_each_demo_figures_scale_note_is_true_for_the_runs_it_draws(demo_notes):
    """One note on all 15 figures said "lrs x2, warm-ups in epochs", false for Fig 3, the theory checks,
    Fig 5 and every Liu figure. Each note now states its runs' depth, width, length, and the lr factor
    and warm-up of runs named for the papers' values, as their training commands get them."""
    notes, trained = demo_notes
    assert len(notes) == 16
    probed = config("demo.yaml")["gradient_probe"]["run"]  # Fig 3's spec names no run: it probes this one
    for pdf, (note, runs, argv) in notes.items():
        assert note.startswith(config("demo.yaml")["scale_note"] + ": "), pdf
        runs = runs | ({probed} if pdf.endswith("/fig3.pdf") else set())
        if "--d-model" in argv:  # models probed at initialization: their width; no training, no lr
            assert "models at initialization" in note and f"d={flag(argv, '--d-model')}" in note, (pdf, note)
        if not runs:
            assert "lr" not in note, (pdf, note)
            continue
        for run in runs:
            command = trained[run]
            lr, warmup = float(flag(command, "--lr")), int(flag(command, "--warmup") or 0)
            assert f"d={flag(command, '--d-model')}" in note, (pdf, run, note)
            if command[1] == "train":
                enc, dec = int(flag(command, "--enc-layers")), int(flag(command, "--dec-layers"))
                pairs = [(int(e), int(d)) for e, d in re.findall(r"(\d+)\+(\d+)", note.split("; models at")[0])]
                assert pairs[0] <= (enc, dec) <= pairs[-1] or (enc, dec) in pairs, (pdf, run, note)
                assert span_holds(note, "epochs", int(flag(command, "--epochs"))), (pdf, run, note)
            named_lr = re.search(r"_(\d+(?:\.\d+)?e-\d+)(?=_|$)", run)
            factor = re.search(r"lrs x([\d.]+) of the run names'", note)
            if named_lr and factor:
                assert lr / float(named_lr.group(1)) == pytest.approx(float(factor.group(1))), (pdf, run, note)
            else:
                assert f"lr {lr_text(lr)}" in note or f"/ {lr_text(lr)}" in note, (pdf, run, note)
            if named_warmup := re.search(r"_warm(\d+)(?=_|$)", run):
                mapped = re.search(rf"\b{named_warmup.group(1)} -> (\d+(?: / \d+)*)", note)
                assert str(warmup) in mapped.group(1).split(" / ") or int(named_warmup.group(1)) == warmup, (pdf, run, note)
    assert "lrs x" not in " ".join(note for pdf, (note, _, _) in notes.items() if "/liu_" in pdf or "fig5" in pdf)


def test_a_demo_run_named_for_the_papers_values_is_labelled_with_its_own():
    settings = {"enc_norm": "post", "dec_norm": "post", "optimizer": "adam", "lr": 1.0e-3, "warmup": 290}
    assert figure.run_label(settings) == "Post-LN, Adam, lr 1e-3, warm-up 290"  # adam_5e-4_warm4000 in the demo
    assert "lr 1.4e-3" in figure.run_label({**settings, "lr": 1.4e-3})  # '{:.0e}' wrote it as 1e-3
    assert "lr 1.5e-3" in figure.run_label({**settings, "lr": 1.5e-3})  # and this one as 2e-3
    assert [lr_text(lr) for lr in (1.25e-3, 7e-4, 0.1)] == ["1.25e-3", "7e-4", "1e-1"]


def test_a_description_leads_the_label_but_never_hides_what_was_trained():
    label = figure.run_label({"description": "baseline", "lr": 5e-4, "warmup": 4000})
    assert label.startswith("baseline: ") and "lr 5e-4, warm-up 4000" in label
    assert figure5.run_label({"description": "BERT", "norm": "pre", "lr": 3e-4, "warmup": 0}) == "BERT: Pre-LN, lr 3e-4, no warm-up"


def test_a_setting_a_run_leaves_out_is_labelled_with_the_trainers_default():
    """Not 'lr 0, no warm-up' (as before): the run trained with TrainConfig's / PretrainConfig's values."""
    assert figure.run_label({}) == "Post-LN, Adam, lr 5e-4, warm-up 4000"
    assert figure5.run_label({}) == "Post-LN, lr 5e-4, warm-up 4000"
