"""The paper configuration trained end to end, at the papers' model sizes, with its training capped.

config/config.yaml is taken as it is (models, runs, figures, admin, BERT, GLUE, probes, theory,
claims); the slow tests replace only what a test machine cannot have or afford:
  * downloads: the corpora's archives, the Wikipedia dump, the books folder and the GLUE files,
    by files in the real formats (tests/fabricate.py, tests/test_bert_data.py), pinned by sha256;
    BPE merges small enough for those tiny corpora;
  * hardware: `device: cpu`, one process (the BERT runs' 4 nodes x 8 GPUs), one thread per job,
    no GPU resources;
  * the amount of training, by the config's own `training_cap` (config/README.md): 2 epochs of 1
    update for every translation run (the step-decay runs train up to their decay epoch: 8 and
    6 epochs), 2 pre-training rounds of 3 updates (the 128 -> 512 switch at 90% falls in the
    second), 1 update per fine-tuning;
  * the sample counts of what trains nothing or measures an untrained model: fewer seeds,
    batches and depths for the theory, Fig 3's probes and Liu et al.'s Figs 2 and 5 (d = 512
    and 18 layers stay), and decoding to 20 tokens instead of max_len_b = 200.
Every model keeps the paper's size (IWSLT 6+6 d=512, WMT base up to 18+18, BERT-base). The
claims are checked on what this cap leaves, so their verdicts mean nothing here; the table must
hold every claim with one.

Two builds:
  * in CI, the covering build (covering_config): one run of every kind the config trains
    (COVERING_RUNS: 22 of its 91 runs, each with its paper settings), every figure, table and
    claim that reads only those, 1 x 2 of the 60-point x 6-seed fine-tuning grid, and the WMT
    corpus cut to 8 lines per training corpus. The tests check that it plans every rule the
    whole config plans and runs every flag and every choice (optimizer, schedule, norms, task,
    update_freq, shared embeddings, target language) that the whole config's jobs use.
    Measured on 2 CPU cores (2026-11-25): with 16 runs (no 18-layer run but Table 1's hybrid),
    10.5 minutes and ~1,060 job-seconds beside two other test runs (train 447, decode 154,
    Admin 144, fine-tune 133, probes 84, pre-train 80); with the three 18-layer runs of Fig 8
    added, 8.8 minutes and 858 job-seconds inside a CI run alone on the machine (train 334,
    Admin 179, decode 113, fine-tune 99, pre-train 61, probes 54).
  * with LNREPRO_PAPER_BUILD=1, all 91 runs and the whole grid, in stages after each of which
    retention has deleted the epoch checkpoints no step reads again and the test deletes those
    runs' last.pt (d = 512 checkpoints take ~130 MB, ~0.6 GB a run with last.pt). Measured per job on 2 shared CPU cores (2026-11-24, with max_len_b 200):
    a capped IWSLT run trains in ~32 s, WMT base in ~115 s (to decay epoch 6: ~300 s), 18+18 in
    ~350 s; a fine-tuning job runs 360 fine-tunings at ~1.9 s each (~670 s); ~15,000
    job-seconds in all, about two hours.
Both builds' stages also ask for their decoded runs' retained.json, so config.yaml's checkpoint
retention (`checkpoints: {keep: needed}`) prunes real d = 512 checkpoints. What it keeps stays to
the end of the module (the covering build: ~9.4 GB): later plans declare those checkpoints as their
readers' inputs (lnrepro.pipeline.checkpoint_reads), and one gone is a planning error.
"""
import copy
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from fabricate import fabricate_iwslt, pin_archives, pin_wmt_corpora
from lnrepro.analyses import probe_gradients as probe
from lnrepro.training import finetune
from lnrepro.core.bert import BertClassifier, load_bert
from lnrepro.training.pretrain import MaskedLMTask, PretrainConfig, pretrain
from lnrepro.pipeline.products import LAB_SOURCES
from lnrepro.core.translation import TrainConfig, train
from test_bert import TINY as BERT_TINY
from test_bert import bert_data  # noqa: F401 (a fixture)
from workflow_helpers import ROOT, snakemake, workflow_copy

CAP = {"epochs": 2, "epoch_updates": 1, "bert_rounds": 2, "bert_round_updates": 3, "finetune_updates": 1}
TINY = dict(enc_layers=2, dec_layers=2, d_model=32, ffn_dim=64, heads=4, dropout=0.1, max_tokens=200,
            device="cpu", threads=1, log_interval=0.5, schedule="linear", warmup=0, epochs=4)


