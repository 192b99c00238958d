"""TensorBoard as a config key (issue 31): a run's `tensorboard: true` (or its defaults') adds
`--tensorboard true` to its training command, and nothing else changes; false or absent adds no
flag, so configs without it keep their commands (and their trainings stay done). A dry run of the
demo config, a few seconds."""
import pytest
import yaml

from workflow_helpers import ROOT, snakemake


def commands(tmp_path, name, edit=None):
    cfg = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    if edit:
        edit(cfg)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    workdir = tmp_path / name
    workdir.mkdir()
    out = snakemake(ROOT, "-n", "-p", "--configfile", str(path), "-d", str(workdir)).stdout
    return sorted(line for line in out.splitlines() if line.startswith("Shell command: "))


def turn_on(cfg):
    cfg["train_defaults"]["tensorboard"] = False  # false: no flag
    cfg["runs"]["adam_5e-4_warm4000"]["tensorboard"] = True
    cfg["bert"]["pretrain_defaults"]["tensorboard"] = True  # defaults: every BERT run
    cfg["bert"]["runs"]["bert_preln"]["tensorboard"] = False  # a run's own false wins


@pytest.mark.medium
def test_tensorboard_true_adds_only_its_flag_to_those_runs_trainings(tmp_path):
    before, after = commands(tmp_path, "plain"), commands(tmp_path, "tensorboard", turn_on)
    changed = {b: a for b, a in zip(before, after) if a != b}
    assert len(before) == len(after) and len(changed) == 2, changed
    trainings = ("--out results/pretrain/bert_postln ", "--out results/train/adam_5e-4_warm4000 ")  # sorted
    for out, (b, a) in zip(trainings, sorted(changed.items())):
        assert out in b and a == b.replace(" --threads ", " --tensorboard true --threads ", 1), (b, a)
