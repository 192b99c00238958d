"""Bounded disk (issue 30 item 5): which epoch checkpoints a run keeps (needed_epochs), the prune step
on fabricated run folders, the one-line error when a later step needs a deleted checkpoint, the cost
plan's before/after and throughput keys, and the retain_checkpoints jobs through real Snakemake on a
tiny config."""
import csv
import json
import math
import re

import pytest
import yaml

from lnrepro.analyses import plan
from lnrepro.args import missing_input
from lnrepro import retention
from test_plan import SMALL
from test_resume import RUN, tiny_config
from workflow_helpers import snakemake, workflow_copy

TEN = [(e, 100 * e) for e in range(1, 11)]  # 10 epochs of 100 updates


# ---- needed_epochs ----------------------------------------------------------------------------
@pytest.mark.parametrize("needs,kept", [
    ({}, []),  # per-epoch decoding only: its BLEU is kept, no checkpoint
    ({"average_last": 3}, [8, 9, 10]),
    ({"average_last": 30}, list(range(1, 11))),  # fewer than N: every one, as evaluate averages them
    ({"last": True}, [10]),
    ({"after_updates": 250}, [3]),  # the first epoch with the warm-up done
    ({"after_updates": 300}, [3]),
    ({"after_updates": 5000}, [10]),  # ended before it (a capped run): its last, as the probe reads
    ({"update_pairs": [1, 5]}, [1, 2, 5, 6]),
    ({"update_pairs": [10]}, []),  # no epoch 11: no pair
    ({"update_pairs": "all"}, list(range(1, 11))),
    ({"rounds": [2, 4, 12]}, [2, 4]),
    ({"average_last": 2, "last": True, "after_updates": 150, "update_pairs": [1]}, [1, 2, 9, 10]),
])
def test_needed_epochs(needs, kept):
    assert retention.needed_epochs(needs, TEN) == kept


def test_needed_epochs_around_a_diverged_epoch():
    """Epoch 3 diverged (no checkpoint): no pair spans it, and the last N are the last N that exist."""
    have = [(1, 100), (2, 200), (4, 400), (5, 500)]
    assert retention.needed_epochs({"update_pairs": "all"}, have) == [1, 2, 4, 5]
    assert retention.needed_epochs({"update_pairs": [2, 3]}, have) == []
    assert retention.needed_epochs({"average_last": 3}, have) == [2, 4, 5]
    assert retention.needed_epochs({"last": True}, []) == []


