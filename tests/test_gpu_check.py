"""`lnrepro gpu-check` at toy size on the CPU: every stage of the prepared GPU check runs, so it cannot rot
before a GPU is lent (its paper-size run on an H200: docs/speed.md)."""
import csv

import pytest

from lnrepro.cli import main

pytestmark = pytest.mark.slow  # ~1-2 minutes: a dozen processes, each importing torch


def test_the_gpu_check_runs_every_stage_at_toy_size_on_the_cpu(tmp_path):
    assert main(["gpu-check", "--size", "toy", "--device", "cpu", "--out", str(tmp_path)]) == 0
    rows = {r["item"]: r for r in csv.DictReader(open(tmp_path / "gpu_check.csv"))}
    assert rows["device"]["value"] == "cpu"
    tests = rows["pytest -m cuda: passed"]
    assert tests["unit"] == f"of {tests['value']}" and int(tests["value"]) >= 16  # every test of the marker passed
    for precision in ("fp16", "bf16"):
        assert float(rows[f"train {precision}: updates/s"]["value"]) > 0
        curve = [float(x) for x in rows[f"train {precision}: loss curve"]["value"].split()]
        assert len(curve) == 2 and curve[1] < curve[0]  # two rounds, the loss going down
        assert float(rows[f"beam 5 after train {precision}: sentences/s"]["value"]) > 0
        assert float(rows[f"train {precision}: updates/s planned vs measured"]["value"]) > 0
    assert rows["train fp16: loss scale"]["value"].split() == ["128.0", "128.0"]  # no overflow: fairseq's 2**7
    for precision in ("fp32", "bf16", "fp16"):
        for size in ("iwslt", "wmt_base"):
            assert float(rows[f"{size} {precision}: train tokens/s"]["value"]) > 0
            assert float(rows[f"{size} {precision}: MFU"]["value"]) > 0  # at toy size the peak matmul is tiny: no bound above
            assert "torch.nn.Transformer" in rows[f"{size} {precision}: train tokens/s"]["detail"]
    assert not [r for r in rows.values() if r["value"] in ("failed", "timed out", "skipped")]
    assert (tmp_path / "gpu_check.md").read_text().startswith("| stage | item | value |")


def test_a_stage_past_the_budget_is_skipped_and_said_so(tmp_path):
    assert main(["gpu-check", "--size", "toy", "--device", "cpu", "--stages", "train", "--budget-s", "5",
                 "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "gpu_check.csv")))
    skipped = [r["item"] for r in rows if r["value"] == "skipped"]
    assert skipped == ["train_fp16", "train_bf16"] and "budget of 5 s spent" in rows[1]["detail"]
