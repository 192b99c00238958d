"""lnrepro plan: the parameter count against the real modules, checkpoint bytes against a real saved
checkpoint, the totals of a small config computed by hand, and results/plan.md planned for the
paper config."""
import json

import pytest
import torch

from lnrepro.analyses import plan
from lnrepro.core import loop
from lnrepro.core.bert import Bert, BertConfig
from lnrepro.core.model import ModelConfig, Transformer
from lnrepro.core.precision import Precision
from lnrepro.core.translation import TrainConfig
from workflow_helpers import snakemake, workflow_copy

DEMO = {"d_model": 64, "ffn_dim": 256, "heads": 4, "enc_layers": 6, "dec_layers": 6}  # config/demo.yaml's demo
VOCAB = 1400


def real_params(module):
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("norms,share", [(("post", "post"), False), (("pre", "pre"), False), (("admin", "admin"), True),
                                         (("fixup", "fixup"), False), (("post", "pre"), True), (("admin", "post"), False)])
def test_parameter_count_is_the_models(norms, share):
    settings = {**DEMO, "enc_norm": norms[0], "dec_norm": norms[1], "share_all_embeddings": share}
    model = Transformer(ModelConfig(vocab_size=VOCAB, **settings))
    assert plan.translation_params(settings, VOCAB) == real_params(model)


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
    loop.save_round(model, optimizer_, Precision(cfg, torch.device("cpu"), 1), cfg, [], 1, 1, ckpt, 1, {})
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


def test_small_config_totals_by_hand(tmp_path):
    p = plan.plan(SMALL, peak_tflops=1.0, mfu=0.5, fp32_peak_tflops=0.25)
    runs = {r["run"]: r for r in p["runs"]}
    # corpus c: 2300 - 2300 // 23 = 2200 training pairs x 16 tokens = 35,200 tokens; vocab 600 + 400 = 1000
    # a: attention 4*8*8 + 4*8 = 288, FFN 2*8*16 + 16 + 8 = 280, LayerNorm 16; encoder layer 288 + 280 + 2*16 = 600,
    #    decoder layer 2*288 + 280 + 3*16 = 904, embeddings 2 x 1000 x 8 = 16,000: 17,504 parameters;
    #    ceil(35,200 / 1000) = 36 updates per epoch x 2 epochs = 72, 72,000 tokens
    assert runs["a"]["params"] == 17_504 and runs["a"]["updates"] == 72 and runs["a"]["tokens"] == 72_000
    assert runs["a"]["flops"] == 6 * 17_504 * 72_000 == 7_561_728_000
    assert runs["a"]["gpu_hours"] == pytest.approx(7_561_728_000 / 0.5e12 / 3600)
    assert runs["a"]["checkpoint_bytes"] == 2 * 17_504 * 4 + 17_504 * 4 * 3 == 350_080  # 2 epochN.pt + last.pt (Adam)
    # b: Pre-LN adds 2 final LayerNorms (32), one shared embedding (8,000): 600 + 904 + 8000 + 32 = 9,536;
    #    2000 tokens per update: ceil(35,200 / 2000) = 18 x 3 epochs = 54 updates, 108,000 tokens; SGD: no moments
    assert runs["b"]["params"] == 9_536 and runs["b"]["updates"] == 54 and runs["b"]["tokens"] == 108_000
    assert runs["b"]["flops"] == 6 * 9_536 * 108_000 == 6_179_328_000
    assert runs["b"]["checkpoint_bytes"] == 3 * 9_536 * 4 + 9_536 * 4 == 152_576
    assert runs["b"]["gpu_hours"] == pytest.approx(6_179_328_000 / 0.125e12 / 3600)  # fp32: its own peak
    # z (BERT): vocab 99 + 400 + <mask> = 500; layer 600, embeddings 500*8 + 16*8 + 2*8 + LayerNorm 16 = 4,160,
    #    LM head 8*8 + 8 + 16 + 500 = 588: 5,348; (0.5 x 32 + 0.5 x 64) x 2 GPUs = 96 tokens x 10 updates
    assert runs["z"]["params"] == 5_348 and runs["z"]["updates"] == 10 and runs["z"]["tokens"] == 960
    assert runs["z"]["checkpoint_bytes"] == 2 * 5_348 * 4 + 5_348 * 12 == 106_960
    total = p["total"]
    assert total["trainings"] == 3 and total["updates"] == 72 + 54 + 10
    assert total["flops"] == 7_561_728_000 + 6_179_328_000 + 6 * 5_348 * 960
    assert total["checkpoint_bytes"] == 350_080 + 152_576 + 106_960
    assert total["checkpoints"] == 3 + 4 + 3
    assert p["groups"]["g1"]["flops"] == 7_561_728_000 and p["groups"]["g2"] == total
    # data: 35,200 tokens x 2 sides x 4 B + 2200 x 2 offsets x 8 B + 2200 x 120 B x 4 text stages
    assert p["data_bytes"] == 281_600 + 35_200 + 1_056_000

    md, out_csv = tmp_path / "plan.md", tmp_path / "plan.csv"
    plan.run(type("Args", (), {"spec": json.dumps(SMALL), "peak_tflops": 1.0, "fp32_peak_tflops": 0.25, "mfu": 0.5,
                               "md": md, "csv": out_csv}))
    text = md.read_text()
    assert "3 trainings" in text and "50% MFU" in text and "runs that dominate" in text
    assert out_csv.read_text().splitlines()[-1].startswith("total,total,3,")


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


def test_paper_config_plans_results_plan_md(tmp_path):
    """A dry run plans results/plan.md for config/config.yaml: one job, the plan rule only."""
    wf = workflow_copy(tmp_path)
    out = snakemake(wf, "-n", "results/plan.md", "--configfile", "config/config.yaml")
    text = out.stdout + out.stderr
    assert "rule plan:" in text or "localrule plan:" in text
    assert "checkpoint train" not in text  # train: a checkpoint rule