# ---- the prune step on a fabricated run --------------------------------------------------------
def fabricate_run(run_dir, epochs):
    """metrics.csv naming epochN.pt of each epoch, the files (1000 + N bytes) and last.pt (5000)."""
    ckpt = run_dir / "checkpoints"
    ckpt.mkdir(parents=True)
    rows = [{"epoch": e, "updates": 100 * e, "checkpoint": f"checkpoints/epoch{e}.pt"} for e in epochs]
    for e in epochs:
        (ckpt / f"epoch{e}.pt").write_bytes(b"x" * (1000 + e))
    with open(run_dir / "metrics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["epoch", "updates", "checkpoint"])
        w.writeheader()
        w.writerows(rows)
    (ckpt / "last.pt").write_bytes(b"x" * 5000)
    return ckpt


def test_prune_deletes_only_what_no_step_needs_and_only_what_training_wrote(tmp_path):
    run_dir = tmp_path / "train" / "r"
    ckpt = fabricate_run(run_dir, [1, 2, 3, 4, 5])
    (ckpt / "epoch9.pt").write_bytes(b"mine")  # not in metrics.csv: not the training's
    (ckpt / "last.pt.corrupt-20261127").write_bytes(b"aside")
    (ckpt / "notes.txt").write_text("mine")
    manifest = retention.prune(run_dir / "metrics.csv", {"average_last": 2, "update_pairs": [1]})
    left = sorted(p.name for p in ckpt.iterdir())
    assert left == ["epoch1.pt", "epoch2.pt", "epoch4.pt", "epoch5.pt", "epoch9.pt", "last.pt",
                    "last.pt.corrupt-20261127", "notes.txt"]
    assert manifest["deleted"] == [{"file": "checkpoints/epoch3.pt", "bytes": 1003}]
    assert manifest["bytes_freed"] == 1003
    assert [k["file"] for k in manifest["kept"]] == [f"checkpoints/epoch{e}.pt" for e in (1, 2, 4, 5)] + ["checkpoints/last.pt"]
    assert manifest["bytes_kept"] == 1001 + 1002 + 1004 + 1005 + 5000


def test_a_metrics_row_naming_another_file_is_never_deleted(tmp_path):
    """Only checkpoints/epochN.pt of its own epoch N: a hand-edited row cannot delete other files."""
    run_dir = tmp_path / "r"
    fabricate_run(run_dir, [1, 2])
    (tmp_path / "precious.pt").write_bytes(b"keep me")
    text = (run_dir / "metrics.csv").read_text().replace("checkpoints/epoch1.pt", "../precious.pt")
    (run_dir / "metrics.csv").write_text(text)
    retention.prune(run_dir / "metrics.csv", {})
    assert (tmp_path / "precious.pt").exists() and not (run_dir / "checkpoints" / "epoch2.pt").exists()


def test_a_second_pass_lists_what_is_gone_as_absent(tmp_path):
    run_dir = tmp_path / "r"
    fabricate_run(run_dir, [1, 2, 3])
    retention.prune(run_dir / "metrics.csv", {"last": True})
    again = retention.prune(run_dir / "metrics.csv", {"last": True})
    assert again["deleted"] == [] and again["absent"] == ["checkpoints/epoch1.pt", "checkpoints/epoch2.pt"]
    (run_dir / retention.MANIFEST).write_text(json.dumps(again))
    assert retention.deleted_note(run_dir / "checkpoints" / "epoch1.pt")  # still named as retention's


# ---- a later step that needs a deleted checkpoint -----------------------------------------------
def test_a_deleted_checkpoint_is_one_line_naming_the_manifest_and_the_fix(tmp_path, capsys):
    run_dir = tmp_path / "train" / "r"
    fabricate_run(run_dir, [1, 2, 3])
    (run_dir / retention.MANIFEST).write_text(json.dumps(retention.prune(run_dir / "metrics.csv", {"last": True})))
    gone = run_dir / "checkpoints" / "epoch1.pt"
    with pytest.raises(SystemExit) as stop:
        missing_input("evaluate", FileNotFoundError(2, "No such file or directory", str(gone)))
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"lnrepro evaluate: error: {gone}: deleted by checkpoint retention")
    assert str(run_dir / retention.MANIFEST) in err and "keep: all" in err
    assert f"snakemake --force {run_dir / 'metrics.csv'}" in err
    assert retention.deleted_note(run_dir / "checkpoints" / "epoch3.pt") is None  # kept
    assert retention.deleted_note(tmp_path / "elsewhere" / "checkpoints" / "epoch1.pt") is None  # no manifest


def test_fine_tuning_a_deleted_round_says_so(tmp_path, capsys):
    """finetune reads a missing round as a divergence of the pre-training; a pruned one is named as such."""
    from lnrepro.cli import main

    run_dir = tmp_path / "pretrain" / "b"
    fabricate_run(run_dir, [1, 2])
    (run_dir / retention.MANIFEST).write_text(json.dumps(retention.prune(run_dir / "metrics.csv", {"rounds": [2]})))
    with pytest.raises(SystemExit):
        main(["finetune", "--checkpoint", str(run_dir / "checkpoints" / "epoch1.pt"), "--data", str(tmp_path),
              "--task", "rte", "--out", str(tmp_path / "out.csv")])
    assert "deleted by checkpoint retention" in capsys.readouterr().err


# ---- the cost plan ----------------------------------------------------------------------------
def test_plan_shows_checkpoints_before_and_after_retention():
    """SMALL's a (2 epochs + last.pt, Adam) keeps its last epoch; b (3 epochs, SGD) none; z (BERT, 2 rounds)
    round 2; a run the needs do not name (no target trains it) keeps every one."""
    spec = {**SMALL, "checkpoints": {"keep": "needed", "needs": {"a": {"last": True}, "b": {}, "z": {"rounds": [2]}}}}
    runs = {r["run"]: r for r in plan.plan(spec)["runs"]}
    assert runs["a"]["retained_bytes"] == 17_504 * 4 + 17_504 * 12 and runs["a"]["retained_checkpoints"] == 2
    assert runs["b"]["retained_bytes"] == 9_536 * 4 and runs["b"]["retained_checkpoints"] == 1
    assert runs["z"]["retained_bytes"] == 5_348 * 4 + 5_348 * 12
    total = plan.plan(spec)["total"]
    assert total["checkpoint_bytes"] == 350_080 + 152_576 + 106_960  # before: as without retention
    assert total["retained_bytes"] == 17_504 * 16 + 9_536 * 4 + 5_348 * 16
    assert plan.plan(spec)["groups"]["g1"]["retained_bytes"] == 17_504 * 16
    unnamed = {r["run"]: r for r in plan.plan({**spec, "checkpoints": {"needs": {}}})["runs"]}
    assert unnamed["a"]["retained_bytes"] == unnamed["a"]["checkpoint_bytes"]


