"""lnrepro plan: the parameter count against the real modules, checkpoint bytes against a real saved
checkpoint, the totals of a small config computed by hand, and results/plan.md planned for the
paper config; the time model (issue 44 item 9): decoding and probe jobs counted as the DAG has them,
each job's runtime by hand, and the runtime the DAG asks SLURM for."""
import csv
import json
import math
import re
import types

import pytest
import torch
import yaml

from lnrepro.analyses import plan
from lnrepro.core import checkpoint, loop
from lnrepro.core.bert import Bert, BertConfig
from lnrepro.core.model import ModelConfig, Transformer
from lnrepro.core.precision import Precision
from lnrepro.core.translation import TrainConfig
from test_pipeline import pipeline
from workflow_helpers import ROOT, snakemake, workflow_copy

DEMO = {"d_model": 64, "ffn_dim": 256, "heads": 4, "enc_layers": 6, "dec_layers": 6}  # config/demo.yaml's demo
VOCAB = 1400


def real_params(module):
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("norms,share,fn", [(("post", "post"), False, "layernorm"), (("pre", "pre"), False, "layernorm"),
                                            (("admin", "admin"), True, "layernorm"), (("fixup", "fixup"), False, "layernorm"),
                                            (("post", "pre"), True, "layernorm"), (("admin", "post"), False, "layernorm"),
                                            (("deepnorm", "deepnorm"), False, "layernorm"), (("sandwich", "sandwich"), True, "rmsnorm"),
                                            (("tfixup", "tfixup"), False, "layernorm"), (("resi_dual", "resi_dual"), False, "dyt"),
                                            (("tfixup", "sandwich"), False, "dyt"), (("pre", "resi_dual"), True, "rmsnorm")])
def test_parameter_count_is_the_models(norms, share, fn):
    settings = {**DEMO, "enc_norm": norms[0], "dec_norm": norms[1], "share_all_embeddings": share, "norm_fn": fn}
    model = Transformer(ModelConfig(vocab_size=VOCAB, **settings))
    assert plan.translation_params(settings, VOCAB) == real_params(model)


def test_parameter_count_with_a_dictionary_per_side_is_the_models():
    model = Transformer(ModelConfig(vocab_size=VOCAB, tgt_vocab_size=900, **DEMO))
    assert plan.translation_params(DEMO, VOCAB, 900) == real_params(model)
    with pytest.raises(ValueError, match="share_all_embeddings needs one joined dictionary"):
        ModelConfig(vocab_size=VOCAB, tgt_vocab_size=900, **{**DEMO, "share_all_embeddings": True})


def test_norm_sets_both_sides():
    pre = Transformer(ModelConfig(vocab_size=VOCAB, **DEMO, enc_norm="pre", dec_norm="pre"))
    assert plan.translation_params({**DEMO, "norm": "pre"}, VOCAB) == real_params(pre)


@pytest.mark.parametrize("norm,nsp", [("post", True), ("pre", False)])
def test_bert_parameter_count_is_the_models(norm, nsp):
    settings = {"d_model": 32, "ffn_dim": 64, "heads": 4, "layers": 2, "norm": norm, "nsp": nsp, "block_size": 40}
    model = Bert(BertConfig(vocab_size=VOCAB, d_model=32, ffn_dim=64, heads=4, layers=2, norm=norm, nsp=nsp,
                            max_positions=40))
    assert plan.bert_params(settings, VOCAB) == real_params(model)


