"""Your own corpus (docs/own_corpus.md): config/own_corpus.example.yaml, as shipped, on tiny
text files at the paths it names: prepare the data, train its run for its 1 epoch, score BLEU.
Then what an edit of its decoding reruns (docs/dag.md, "Working with the DAG"). About 30 s on 2 cores."""
import math
import random
import re

import pandas as pd
import pytest
import yaml

from lnrepro.core import data

from workflow_helpers import ROOT, snakemake, workflow_copy

EXAMPLE = "config/own_corpus.example.yaml"
NOUNS = [("Haus", "house"), ("Hund", "dog"), ("Baum", "tree"), ("Buch", "book"), ("Stadt", "city")]
ADJECTIVES = [("klein", "small"), ("groß", "big"), ("alt", "old"), ("neu", "new"), ("schön", "beautiful")]


def write_text(workdir, files):
    """Aligned German/English lines at the paths the example's `files` names."""
    rng = random.Random(1)
    for split, n in (("train", 200), ("test", 20)):
        pairs = [(f"Das {nd} ist {ad}.", f"The {ne} is {ae}.")
                 for (nd, ne), (ad, ae) in ((rng.choice(NOUNS), rng.choice(ADJECTIVES)) for _ in range(n))]
        for side, index in (("src", 0), ("tgt", 1)):
            path = workdir / files[split][side]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(p[index] + "\n" for p in pairs), encoding="utf-8")


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    workdir = workflow_copy(tmp_path_factory.mktemp("own"))
    cfg = yaml.safe_load((ROOT / EXAMPLE).read_text())
    write_text(workdir, cfg["corpora"]["mine"]["files"])
    merges = cfg["corpora"]["mine"]["bpe_merges"]
    terminals = [snakemake(workdir, target, "--configfile", EXAMPLE, "--cores", "2").stderr
                 for target in (f"results/data/mine/bpe{merges}/bin/dict.txt",  # docs/own_corpus.md's three commands
                                "results/train/mine_preln/metrics.csv", "results/eval/mine_preln/bleu.csv")]
    (workdir / "train_terminal.txt").write_text(terminals[1])  # for test_the_terminal_...
    return workdir, cfg


def test_example_names_the_own_corpus_docs_corpus_run_and_target():
    cfg = yaml.safe_load((ROOT / EXAMPLE).read_text())
    assert cfg["corpora"]["mine"]["source"] == "local" and cfg["corpora"]["mine"]["bpe_merges"] == 100
    assert list(cfg["runs"]) == ["mine_preln"] and cfg["train_defaults"]["corpus"] == "mine"
    doc = (ROOT / "docs" / "own_corpus.md").read_text()
    for text in ("results/data/mine/bpe100/bin/dict.txt", "results/train/mine_preln/metrics.csv",
                 "results/eval/mine_preln/bleu.csv", EXAMPLE):
        assert text in doc


@pytest.mark.medium
def test_own_corpus_is_prepared_binarized_trained_and_scored(own):
    workdir, cfg = own
    binarized = workdir / "results/data/mine/bpe100/bin"
    sizes = {s: len(data.ParallelData.load(binarized / f"{s}.pt")) for s in ("train", "valid", "test")}
    # every valid_every-th of the 200 train pairs is validation data; all 20 test pairs are kept
    assert sizes == {"train": 180, "valid": 20, "test": 20}
    assert "house" in (binarized / "dict.txt").read_text(encoding="utf-8")
    metrics = pd.read_csv(workdir / "results/train/mine_preln/metrics.csv")
    assert list(metrics.epoch) == [1] and metrics.diverged.tolist() == [0]
    assert math.isfinite(metrics.train_loss[0]) and math.isfinite(metrics.valid_loss[0])
    assert 0 < metrics.valid_loss[0] < 20  # bits per token
    bleu = pd.read_csv(workdir / "results/eval/mine_preln/bleu.csv")
    assert list(bleu.epoch) == [1] and bleu.split[0] == "test" and bleu.sentences[0] == 20
    assert math.isfinite(bleu.bleu[0]) and 0 <= bleu.bleu[0] <= 100
    assert len((workdir / "results/eval/mine_preln/hyp_epoch1.txt").read_text().splitlines()) == 20