def test_plan_resolves_the_probes_epoch_from_its_estimated_updates():
    """a: 36 updates per epoch, 2 epochs: warm-up 40 ends in epoch 2, 20 in epoch 1 (kept instead of 2)."""
    for warmup, kept in ((40, [2]), (20, [1])):
        spec = {**SMALL, "checkpoints": {"needs": {"a": {"after_updates": warmup}}}}
        assert retention.needed_epochs({"after_updates": warmup}, plan.round_updates(2, 72)) == kept
        assert {r["run"]: r for r in plan.plan(spec)["runs"]}["a"]["retained_checkpoints"] == 2


def test_plan_markdown_states_the_retention_and_throughput(tmp_path):
    spec = {**SMALL, "checkpoints": {"keep": "needed", "needs": {"a": {"last": True}, "b": {}}}}
    p = plan.plan(spec, peak_tflops=2.0, mfu=0.5, fp32_peak_tflops=0.5)
    text = plan.markdown(p, 2.0, 0.5, 0.5)
    assert "after retention GB" in text and "`checkpoints: {keep: needed}`, this config's" in text
    assert "50% MFU of 2 TFLOP/s for fp16/bf16, 0.5 for fp32" in text
    assert "`plan: {updates_per_s, decode_sentences_per_s, mfu, bf16_tflops, fp32_tflops, cpu_gflops_per_thread}`" in text
    kept_all = plan.markdown(plan.plan({**spec, "checkpoints": {**spec["checkpoints"], "keep": "all"}}), 989, 0.3)
    assert "This config keeps all" in kept_all


# ---- through Snakemake: the plan's throughput key, the retain jobs ------------------------------
def planned_jobs(workdir, cfg, name="plan.yaml"):
    """results/plan_jobs.csv and plan.md of `lnrepro plan` run by the workflow on cfg (one config file: its
    results are that file's, edited)."""
    (workdir / name).write_text(yaml.safe_dump(cfg))
    snakemake(workdir, "results/plan.md", "--cores", "1", "--configfile", name, "--forcerun", "plan")
    jobs = {(r["rule"], r["job"]): r for r in csv.DictReader(open(workdir / "results" / "plan_jobs.csv"))}
    return jobs, (workdir / "results" / "plan.md").read_text()


@pytest.mark.medium
def test_the_plan_key_sets_the_throughput(tmp_path):
    """The config's `plan:` reaches the plan: the measured pass by default, plan.updates_per_s in its place (the
    tiny run on a GPU: 1+1 layers, 6 updates an epoch x 2, 2/12 of a pass each, + the warm-up of 2 x 12 passes)."""
    workdir = workflow_copy(tmp_path)
    cfg = tiny_config()
    cfg["train_defaults"]["device"] = "cuda"  # planned, never run
    jobs, text = planned_jobs(workdir, cfg)
    assert "30% MFU" in text and "| measured H200 2026-11-28 |" not in text  # a 1+1 model: scaled, our reading
    assert float(jobs[("train", RUN)]["estimated_minutes"]) == round((12 + 24) * 2 / 12 / 13.61 / 60 + 2, 1)
    jobs, text = planned_jobs(workdir, {**cfg, "plan": {"updates_per_s": {"fp32": 0.005}, "mfu": 0.15}})
    assert "15% MFU" in text and "(config plan.updates_per_s)" in text
    assert float(jobs[("train", RUN)]["estimated_minutes"]) == round((12 + 24) * 2 / 12 / 0.005 / 60 + 2, 1)  # 22 min
    assert int(jobs[("train", RUN)]["runtime_minutes"]) == math.ceil(1.5 * ((12 + 24) * 2 / 12 / 0.005 / 60 + 2)) == 33


def retention_config(keep):
    """Two 3-epoch runs decoded per epoch (Fig 'f'), b's pair (1, 2) also read by Liu et al.'s Fig 3."""
    cfg = tiny_config()
    cfg["train_defaults"]["epochs"] = 3
    cfg["runs"] = {"a": {}, "b": {"norm": "pre"}}
    cfg["figures"] = {"f": {"title": "BLEU", "panels": [{"title": "p", "metric": "bleu", "runs": ["a", "b"]}]}}
    cfg["admin"] = {"update_norms": {"fig3": {"title": "norms", "runs": ["b"], "batches": 1, "epochs": [1]}}}
    cfg["checkpoints"] = {"keep": keep}
    cfg["corpora"]["deen"]["decode"] = {**cfg["corpora"]["deen"].get("decode", {}), "max_len_b": 10}
    return cfg