@pytest.mark.parametrize("optimizer", ["adam", "radam", "sgd"])
def test_checkpoint_bytes_are_a_saved_checkpoints(tmp_path, optimizer):
    """save_round's real files after one update (Adam's moments exist only after a step), within 10%."""
    cfg = TrainConfig(optimizer=optimizer, optimizer_impl="fairseq")
    model = Transformer(ModelConfig(vocab_size=VOCAB, **DEMO))
    optimizer_ = loop.build_optimizer(cfg, model.parameters())
    src = torch.randint(4, VOCAB, (2, 5))
    model(src, src).sum().backward()
    optimizer_.step()
    ckpt = tmp_path / "run" / "checkpoints"
    ckpt.mkdir(parents=True)
    checkpoint.save_round(model, optimizer_, Precision(cfg, torch.device("cpu"), 1), cfg, [], 1, 1, ckpt, 1, {})
    epoch, last = plan.checkpoint_bytes(plan.translation_params(DEMO, VOCAB), optimizer)
    assert (ckpt / "epoch1.pt").stat().st_size == pytest.approx(epoch, rel=0.1)
    assert (ckpt / "last.pt").stat().st_size == pytest.approx(last, rel=0.1)


SMALL = {  # a fabricated config: every number below is computed by hand
    "corpora": {"c": {"source": "generated", "generator": {"n_train": 2300}, "valid_every": 23, "bpe_merges": 600}},
    "runs": {
        "a": {"corpus": "c", "d_model": 8, "ffn_dim": 16, "enc_layers": 1, "dec_layers": 1, "max_tokens": 1000,
              "epochs": 2, "optimizer": "adam", "precision": "bf16"},
        "b": {"corpus": "c", "d_model": 8, "ffn_dim": 16, "enc_layers": 1, "dec_layers": 1, "max_tokens": 1000,
              "update_freq": 2, "epochs": 3, "optimizer": "sgd", "norm": "pre", "share_all_embeddings": True},
    },
    "groups": {"g1": ["a"], "g2": ["a", "b", "z"]},
    "bert": {"corpora": {"w": {"bpe_merges": 99}},
             "runs": {"z": {"corpus": "w", "d_model": 8, "ffn_dim": 16, "layers": 1, "block_size": 16, "nsp": False,
                            "max_tokens": 64, "short_block_size": 8, "short_fraction": 0.5, "short_max_tokens": 32,
                            "max_updates": 10, "valid_interval": 5, "gpus": 2, "optimizer": "adam"}}},
}


HOST = 1 / 13.61  # s: the measured bf16 pass of the 12-layer model (docs/gpu/2026-11-28_h200_gpu_check.csv); fp32 as bf16