# ---- the cap in the trainers (fast) -------------------------------------------------------------
def test_capped_translation_trains_the_first_updates_of_fewer_epochs_and_says_so(toy_data, tmp_path, capsys):
    train(TrainConfig(**TINY, max_rounds=2, max_round_updates=3), toy_data, tmp_path)
    m = pd.read_csv(tmp_path / "metrics.csv")
    assert list(m.epoch) == [1, 2] and list(m.updates) == [3, 6] and set(m.capped) == {1}
    assert m.lr.iloc[-1] == pytest.approx(5e-4 / 6)  # linear decay placed on the capped run's 6 updates
    assert "CAPPED (training_cap): 2 of 4 rounds, 3 of " in capsys.readouterr().err


def test_a_capped_checkpoint_is_never_resumed_by_a_real_run(toy_data, tmp_path, capsys):
    train(TrainConfig(**TINY, max_rounds=1, max_round_updates=2), toy_data, tmp_path)
    capsys.readouterr()
    train(TrainConfig(**{**TINY, "epochs": 1}), toy_data, tmp_path)
    assert "other settings (epochs, max_round_updates, max_rounds differ); starting afresh" in capsys.readouterr().err
    assert set(pd.read_csv(tmp_path / "metrics.csv").capped) == {0}


def test_an_uncapped_fingerprint_is_unchanged_by_the_cap_fields():
    assert not {"max_rounds", "max_round_updates"} & set(TrainConfig().settings())
    assert TrainConfig(max_rounds=3).settings()["max_rounds"] == 3


def test_capped_pretraining_switches_phase_at_the_same_fraction_of_its_own_updates(tmp_path):
    cfg = PretrainConfig(max_updates=1000, valid_interval=100, short_block_size=128, short_fraction=0.9,
                         max_rounds=2, max_round_updates=3)
    assert cfg.total_updates() == 6 and [start for start, *_ in cfg.phases()] == [0, 5]
    uncapped = PretrainConfig(max_updates=1000, valid_interval=100, short_block_size=128, short_fraction=0.9)
    assert [start for start, *_ in uncapped.phases()] == [0, 900]


def test_capped_pretraining_rounds_are_contiguous_in_the_batch_stream(tmp_path):
    task = MaskedLMTask.__new__(MaskedLMTask)  # round_batches reads cfg and phases only
    task.cfg = PretrainConfig(max_updates=1000, valid_interval=100, max_rounds=2, max_round_updates=3)
    task.phases = [type("P", (), {"start": 0, "batches": [[i] for i in range(50)]})()]
    positions = [pos for r in (1, 2) for pos, _, _ in task.round_batches(r, per_update=2)]
    assert positions == list(range(12))


def test_probe_after_warmup_takes_a_capped_runs_last_checkpoint(tmp_path, capsys):
    rows = [{"epoch": e, "updates": e, "diverged": 0, "capped": 1, "checkpoint": f"checkpoints/epoch{e}.pt"}
            for e in (1, 2)]
    write_rows(tmp_path / "metrics.csv", rows)
    assert probe.checkpoint_after(tmp_path / "metrics.csv", 4000) == (tmp_path / "checkpoints/epoch2.pt", 2)
    assert "a capped run (training_cap) ended before warm-up" in capsys.readouterr().err
    write_rows(tmp_path / "metrics.csv", [{**r, "capped": 0} for r in rows])
    with pytest.raises(SystemExit, match="before warm-up ended"):  # a real run still fails loudly
        probe.checkpoint_after(tmp_path / "metrics.csv", 4000)


def test_a_checkpoint_built_once_per_seed_fine_tunes_as_a_fresh_build(bert_data, tmp_path):
    pretrain(PretrainConfig(**{**BERT_TINY, "max_updates": 10}, norm="post", nsp=True), bert_data, tmp_path)
    checkpoint = tmp_path / "checkpoints/epoch1.pt"
    cached = finetune.Pretrained(checkpoint, torch.device("cpu"))
    for seed in (1, 2, 1, 2):
        torch.manual_seed(seed)
        fresh, fresh_next = BertClassifier(load_bert(checkpoint)).state_dict(), torch.rand(3)
        again, again_next = BertClassifier(cached.build(seed)).state_dict(), torch.rand(3)
        assert all(torch.equal(fresh[k], again[k]) for k in fresh) and torch.equal(fresh_next, again_next)