@pytest.mark.medium
def test_the_terminal_shows_the_trainings_progress_and_a_summary(own):
    """The training's log has every progress line; the terminal the last one (its epoch's end,
    at once; an update line waits LNREPRO_PROGRESS, 30 s) and the summary (test_progress.py)."""
    workdir, _ = own
    log = (workdir / "logs/train/mine_preln.log").read_text()
    assert re.search(r"^epoch 1/1 \| update (\d+)/\1 \| loss .* tok/s \| run eta 0s$", log, re.M), log
    terminal = (workdir / "train_terminal.txt").read_text()
    shown = re.findall(r"^\[train mine_preln\] (.*)$", terminal, re.M)
    assert len(shown) == 1 and shown[0] in log and re.match(r"epoch 1/1 done \| .* tok/s \| .* \| run eta 0s$", shown[0])
    summary = terminal[terminal.index("lnrepro: "):].splitlines()
    assert re.fullmatch(r"lnrepro: 1 job done in 0:00:\d\d", summary[0]), terminal[-2000:]
    assert summary[1].startswith("  logs:    logs/<step>/") and "next:" not in terminal  # no figure yet


@pytest.mark.medium
def test_nothing_to_do_then_a_decode_edit_plans_evaluation_not_training(own):
    workdir, cfg = own
    target = "results/eval/mine_preln/bleu.csv"
    nothing = snakemake(workdir, target, "--configfile", EXAMPLE, "-n")
    assert "Nothing to be done" in nothing.stdout and "lnrepro:" not in nothing.stdout + nothing.stderr
    cfg["corpora"]["mine"]["decode"]["beam"] = 2
    (workdir / "edited.yaml").write_text(yaml.safe_dump(cfg))
    dry = snakemake(workdir, target, "--configfile", "edited.yaml", "-n")
    out = dry.stdout
    assert "lnrepro:" not in out + dry.stderr  # a dry run has no summary
    assert "rule evaluate:" in out and "Params have changed since last execution" in out
    assert "checkpoint train:" not in out and "rule binarize" not in out  # train: a checkpoint rule; binarize or _separate
    # --summary marks the one output whose settings changed
    summary = snakemake(workdir, target, "--configfile", "edited.yaml", "--summary").stdout
    rows = {r.split("\t")[0]: r.split("\t") for r in summary.splitlines() if r.startswith("results/")}
    assert rows[target][4:6] == ["params changed", "update pending"]
    assert rows["results/train/mine_preln/metrics.csv"][4:6] == ["ok", "no update"]


@pytest.mark.medium
def test_missing_text_is_named_when_the_dag_is_planned(tmp_path, own):
    """Before any job: a note per missing file of `files`, naming its key; none once the files exist."""
    workflow_copy(tmp_path)
    proc = snakemake(tmp_path, "-n", "--configfile", EXAMPLE)  # the plan itself still stands
    for split, side in (("train", "src"), ("train", "tgt"), ("test", "src"), ("test", "tgt")):
        key = f"corpora.mine.files.{split}.{side}"
        assert re.search(rf"^lnrepro: note: config {re.escape(key)}: '\S+' does not exist; prepare_local", proc.stderr,
                         re.M), proc.stderr[-2000:]
    assert "lnrepro: note" not in snakemake(own[0], "-n", "--configfile", EXAMPLE).stderr


@pytest.mark.medium
def test_missing_books_are_named_when_the_paper_dag_is_planned(tmp_path):
    workflow_copy(tmp_path)
    stderr = snakemake(tmp_path, "-n", "results/figures/fig5.pdf", "--configfile", "config/config.yaml").stderr
    assert ("lnrepro: note: config bert_corpora.wiki_books.books_dir: 'resources/books' does not exist; "
            "prepare_books will stop there") in stderr
    # said once, not per job or per parse (beside it, once too, the downloads without a sha256)
    assert stderr.count("books_dir: 'resources/books' does not exist") == 1
    assert stderr.count("lnrepro: note:") == 2 and stderr.count("lnrepro: note: downloads without a sha256") == 1