def test_small_config_totals_by_hand(tmp_path):
    p = plan.plan(SMALL, peak_tflops=1.0, mfu=0.5, fp32_peak_tflops=0.25)
    runs = {r["run"]: r for r in p["runs"]}
    # corpus c: 2300 - 2300 // 23 = 2200 training pairs x 16 tokens = 35,200 tokens; vocab 600 + 400 = 1000
    # a: attention 4*8*8 + 4*8 = 288, FFN 2*8*16 + 16 + 8 = 280, LayerNorm 16; encoder layer 288 + 280 + 2*16 = 600,
    #    decoder layer 2*288 + 280 + 3*16 = 904, embeddings 2 x 1000 x 8 = 16,000: 17,504 parameters;
    #    ceil(35,200 / 1000) = 36 updates per epoch x 2 epochs = 72, 72,000 tokens
    assert runs["a"]["params"] == 17_504 and runs["a"]["updates"] == 72 and runs["a"]["tokens"] == 72_000
    assert runs["a"]["flops"] == 6 * 17_504 * 72_000 == 7_561_728_000
    # time: 2 layers are host-bound (2/12 of the measured pass; compute: 6 x 17,504 x 1000 / 0.5e12 = 0.2 ms):
    # 72 passes + the warm-up (2 x the first 72, under 300) + 2 minutes to start
    assert runs["a"]["gpu_hours"] == pytest.approx(((72 + 144) * 2 / 12 * HOST / 60 + 2) / 60)
    assert runs["a"]["checkpoint_bytes"] == 2 * 17_504 * 4 + 17_504 * 4 * 3 == 350_080  # 2 epochN.pt + last.pt (Adam)
    # b: Pre-LN adds 2 final LayerNorms (32), one shared embedding (8,000): 600 + 904 + 8000 + 32 = 9,536;
    #    2000 tokens per update: ceil(35,200 / 2000) = 18 x 3 epochs = 54 updates, 108,000 tokens; SGD: no moments
    assert runs["b"]["params"] == 9_536 and runs["b"]["updates"] == 54 and runs["b"]["tokens"] == 108_000
    assert runs["b"]["flops"] == 6 * 9_536 * 108_000 == 6_179_328_000
    assert runs["b"]["checkpoint_bytes"] == 3 * 9_536 * 4 + 9_536 * 4 == 152_576
    # fp32 (host-bound: bf16's rate); update_freq 2: 108 passes, warm-up 216
    assert runs["b"]["gpu_hours"] == pytest.approx(((108 + 216) * 2 / 12 * HOST / 60 + 2) / 60)
    # z (BERT): vocab 99 + 400 + <mask> = 500; layer 600, embeddings 500*8 + 16*8 + 2*8 + LayerNorm 16 = 4,160,
    #    LM head 8*8 + 8 + 16 + 500 = 588: 5,348; (0.5 x 32 + 0.5 x 64) x 2 GPUs = 96 tokens x 10 updates
    assert runs["z"]["params"] == 5_348 and runs["z"]["updates"] == 10 and runs["z"]["tokens"] == 960
    assert runs["z"]["checkpoint_bytes"] == 2 * 5_348 * 4 + 5_348 * 12 == 106_960
    # z: 1 layer, fp32, 2 GPUs held: 5 short passes and 5 long ones, warm-up 2 x 5 (the short phase's)
    assert runs["z"]["gpu_hours"] == pytest.approx(2 * ((10 + 10) * 1 / 12 * HOST / 60 + 2) / 60)
    total = p["total"]
    assert total["trainings"] == 3 and total["updates"] == 72 + 54 + 10
    assert total["flops"] == 7_561_728_000 + 6_179_328_000 + 6 * 5_348 * 960
    assert total["checkpoint_bytes"] == 350_080 + 152_576 + 106_960
    assert total["checkpoints"] == 3 + 4 + 3
    assert p["groups"]["g1"]["flops"] == 7_561_728_000 and p["groups"]["g2"] == total
    # data: 35,200 tokens x 2 sides x 4 B + 2200 x 2 offsets x 8 B + 2200 x 120 B x 4 text stages
    assert p["data_bytes"] == 281_600 + 35_200 + 1_056_000

    md, out_csv = tmp_path / "plan.md", tmp_path / "plan.csv"
    jobs_csv = tmp_path / "plan_jobs.csv"
    plan.run(type("Args", (), {"spec": json.dumps(SMALL), "peak_tflops": 1.0, "fp32_peak_tflops": 0.25, "mfu": 0.5,
                               "md": md, "csv": out_csv, "jobs_csv": jobs_csv}))
    text = md.read_text()
    assert "3 trainings" in text and "50% MFU" in text and "runs that dominate" in text
    assert out_csv.read_text().splitlines()[-1].startswith("total,total,3,")
    jobs = {r["job"]: r for r in csv.DictReader(open(jobs_csv))}
    minutes = (72 + 144) * 2 / 12 * HOST / 60 + 2
    assert jobs["a"]["rule"] == "train" and float(jobs["a"]["estimated_minutes"]) == round(minutes, 1)
    assert int(jobs["a"]["runtime_minutes"]) == 10  # 1.5 x 2.1 minutes: the floor of 10