def write_rows(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def dry_run_commands(workdir, cfg, *targets):
    (workdir / "cfg.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return snakemake(workdir, "-n", "-p", "--forceall", *targets, "--configfile", "cfg.yaml").stdout


@pytest.mark.medium
def test_the_cap_reaches_every_trainer_as_flags_and_only_with_the_key(tmp_path):
    workdir = workflow_copy(tmp_path)
    paper = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    targets = ["results/train/preln_5e-4_nowarm/metrics.csv", "results/train/wmt_preln_7e-4_nowarm/metrics.csv",
               "results/train/adam_5e-4_warm4000/metrics.csv", "results/figures/fig5.pdf"]
    plain = dry_run_commands(workdir, paper, *targets)
    assert "--max-round" not in plain and "--max-updates 1 " not in plain
    out = dry_run_commands(workdir, {**paper, "training_cap": CAP}, *targets)
    commands = {run: next(line for line in out.splitlines() if f"--out results/train/{run} " in line)
                for run in ("preln_5e-4_nowarm", "wmt_preln_7e-4_nowarm", "adam_5e-4_warm4000")}
    # step-decay runs train up to their decay epoch (8, 6), the others the capped 2
    assert [re.search(r"--max-rounds (\d+)", c).group(1) for c in commands.values()] == ["8", "6", "2"]
    assert all("--max-round-updates 1" in c for c in commands.values())
    pretrain = next(line for line in out.splitlines() if "lnrepro pretrain" in line)
    assert "--max-rounds 2" in pretrain and "--max-round-updates 3" in pretrain and "--max-updates 1000000" in pretrain
    assert "--max-updates 1 " in next(line for line in out.splitlines() if "lnrepro finetune" in line)
    assert "round2.csv" in out and "round3.csv" not in out  # only the capped rounds are fine-tuned



@pytest.mark.medium
def test_paper_runs_train_with_the_papers_optimizers_and_the_demo_with_torchs(tmp_path):
    """train_defaults' optimizer_impl reaches every run (a schema default in a run would override it)."""
    workdir = workflow_copy(tmp_path)
    runs = ("adam_5e-4_warm4000", "radam_postln_5e-4", "liu_wmt_admin_6L")
    targets = [f"results/eval/{run}/bleu.csv" for run in runs]
    for name, impl in (("config.yaml", "--optimizer-impl fairseq"), ("demo.yaml", None)):
        out = dry_run_commands(workdir, yaml.safe_load((ROOT / "config" / name).read_text()), *targets)
        trains = [line for line in out.splitlines() if "lnrepro train " in line]
        assert len(trains) == len(runs)
        assert all((impl in c) if impl else ("--optimizer-impl" not in c) for c in trains), name
        assert out.count("lnrepro evaluate ") == len(runs) and out.count("--min-len 1 ") == len(runs)

# ---- the paper configuration, built (slow) -------------------------------------------------------
# sample counts of the measurements that train nothing; their sizes (d = 512, 18 layers) stay
MEASUREMENTS = {"theory": {"depths": [4, 8], "seeds": 2, "sequences": 4, "positions": 4},
                "gradient_probe": {"depths": [6, 8], "seeds": 2, "batches": 1}}
ADMIN_MEASUREMENTS = {"gradients": {"seeds": 1}, "output_change": {"depths": [6, 12], "seeds": 2}}
DECODE_MAX_LEN = 20


def pinned(path, **extra):
    return {"url": path.as_uri(), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), **extra}


def fabricate_bert_inputs(inputs):
    """Wikipedia dump, books, MRPC's Microsoft file and GLUE dev ids, RTE.zip (tests/test_bert_data.py's)."""
    from test_bert_data import MSR_TRAIN, RTE_DEV, RTE_TRAIN, fabricate_dump, write
    files = {"dump": fabricate_dump(write(inputs / "enwiki.xml.bz2", "")),
             "msr": write(inputs / "msr_paraphrase_train.txt", MSR_TRAIN),
             "ids": write(inputs / "ids.tsv", "2108705\t2108831\n"), "rte": inputs / "RTE.zip"}
    write(inputs / "books/one.txt", "A book begins.\n\nIt ends here.\n")
    write(inputs / "books/two.txt", "Another book. Short.\n")
    with zipfile.ZipFile(files["rte"], "w") as z:
        z.writestr("RTE/train.tsv", RTE_TRAIN)
        z.writestr("RTE/dev.tsv", RTE_DEV)
    return files


def on_test_machine(cfg):
    """CPU, one process per run and one thread per job; no GPU asked for. Liu's fp16 runs train in fp32:
    fp16 autocast on a CPU without fp16 matmul kernels is ~30x slower than fp32 at d=512 (measured:
    ~80 s vs 3 s for 480 tokens of the 6+6 base model); tests/test_precision.py trains fp16 at toy size."""
    cfg["train_defaults"]["device"] = "cpu"
    for settings in cfg["runs"].values():
        if settings.get("precision") == "fp16":
            settings["precision"] = "fp32"
    cfg["bert"]["pretrain_defaults"].update(device="cpu", nodes=1, gpus=1)
    cfg["theory"]["device"] = "cpu"
    cfg["threads"] = {"data": 1, "train": 1, "evaluate": 1}
    cfg["resources"] = {"gpu": "never"}


def paper_test_config(inputs, wmt_rows=None):
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    pin_archives(cfg["corpora"]["iwslt14"], [fabricate_iwslt(inputs)])
    pin_wmt_corpora(cfg["corpora"], inputs, wmt_rows)
    for corpus in cfg["corpora"]:
        cfg["corpora"][corpus]["bpe_merges"] = 100
        # an untrained model decodes every sentence to max_len_b: 20 tokens instead of 200
        cfg["corpora"][corpus]["decode"]["max_len_b"] = DECODE_MAX_LEN
    bert = fabricate_bert_inputs(inputs)
    cfg["bert_corpora"]["wiki_books"].update(wikipedia=pinned(bert["dump"], file="enwiki-latest-pages-articles.xml.bz2"),
                                             books_dir=str(inputs / "books"), bpe_merges=40)
    cfg["glue"]["mrpc"].update(msr_train=pinned(bert["msr"]), dev_ids=pinned(bert["ids"], file="mrpc_dev_ids.tsv"))
    cfg["glue"]["rte"]["archive"] = pinned(bert["rte"])
    on_test_machine(cfg)
    for section, sizes in MEASUREMENTS.items():
        cfg[section].update(sizes)
    for section, sizes in ADMIN_MEASUREMENTS.items():
        cfg["admin"][section].update(sizes)
    cfg["training_cap"] = CAP
    return cfg


# ---- one run of every kind: the build CI runs ----------------------------------------------------
# Each optimizer (Adam, SGD, RAdam), schedule (inverse_sqrt, step, step_inverse_sqrt, linear,
# constant), norm (Post, Pre, Admin, Table 1's Post/Pre hybrid), corpus and batch mapping
# (update_freq 16 and 4) the paper config trains, and every 18-layer run (Table 1, Fig 8); every
# other run differs from one of these only in lr, warm-up, beta2, seed or depth 12.
COVERING_RUNS = {"adam_5e-4_warm4000", "sgd_5e-3_nowarm", "preln_5e-4_nowarm", "radam_preln_5e-4", "postln_fixed_1e-4",
                 "wmt_preln_7e-4_nowarm", "wmt_preln_7e-4_nowarm_nodrop", "liu_wmt_post_6L", "liu_wmt_pre_6L", "liu_wmt_pre_6L_sgd", "liu_wmt_admin_6L",
                 "liu_wmt_post_18L", "liu_wmt_pre_18L", "liu_wmt_admin_18L", "liu_wmt_postenc_predec_18L",
                 "liu_wmt_fixup_18L", "liu_wmt_looklinear_18L",  # the norm fixup and init looklinear flags
                 "liu_iwslt_post_seed1", "liu_iwslt_pre_seed1", "liu_iwslt_admin_seed1",
                 "liu_grid_post_5e-4_b0.99", "liu_grid_pre_5e-4_b0.99", "liu_grid_admin_5e-4_b0.99"}
COVERING_FINETUNE = {"batch": [16], "lr": [1.0e-5], "epochs": [3], "seeds": 2}  # of the 60-point grid x 6 seeds
COVERING_WMT_ROWS = 8  # of each fabricated WMT training corpus: an 18+18 update then takes seconds, not minutes


def kept(runs):
    return [r for r in runs if r in COVERING_RUNS]


def covering_config(cfg):
    """The paper config with every list of runs (figure panels, Tables 1-2, Figs 7-8, Fig 10's grid)
    cut to COVERING_RUNS, what is left empty dropped (claims on dropped runs say NOT CONFIGURED), and the
    fine-tuning grid cut to 1 point x 2 seeds. Every run that stays keeps its paper settings."""
    for name, fig in list(cfg["figures"].items()):
        panels = [{**panel, "runs": kept(panel["runs"])} for panel in fig["panels"] if kept(panel["runs"])]
        cfg["figures"][name] = {**fig, "panels": panels}
    admin = cfg["admin"]
    for name, fig in list(admin["layer_dependency"].items()):
        if kept(fig["runs"]):
            fig["runs"] = kept(fig["runs"])
        else:
            del admin["layer_dependency"][name]
    admin["table1"]["rows"] = [row for row in admin["table1"]["rows"] if row["run"] in COVERING_RUNS]
    table2 = admin["table2"]
    depths = [d for d, run in zip(table2["depths"], table2["runs"]["post"]) if run in COVERING_RUNS]
    table2.update(depths=depths, runs={norm: kept(runs) for norm, runs in table2["runs"].items()},
                  seed_runs={norm: kept(runs) for norm, runs in table2["seed_runs"].items()},
                  init_runs={init: run for init, run in table2["init_runs"].items() if run in COVERING_RUNS})
    admin["lr_grid"]["cells"] = [cell for cell in admin["lr_grid"]["cells"] if cell["run"] in COVERING_RUNS]
    # Fig 2 at d=512 on 2 CPU cores: the paper's depths up to 36 per side (100 would be a 730M-parameter
    # model per seed and norm, Adam state included: minutes and ~15 GB; on a GPU, seconds)
    admin["output_change"]["depths"] = [n for n in admin["output_change"]["depths"] if n <= 36]
    cfg["bert"]["finetune"].update(COVERING_FINETUNE)
    # the runs it does not cover are left out of the config, so the claims on them say NOT CONFIGURED
    # instead of having them trained
    cfg["runs"] = {run: settings for run, settings in cfg["runs"].items() if run in COVERING_RUNS}
    cfg.pop("sweeps")  # the stability lab's grids: not in rule all (their own targets); the lab's claims say NOT CONFIGURED
    return cfg


def config_runs(cfg, *sections):
    """The translation runs a part of the config names: figures' BLEU panels (decoded per epoch), the
    Admin tables' cells, Figs 3/11's runs. Liu's perplexity figures draw Table 2's runs: "liu_wmt"."""
    admin = cfg["admin"]
    named = {
        "figures": [r for fig in cfg["figures"].values() for panel in fig["panels"] if panel["metric"] == "bleu"
                    for r in panel["runs"]],
        "liu_wmt": [r for rows in admin["table2"]["runs"].values() for r in rows] + [row["run"] for row in admin["table1"]["rows"]]
        + list(admin["table2"]["init_runs"].values()),
        "liu_seeds": [r for rows in admin["table2"]["seed_runs"].values() for r in rows],
        "liu_grid": [cell["run"] for cell in admin["lr_grid"]["cells"]],
        "liu_norms": [r for fig in admin["update_norms"].values() for r in fig["runs"]],
    }
    return sorted({r for s in sections for r in named[s]})


def eval_targets(cfg, runs):
    """What reads a run's epoch checkpoints: its BLEU table, per epoch for Xiong et al.'s figures,
    of the averaged last checkpoints for Liu et al.'s tables and grid."""
    average = cfg["admin"]["average_last"]
    if set(runs) <= set(config_runs(cfg, "figures")):
        return [f"results/eval/{run}/bleu.csv" for run in runs]
    corpus = {run: cfg["runs"][run].get("corpus", cfg["train_defaults"]["corpus"]) for run in runs}
    return [f"results/eval/{run}/bleu_avg{average.get(run, average[corpus[run]])}.csv" for run in runs]


def stages(cfg):
    """Target groups built one after another; after each, no later one reads its runs' checkpoints."""
    grid = config_runs(cfg, "liu_grid")
    return [eval_targets(cfg, config_runs(cfg, "figures")) + ["results/figures/fig3.pdf", "results/figures/fig5.pdf",
                                                               "results/figures/theory.pdf"],
            eval_targets(cfg, config_runs(cfg, "liu_wmt")) + [f"results/figures/liu_{fig}.pdf"
                                                               for section in ("layer_dependency", "update_norms")
                                                               for fig in cfg["admin"][section]],
            eval_targets(cfg, config_runs(cfg, "liu_seeds")),
            *(eval_targets(cfg, grid[i:i + 15]) for i in range(0, len(grid), 15)),
            ["all"]]


def stage_manifests(cfg, targets):
    """The retained.json of each run a stage decodes, and BERT's with Fig 5: their retain_checkpoints jobs
    (checkpoints: {keep: needed}) prune the stage's real d=512 checkpoints."""
    runs = sorted({Path(t).parts[2] for t in targets if t.startswith("results/eval/")})
    bert = sorted(cfg["bert"]["runs"]) if "results/figures/fig5.pdf" in targets else []
    return [f"results/train/{run}/retained.json" for run in runs] + [f"results/pretrain/{run}/retained.json" for run in bert]


def drop_resume_states(workdir):
    """last.pt of every run retention is done with (its retained.json written, which counts last.pt's
    bytes): no later step reads it, nor declares it, and it is ~3/4 of a d = 512 run's checkpoints."""
    for manifest in (workdir / "results").glob("*/*/retained.json"):
        (manifest.parent / "checkpoints" / "last.pt").unlink(missing_ok=True)


def drop_checkpoints(workdir):
    for ckpt in (workdir / "results").glob("*/*/checkpoints"):
        shutil.rmtree(ckpt)


def job_seconds(workdir):
    """{rule: summed seconds} from benchmarks/ (the rules that keep one)."""
    totals = {}
    for tsv in (workdir / "benchmarks").rglob("*.tsv"):
        kind = tsv.relative_to(workdir / "benchmarks").parts[0]
        totals[kind] = totals.get(kind, 0.0) + float(pd.read_csv(tsv, sep="\t").s.iloc[-1])
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def planned_rules(workdir, configfile):
    out = snakemake(workdir, "-n", "--quiet", "rules", "--configfile", configfile).stdout
    table = out.split("Job stats:")[1].split("total")[0]
    return {line.split()[0] for line in table.splitlines()[3:] if line.strip()}


@pytest.fixture(scope="module")
def paper_build(tmp_path_factory):
    """The covering build (COVERING_RUNS); with LNREPRO_PAPER_BUILD=1, every run of the config."""
    full = bool(os.environ.get("LNREPRO_PAPER_BUILD"))
    workdir = workflow_copy(tmp_path_factory.mktemp("paper"))
    inputs = tmp_path_factory.mktemp("inputs")
    whole = paper_test_config(inputs, wmt_rows=None if full else COVERING_WMT_ROWS)
    cfg = whole if full else covering_config(copy.deepcopy(whole))
    (workdir / "whole.yaml").write_text(yaml.safe_dump(whole, allow_unicode=True))
    (workdir / "paper.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True))
    planned = {config: planned_rules(workdir, config) for config in ("paper.yaml", "whole.yaml")}
    log = ""
    for targets in stages(cfg):
        targets = targets + stage_manifests(cfg, targets)
        proc = snakemake(workdir, "--cores", "2", *targets, "--configfile", "paper.yaml")
        log += proc.stdout + proc.stderr
        drop_resume_states(workdir)
    print("job-seconds per rule group:", job_seconds(workdir))
    yield workdir, cfg, planned, log
    drop_checkpoints(workdir)  # ~9.4 GB that pytest would keep with its last three runs


def ran_rules(log):
    return set(re.findall(r"^(?:local)?(?:rule|checkpoint) (\w+):", log, flags=re.M))


@pytest.mark.slow
def test_every_rule_of_the_paper_dag_ran(paper_build):
    workdir, cfg, planned, log = paper_build
    planned, whole = planned["paper.yaml"], planned["whole.yaml"]
    assert {"train", "evaluate", "evaluate_averaged", "admin_profile", "pretrain", "finetune", "probe_gradients",
            "probe_after_warmup", "check_theory", "plot_figure", "plot_fig5", "lr_grid", "admin_table1",
            "admin_table2", "layer_dependency", "gradient_vanishing", "output_change", "check_claims"} <= planned
    assert planned == whole  # the build plans every rule the whole config does
    assert planned - {"all"} <= ran_rules(log)
    assert "Nothing to be done" in snakemake(workdir, "-n", "--configfile", "paper.yaml").stdout


CHOICES = ("--optimizer", "--schedule", "--enc-norm", "--dec-norm", "--norm", "--task", "--update-freq",
           "--share-all-embeddings", "--target-lang")


def flags_used(workdir, configfile):
    """{(command, flag)} of every job the config plans, and {(command, flag, value)} of the CHOICES flags."""
    plan = snakemake(workdir, "-n", "-p", "--forceall", "all", "--configfile", configfile).stdout
    commands = [line.split("lnrepro ", 1)[1] for line in plan.splitlines() if "lnrepro " in line]
    flags, choices = set(), set()
    for command in commands:
        name, args = command.split(" ", 1)
        for flag, value in re.findall(r"(--[a-z0-9-]+)(?: ([^-\s]\S*))?", args):
            flags.add((name, flag))
            if flag in CHOICES:
                choices.add((name, flag, value))
    return flags, choices


@pytest.mark.slow
def test_every_flag_and_choice_of_the_paper_dag_ran(paper_build):
    workdir = paper_build[0]
    built, whole = flags_used(workdir, "paper.yaml"), flags_used(workdir, "whole.yaml")
    assert built[0] == whole[0] and built[1] == whole[1]


@pytest.mark.slow
def test_every_figure_and_table_is_written(paper_build):
    workdir = paper_build[0]
    figures = ["fig2", "fig3", "fig4", "figS1", "fig5", "theory", "liu_fig1", "liu_fig2", "liu_fig3", "liu_fig5",
               "liu_fig7", "liu_fig8", "liu_fig9", "liu_fig10", "liu_fig11", "liu_warmup"]
    files = [f"results/figures/{f}.{ext}" for f in figures for ext in ("pdf", "png", "csv")]  # the PNG: the report's
    files += [f"results/tables/admin_table{n}.{ext}" for n in (1, 2) for ext in ("md", "csv")]
    for name in files + ["results/figures/theory_checks.csv", "results/figures/fig3_summary.csv"]:
        assert (workdir / name).stat().st_size > 0, name
    table2 = (workdir / "results/tables/admin_table2.md").read_text()
    assert "| FixUp | liu_wmt_fixup_18L |" in table2 and "| LookLinear | liu_wmt_looklinear_18L |" in table2


def epoch_files(workdir, stage, run):
    metrics = pd.read_csv(workdir / "results" / stage / run / "metrics.csv")
    return list(metrics.checkpoint.dropna())


@pytest.mark.slow
def test_retention_prunes_the_paper_size_checkpoints_no_step_reads_again(paper_build):
    """config.yaml keeps what a step reads again: a run drawn per epoch only keeps last.pt; the probed
    run, capped before its warm-up ends, its last epoch (the probe's); Liu's 6-layer Pre-LN run, 2
    epochs capped, both (its last 10 average, Figs 3/11's pair 1-2); BERT, the fine-tuned rounds."""
    workdir, cfg = paper_build[:2]
    manifests = {p.parent.name: json.loads(p.read_text()) for p in (workdir / "results").glob("*/*/retained.json")}
    assert set(cfg["runs"]) | set(cfg["bert"]["runs"]) >= set(manifests) >= {"preln_5e-4_nowarm", "bert_preln"}
    drawn = manifests["preln_5e-4_nowarm"]
    assert [d["file"] for d in drawn["deleted"]] == epoch_files(workdir, "train", "preln_5e-4_nowarm")
    assert [k["file"] for k in drawn["kept"]] == ["checkpoints/last.pt"]
    assert all(d["bytes"] > 100e6 for d in drawn["deleted"])  # d=512, 6+6 layers: ~150 MB each
    assert drawn["bytes_freed"] == sum(d["bytes"] for d in drawn["deleted"])
    probed = manifests["adam_5e-4_warm4000"]
    assert [d["file"] for d in probed["deleted"]] == epoch_files(workdir, "train", "adam_5e-4_warm4000")[:-1]
    assert [k["file"] for k in probed["kept"]] == epoch_files(workdir, "train", "adam_5e-4_warm4000")[-1:] + ["checkpoints/last.pt"]
    for run, stage in (("liu_wmt_pre_6L", "train"), ("bert_preln", "pretrain")):
        assert manifests[run]["deleted"] == [], run
        assert [k["file"] for k in manifests[run]["kept"]] == epoch_files(workdir, stage, run) + ["checkpoints/last.pt"]


@pytest.mark.slow
def test_the_cost_plan_matches_the_capped_builds_real_sizes(paper_build):
    """results/plan.md of the capped build's own config against what it trained and wrote (issue 30
    item 4): each built run's updates exactly, its checkpoint bytes (every epoch kept, as the
    manifest's kept + deleted files) and after retention within 2%."""
    workdir = paper_build[0]
    snakemake(workdir, "results/plan.md", "--configfile", "paper.yaml", "--cores", "1")
    plan = pd.read_csv(workdir / "results" / "plan.csv")
    planned = plan[plan.scope == "run"].set_index("name")
    compared = 0
    for manifest_path in sorted((workdir / "results").glob("*/*/retained.json")):
        run, metrics = manifest_path.parent.name, pd.read_csv(manifest_path.parent / "metrics.csv")
        manifest, row = json.loads(manifest_path.read_text()), planned.loc[run]
        if metrics.get("diverged", pd.Series(dtype=float)).fillna(0).astype(bool).any() or manifest["absent"]:
            continue  # diverged: stopped before the plan's schedule ends; absent: this build's drop came first
        assert row.updates == metrics.updates.iloc[-1], run
        written = manifest["bytes_kept"] + manifest["bytes_freed"]
        assert row.checkpoint_bytes == pytest.approx(written, rel=0.02), run
        assert row.retained_bytes == pytest.approx(manifest["bytes_kept"], rel=0.02), run
        compared += 1
    assert compared >= 15  # the covering build's runs with a manifest (22 runs and 2 BERTs, bar the diverged)


@pytest.mark.slow
def test_the_claims_table_holds_every_claim_with_a_verdict(paper_build):
    """Every claim of config/claims.yaml, judged on the paper's range only (the paper config scales none);
    one whose runs the covering build dropped says so, and only those."""
    workdir, cfg = paper_build[:2]
    claims = pd.read_csv(workdir / "results/claims.csv", keep_default_na=False)
    paper_claims = {name: c for name, c in yaml.safe_load((ROOT / "config" / "claims.yaml").read_text())["claims"].items()
                    if c.get("source") not in LAB_SOURCES}  # the lab's: results/lab_claims.md
    assert sorted(claims.claim) == sorted(paper_claims)
    assert set(claims.paper_result) <= {"PASS", "FAIL", "NOT CONFIGURED", "NOT MEASURED"}
    assert (claims.scaled_result == claims.paper_result).all() and (claims.scaled == "").all()
    translation = set(yaml.safe_load((ROOT / "config/config.yaml").read_text())["runs"])
    dropped = {name for name, c in paper_claims.items() if {c.get(k) for k in "abcd"} & translation - COVERING_RUNS}
    assert len(dropped) >= 10  # 12 today
    assert set(claims.claim[claims.paper_result == "NOT CONFIGURED"]) == dropped
    md = (workdir / "results/claims.md").read_text()
    assert "CAPPED build (training_cap)" in md and "this config has no scaled verdicts" in md


def logged_parameters(log_file):
    """(parameters, vocabulary) from the trainer's first log line."""
    count, vocab = re.search(r"^([\d,]+) parameters, vocab (\d+)", log_file.read_text(), flags=re.M).groups()
    return int(count.replace(",", "")), int(vocab)


def transformer_parameters(model, vocab, layers=None, tgt_vocab=0):
    """A translation model of the config's size on this vocabulary (embeddings tied as configured; tgt_vocab:
    the target dictionary's where each side has its own)."""
    from lnrepro.core.model import ModelConfig, Transformer
    sizes = {**model, **({"enc_layers": layers, "dec_layers": layers} if layers else {})}
    return sum(p.numel() for p in Transformer(ModelConfig(vocab_size=vocab, tgt_vocab_size=tgt_vocab, **sizes)).parameters())


@pytest.mark.slow
def test_runs_train_the_papers_model_sizes(paper_build):
    workdir, cfg = paper_build[:2]
    logs = workdir / "logs"
    count, vocab = logged_parameters(logs / "train/adam_5e-4_warm4000.log")
    from lnrepro.core.data import vocab_sizes
    merges = cfg["corpora"]["iwslt14"]["bpe_merges"]  # the capped build's, not the paper's 10,000
    src, tgt = vocab_sizes(workdir / f"results/data/iwslt14/bpe{merges}/bin_separate")  # Xiong's IWSLT: one per side
    assert tgt and vocab == tgt  # one dictionary per side (tgt 0: joined); the log names the loss's, the target's
    # 6+6, d 512, FFN 1024: 31.6M besides the embeddings
    assert count == transformer_parameters(cfg["models"]["iwslt"], src, tgt_vocab=tgt)
    assert count - (src + tgt) * 512 > 31_000_000
    trained = {m.parent.name for m in (workdir / "results/train").glob("*/metrics.csv")}
    assert trained == set(config_runs(cfg, "figures", "liu_wmt", "liu_seeds", "liu_grid", "liu_norms"))
    deep = next(run for run in sorted(trained) if run.endswith("_18L"))
    count, vocab = logged_parameters(logs / f"train/{deep}.log")
    run = cfg["runs"][deep]  # its norms: a Pre-LN side adds a final LayerNorm
    norms = {side: run.get(side, run.get("norm", "post")) for side in ("enc_norm", "dec_norm")}
    assert count == transformer_parameters({**cfg["models"][run["model"]], **norms}, vocab, layers=18)
    assert count - vocab * 512 > 130_000_000
    count, vocab = logged_parameters(logs / "pretrain/bert_postln.log")
    assert count - vocab * 768 > 85_000_000  # BERT-base: 12 layers of d 768, FFN 3072, 512 positions
    for run in trained:
        metrics = pd.read_csv(workdir / f"results/train/{run}/metrics.csv")
        assert set(metrics.capped) == {1}, run
    assert len(pd.read_csv(workdir / "results/train/preln_5e-4_nowarm/metrics.csv")) == 8  # to its decay epoch


@pytest.mark.slow
def test_bert_pretrains_both_lengths_and_every_capped_round_is_fine_tuned(paper_build):
    workdir, cfg = paper_build[:2]
    for run in cfg["bert"]["runs"]:
        metrics = pd.read_csv(workdir / f"results/pretrain/{run}/metrics.csv")
        assert list(metrics.updates) == [3, 6] and set(metrics.capped) == {1}
    assert not (workdir / "results/finetune/bert_postln_3e-4").exists()  # pre-trained for its claim only
    for run in cfg["bert"]["fig5"]["runs"]:
        for task in cfg["bert"]["fig5"]["tasks"]:
            for r in (1, 2):
                summary = pd.read_csv(workdir / f"results/finetune/{run}/{task}/round{r}.summary.csv")
                assert summary.max_updates.tolist() == [CAP["finetune_updates"]]


@pytest.mark.slow
def test_every_admin_run_has_its_omegas(paper_build):
    workdir, cfg = paper_build[:2]
    runs = config_runs(cfg, "figures", "liu_wmt", "liu_seeds", "liu_grid", "liu_norms")
    admin_runs = [r for r in runs if "admin" in [cfg["runs"][r].get(k) for k in ("norm", "enc_norm", "dec_norm")]]
    full = bool(set(cfg["runs"]) - COVERING_RUNS)
    assert len(admin_runs) == (3 + 5 + 15 if full else 2 + 1 + 1)  # WMT, seeds, grid
    for run in admin_runs:
        assert (workdir / f"results/admin/{run}/omega.json").stat().st_size > 0, run