@pytest.mark.medium
def test_keep_all_plans_no_retain_job(tmp_path):
    workdir = workflow_copy(tmp_path)
    (workdir / "all.yaml").write_text(yaml.safe_dump(retention_config("all")))
    (workdir / "needed.yaml").write_text(yaml.safe_dump(retention_config("needed")))
    assert "retain_checkpoints" not in snakemake(workdir, "-n", "--configfile", "all.yaml").stdout
    planned = snakemake(workdir, "-n", "--configfile", "needed.yaml").stdout
    assert "results/train/a/retained.json" in planned and "results/train/b/retained.json" in planned


@pytest.mark.slow
def test_retain_jobs_keep_what_later_steps_read_and_a_new_beam_fails_in_one_line(tmp_path):
    workdir = workflow_copy(tmp_path)
    cfg = retention_config("needed")
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    # the readers first, so the checkpoints' sizes can be taken before the retain jobs delete any
    snakemake(workdir, "results/figures/f.pdf", "results/figures/liu_fig3.pdf", "--cores", "2", "--configfile", "tiny.yaml")
    sizes = {p.relative_to(workdir).as_posix(): p.stat().st_size for p in (workdir / "results/train").glob("*/checkpoints/*")}
    assert len(sizes) == 2 * 4
    out = snakemake(workdir, "--cores", "2", "--configfile", "tiny.yaml")
    assert "checkpoint train" not in out.stdout + out.stderr  # only the retain jobs were left
    left = sorted(p.relative_to(workdir).as_posix() for p in (workdir / "results/train").glob("*/checkpoints/*"))
    assert left == ["results/train/a/checkpoints/last.pt", "results/train/b/checkpoints/epoch1.pt",
                    "results/train/b/checkpoints/epoch2.pt", "results/train/b/checkpoints/last.pt"]
    for run, deleted in (("a", [1, 2, 3]), ("b", [3])):
        manifest = json.loads((workdir / f"results/train/{run}/retained.json").read_text())
        files = {f"checkpoints/epoch{e}.pt" for e in deleted}
        assert {d["file"] for d in manifest["deleted"]} == files
        assert manifest["bytes_freed"] == sum(sizes[f"results/train/{run}/{f}"] for f in files) > 0
        assert manifest["bytes_kept"] == sum(s for f, s in sizes.items() if f.startswith(f"results/train/{run}/")
                                             and f.split(f"{run}/")[1] not in files)
    assert "Nothing to be done" in snakemake(workdir, "-n", "--configfile", "tiny.yaml").stdout

    cfg["corpora"]["deen"]["decode"]["beam"] = 2  # an edit of the config: decoding reruns, it needs every epoch again
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    failed = snakemake(workdir, "results/eval/a/bleu.csv", "--cores", "1", "--configfile", "tiny.yaml", check=False)
    assert failed.returncode != 0
    log = (workdir / "logs" / "eval" / "a.log").read_text()
    assert "Traceback" not in log
    line = log.strip().splitlines()[-1]
    assert line.startswith("lnrepro evaluate: error: results/train/a/checkpoints/epoch1.pt: deleted by checkpoint retention")
    assert "results/train/a/retained.json" in line and "keep: all" in line


def planned_needs(workdir, configfile, runs):
    """{run: the needs JSON of its planned retain job} from a dry run of the runs' manifests."""
    targets = [f"results/{'pretrain' if run.startswith('bert') else 'train'}/{run}/retained.json" for run in runs]
    out = snakemake(workdir, *targets, "-n", "-p", "--configfile", configfile).stdout
    found = re.findall(r"lnrepro retain --metrics results/\w+/(\S+)/metrics.csv --needs '(.*?)' --manifest", out)
    return {run: json.loads(needs) for run, needs in found}


@pytest.mark.medium
def test_the_paper_configs_retain_jobs_keep_what_its_steps_read(tmp_path):
    """config/config.yaml: Fig 11's pairs, Figs 7's last and the tables' last 10 of the 6-layer Pre-LN run;
    the probe's warm-up run; BERT's 20 fine-tuned rounds; nothing of a run only drawn per epoch."""
    workdir = workflow_copy(tmp_path)
    needs = planned_needs(workdir, "config/config.yaml", ["liu_wmt_pre_6L", "adam_5e-4_warm4000", "bert_preln",
                                                         "adam_1e-3_nowarm"])
    assert needs == {"liu_wmt_pre_6L": {"average_last": 10, "last": True, "update_pairs": [1, 10, 20, 39]},
                     "adam_5e-4_warm4000": {"after_updates": 4000},
                     "bert_preln": {"rounds": list(range(1, 21))},
                     "adam_1e-3_nowarm": {}}