def test_bert_fine_tuning_by_hand():
    """Each grid point and seed of each fine-tuned round trains afresh: 2 lrs x 1 seed x 2 rounds = 4 per
    batch x epochs point; RTE's 2,490 pairs in batches of 2 are 1,245 updates an epoch, padded to 8 tokens."""
    ft = {"batch": [2], "lr": [1e-5, 2e-5], "epochs": [1, 2], "seeds": 1, "max_len": 8}
    spec = {**SMALL, "bert": {**SMALL["bert"], "finetune": ft, "tasks": ["rte"], "finetune_rounds": {"z": 2}}}
    row = next(r for r in plan.plan(spec)["runs"] if r["run"] == "z fine-tuning")
    assert row["trainings"] == 4 * 2  # x the 2 epoch settings
    assert row["updates"] == 4 * (1 * 1_245 + 2 * 1_245) == 14_940
    assert row["tokens"] == 4 * (1 + 2) * 2_490 * 8 == 239_040
    assert row["flops"] == 6 * 5_348 * 239_040 and row["checkpoint_bytes"] == 0


def test_a_capped_config_plans_what_the_cap_trains():
    """training_cap as the trainers get it (max_rounds, max_round_updates; finetune_updates)."""
    ft = {"batch": [2], "lr": [1e-5, 2e-5], "epochs": [1, 2], "seeds": 1, "max_len": 8}
    spec = {**SMALL, "runs": {**SMALL["runs"], "a": {**SMALL["runs"]["a"], "max_rounds": 1, "max_round_updates": 5}},
            "bert": {**SMALL["bert"], "runs": {"z": {**SMALL["bert"]["runs"]["z"], "max_rounds": 1, "max_round_updates": 3}},
                     "finetune": ft, "tasks": ["rte"], "finetune_rounds": {"z": 1}, "finetune_updates": 2}}
    runs = {r["run"]: r for r in plan.plan(spec)["runs"]}
    assert runs["a"]["updates"] == 5 and runs["a"]["tokens"] == 5_000
    assert runs["a"]["checkpoint_bytes"] == 17_504 * 4 + 17_504 * 12  # epoch1.pt + last.pt
    assert runs["b"]["updates"] == 54  # uncapped
    assert runs["z"]["updates"] == 3 and runs["z"]["tokens"] == 3 * 96
    tuned = runs["z fine-tuning"]  # 2 lrs x 1 seed x 1 round x 2 epoch settings, 2 updates of 2 pairs x 8 tokens each
    assert tuned["trainings"] == 4 and tuned["updates"] == 4 * 2 and tuned["tokens"] == 4 * 2 * 2 * 8


def test_a_built_dictionary_sets_the_vocabulary(tmp_path):
    """Once the data is built, its dict.txt (+ the 4 special symbols) replaces the estimate."""
    (tmp_path / "dict.txt").write_text("".join(f"tok{i} {100 - i}\n" for i in range(96)))
    p = plan.plan({**SMALL, "dicts": {"c": str(tmp_path / "dict.txt")}})
    assert p["vocab"]["c"][0] == 100
    assert {r["run"]: r["params"] for r in p["runs"]}["a"] == 17_504 - 2 * (1000 - 100) * 8


@pytest.mark.medium
def test_paper_config_plans_results_plan_md(tmp_path):
    """A dry run plans results/plan.md for config/config.yaml: one job, the plan rule only."""
    wf = workflow_copy(tmp_path)
    out = snakemake(wf, "-n", "results/plan.md", "--configfile", "config/config.yaml")
    text = out.stdout + out.stderr
    assert "rule plan:" in text or "localrule plan:" in text
    assert "checkpoint train" not in text  # train: a checkpoint rule


# ---- time: decoding, probes and each job's runtime (issue 44 item 9) ---------------------------------
@pytest.fixture(scope="module")
def paper():
    return pipeline("config")


def paper_spec(p, monkeypatch):
    """The plan rule's spec of a Pipeline, as JSON (not written to a file however long)."""
    import lnrepro.pipeline.plan as pipeline_plan
    monkeypatch.setattr(pipeline_plan, "spec_argument", lambda value: json.dumps(value, sort_keys=True))
    return json.loads(p.plan.plan_spec(None))


def test_a_paper_training_job_by_hand(paper):
    """adam_5e-4_warm4000 (IWSLT14, 6+6, d 512, fp32): ceil(160,239 x 28 / 4,096) = 1,096 updates an epoch x 30;
    host-bound at the measured pass (compute: 6 x 42.2M x 4,096 / (67 x 0.3 TFLOP/s) = 52 ms < 73 ms)."""
    job = paper.plan.planned_job("train", types.SimpleNamespace(run="adam_5e-4_warm4000"))
    assert (job["updates"], job["bound"], job["pass_s"]) == (32_880, "host", pytest.approx(HOST))
    minutes = (32_880 + 300) * HOST / 60 + 2  # + the warm-up's 300 passes, + 2 minutes to start
    assert job["minutes"] == pytest.approx(minutes) and job["runtime"] == math.ceil(1.5 * minutes) == 64
    # Liu's 18+18 WMT run: fp16, update_freq 4 (32,768 / 8,192): 4 passes an update at 3 x the measured fp16 pass
    liu = paper.plan.planned_job("train", types.SimpleNamespace(run="liu_wmt_post_18L"))
    assert liu["updates"] == 100 * math.ceil(4_500_000 * 32 / 32_768) == 439_500
    assert liu["minutes"] == pytest.approx((4 * 439_500 + 300) * 36 / 12 / 12.921 / 60 + 2)  # 113 h
    assert liu["runtime"] == 2880  # 1.5 x 6,806 minutes, capped by config.yaml's resources.max_runtime


def test_the_dag_asks_slurm_for_the_planned_runtime_an_explicit_one_wins(paper):
    """resources.smk's runtime: the planned one x attempt, at most max_runtime; the config's own wins."""
    adam, liu = (types.SimpleNamespace(run=r) for r in ("adam_5e-4_warm4000", "liu_wmt_post_18L"))
    runtime = paper.plan.runtime("train", "train")
    assert (runtime(adam, 1), runtime(adam, 2), runtime(liu, 1), runtime(liu, 2)) == (64, 128, 2880, 2880)
    decoded = paper.plan.runtime("evaluate", "evaluate")(adam, 1)
    assert decoded == paper.plan.planned_job("evaluate", adam)["runtime"] == 24
    explicit = pipeline("config", lambda c: c["resources"]["train"].update(runtime=100))
    assert (explicit.plan.runtime("train", "train")(adam, 1), explicit.plan.runtime("train", "train")(adam, 2)) == (100, 200)
    assert explicit.plan.runtime("evaluate", "evaluate")(adam, 1) == 24  # evaluate's still planned
    uncapped = pipeline("config", lambda c: c["resources"].pop("max_runtime"))
    assert uncapped.plan.runtime("train", "train")(liu, 1) == math.ceil(1.5 * ((4 * 439_500 + 300) * 3 / 12.921 / 60 + 2))


def test_a_decode_job_by_hand_grows_with_the_sentences_and_the_beam(paper):
    """Per-epoch decoding of a 30-epoch IWSLT run: 6,750 test sentences of 28 tokens at the measured 512.7
    sentences/s (17-token sentences, beam 5, 12 layers, d 512) + 5 s to load each checkpoint; averaged
    decoding: 10 checkpoints loaded, one decoded."""
    s, corpus = paper.plan.plan_run("adam_5e-4_warm4000"), paper.runs.corpus_cfg("iwslt14")
    th = plan.Throughput()
    one = 6_750 / 512.7 * 28 / 17
    job = plan.decode_job("r", s, corpus, {"beam": 5, "split": "test"}, 0, th)
    assert (job["checkpoints"], job["sentences"]) == (30, 30 * 6_750)
    assert job["minutes"] == pytest.approx(30 * (one + 5) / 60 + 2) and job["runtime"] == 24
    averaged = plan.decode_job("r", s, corpus, {"beam": 5, "split": "test"}, 10, th)
    assert averaged["minutes"] == pytest.approx((one + 10 * 5) / 60 + 2)
    more = plan.decode_job("r", s, {**corpus, "expected_counts": {"test": 13_500}}, {"beam": 5}, 0, th)
    wider = plan.decode_job("r", s, corpus, {"beam": 10}, 0, th)
    for bigger in (more, wider):  # twice the sentences or twice the beam: twice the decoding
        assert bigger["minutes"] == pytest.approx(30 * (2 * one + 5) / 60 + 2)
        assert bigger["gpu_hours"] > job["gpu_hours"]
    deep = plan.decode_job("r", {**s, "enc_layers": 18, "dec_layers": 18}, corpus, {"beam": 5}, 0, th)
    assert deep["decode_s"] == pytest.approx(3 * one)  # layers x d^2


def test_cpu_jobs_run_at_the_assumed_rate_per_thread():
    """A run on device cpu and the probes: 6 x parameters x tokens at plan.cpu_gflops_per_thread x threads."""
    assert plan.Throughput().train_pass(12, 1e6, 1000, "fp32", cpu_threads=2) == (6e9 / (30e9 * 2), "cpu")
    assert plan.Throughput({"cpu_gflops_per_thread": 15}).train_pass(12, 1e6, 1000, "fp32", 2)[0] == 6e9 / 30e9
    cpu_run = plan.train_job("r", {**SMALL["runs"]["a"], "device": "cpu"}, SMALL["corpora"]["c"], plan.Throughput(), 2)
    assert cpu_run["device"] == "cpu" and cpu_run["gpu_hours"] == 0  # no GPU warm-up on the CPU
    assert cpu_run["minutes"] == pytest.approx(72 * 6 * 17_504 * 1000 / 60e9 / 60 + 2)
    assert cpu_run["cpu_hours"] == pytest.approx(2 * cpu_run["minutes"] / 60)  # its 2 threads


def test_the_paper_plan_states_its_throughput_per_size_and_counts_probes(paper, monkeypatch):
    p = plan.plan(paper_spec(paper, monkeypatch))
    rows = {(r["kind"], r["layers"], r["d"], r["ffn"], r["tokens"], r["precision"]): r for r in plan.throughput_rows(p)}
    measured = rows[("translation", "6+6", 512, 1024, 4096, "fp16")]  # Liu's IWSLT recipe: the size measured
    assert measured["source"] == "measured H200 2026-11-28" and measured["pass_s"] == pytest.approx(1 / 12.921)
    assert measured["tokens_per_s"] == pytest.approx(4096 * 12.921) and measured["mfu"] < 0.02
    assert rows[("translation", "6+6", 512, 1024, 4096, "fp32")]["source"].startswith("our reading: bf16's rate")
    deep = rows[("translation", "18+18", 512, 2048, 8192, "fp16")]
    assert deep["source"].startswith("our reading: host-bound") and deep["pass_s"] == pytest.approx(3 / 12.921)
    bert = rows[("bert", "12", 768, 3072, 4096, "fp32")]  # BERT-base in fp32: compute-bound at 30% of 67 TFLOP/s
    assert bert["source"] == "our reading: compute-bound at 30% of 67 TFLOP/s" and bert["mfu"] == pytest.approx(0.3)
    text = plan.markdown(p)
    assert "## Throughput assumed per model size" in text and "| measured H200 2026-11-28 |" in text
    # the probes: Liu's Fig 2 at 3 norms x 6 depths x 10 seeds, each 4 forwards + 1 Adam update (+ Admin's profile)
    change = next(j for j in p["probes"] if j["rule"] == "output_change")
    assert (change["passes"], change["forwards"], change["device"], change["threads"]) == (180, 780, "cpu", 4)
    assert change["minutes"] == pytest.approx(change["flops"] / (30e9 * 4) / 60 + 2)
    assert sorted(j["rule"] for j in p["probes"]).count("probe_gradients") == 10  # post, pre x depths 6-14


def dry_run_jobs(text):
    """{(rule, wildcards)}: every job of a dry run's output, and its resources."""
    jobs = {}
    for block in re.split(r"\n(?=\[[^\]]*\]\n(?:local)?(?:rule|checkpoint) \w+:)", text):
        rule = re.search(r"^(?:local)?(?:rule|checkpoint) (\w+):", block, re.M)
        if rule:
            wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
            res = re.search(r"^\s+resources: (.*)$", block, re.M)
            jobs[(rule.group(1), wc.group(1) if wc else "")] = res.group(1) if res else ""
    return jobs


@pytest.mark.medium
def test_the_plan_counts_the_dags_decoding_and_probe_jobs(tmp_path):
    """The demo's DAG: its evaluate, evaluate_averaged and probe jobs are the plan's (results/plan_jobs.csv),
    and its trainings, the lab's sweeps (not in rule all: their own targets) among them."""
    wf = workflow_copy(tmp_path)
    lab = ["results/lab_claims.md", "results/figures/lab_phase.pdf", "results/figures/lab_fn_phase.pdf",
           "results/figures/lab_lr_thresholds.pdf", "results/figures/lab_lr_sensitivity.pdf"]
    dag = dry_run_jobs(snakemake(wf, "all", *lab, "-n", "--cores", "2").stdout)
    snakemake(wf, "results/plan.md", "--cores", "1")
    planned = list(csv.DictReader(open(wf / "results" / "plan_jobs.csv")))
    for rule in ("evaluate", "evaluate_averaged", "probe_gradients", "probe_after_warmup", "gradient_vanishing",
                 "output_change", "layer_dependency", "update_norms", "train", "pretrain", "finetune"):
        assert len([j for j in planned if j["rule"] == rule]) == len([j for j in dag if j[0] == rule]) > 0, rule
    decoded = {(r["rule"], r["job"]) for r in planned if r["rule"].startswith("evaluate")}
    in_dag = {(rule, re.sub(r"run=([^,]+)(?:, n=(\d+))?", lambda m: m[1] + (f" avg{m[2]}" if m[2] else ""), wc))
              for rule, wc in dag if rule.startswith("evaluate")}
    assert decoded == in_dag and len(decoded) == 20 + 24  # per-epoch BLEU of 20 runs (Fig 4 draws both WMT readings), 24 averaged
    # what each job asks SLURM for: the demo's resources set runtimes (train 60, evaluate 30), which win
    asked = {(r["rule"], r["job"]): r["asked_minutes"] for r in planned}
    dag_runtime = {(rule, wc.split("=")[1]): re.search(r"runtime=(\d+)", res).group(1)
                   for (rule, wc), res in dag.items() if rule == "train"}
    assert dag_runtime and all(asked[key] == minutes == "60" for key, minutes in dag_runtime.items())
    assert {asked[key] for key in asked if key[0] == "evaluate"} == {"30"}
    assert {asked[key] for key in asked if key[0] == "output_change"} == {""}  # the probe rules ask for none
    text = (wf / "results" / "plan.md").read_text()
    assert "## Decoding" in text and "## Probes (CPU)" in text and "decoding in 44 jobs" in text


@pytest.mark.medium
def test_the_planned_runtime_reaches_a_paper_dry_run(tmp_path):
    """config.yaml sets no train/evaluate runtime: the dry run's runtime= is the plan's (the formula above)."""
    wf = workflow_copy(tmp_path)
    out = snakemake(wf, "results/train/adam_5e-4_warm4000/metrics.csv", "results/train/liu_wmt_post_18L/metrics.csv",
                    "results/eval/adam_5e-4_warm4000/bleu.csv", "-n", "--configfile", "config/config.yaml").stdout
    jobs = dry_run_jobs(out)
    runtime = {key: re.search(r"runtime=(\d+)", res).group(1) for key, res in jobs.items() if "runtime=" in res}
    assert runtime[("train", "run=adam_5e-4_warm4000")] == "64"
    assert runtime[("train", "run=liu_wmt_post_18L")] == "2880"  # resources.max_runtime
    assert runtime[("evaluate", "run=adam_5e-4_warm4000")] == "24"
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert "runtime" not in cfg["resources"]["train"] and "runtime" not in cfg["resources"]["evaluate"]
