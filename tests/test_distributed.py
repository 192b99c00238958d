"""DDP launched by torchrun: 2 CPU workers (gloo) train exactly like 1 process with the doubled batch."""
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from lnrepro.core.batching import make_batches
from lnrepro.core.data import ParallelData

SAME = dict(enc_layers=2, dec_layers=2, d_model=32, ffn_dim=64, heads=4, dropout=0.0, max_tokens=200,
            device="cpu", threads=1, lr=2e-3, warmup=10, epochs=3, seed=3)


def train_cmd(data, out, **extra):
    args = ["train", "--data", str(data), "--out", str(out)]
    for k, v in {**SAME, **extra}.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    return args


def max_tokens_giving(parity, data_dir):
    """A batch size whose epoch has an even or odd number of batches."""
    data = ParallelData.load(data_dir / "train.pt")
    return next(t for t in range(150, 400) if len(make_batches(data, t, SAME["seed"])) % 2 == parity)


def one_process_and_two_workers(data, out, **flags):
    """metrics.csv of one process with update_freq 2 and of two DDP workers (torchrun, gloo) with
    update_freq 1: the same batches per update; and the workers' stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    single = [sys.executable, "-m", "lnrepro.cli"] + train_cmd(data, out / "one", update_freq=2, **flags)
    subprocess.run(single, check=True, env=env, capture_output=True)
    ddp = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "lnrepro.cli"] + train_cmd(data, out / "two", update_freq=1, **flags)
    proc = subprocess.run(ddp, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pd.read_csv(out / "one" / "metrics.csv"), pd.read_csv(out / "two" / "metrics.csv"), proc.stderr


@pytest.mark.medium
@pytest.mark.parametrize("parity", [0, 1], ids=["even-batches", "odd-batches"])
def test_two_workers_match_one_process_with_update_freq_2(toy_data, tmp_path, parity):
    """With an odd count, the last update has one batch: the idle worker joins with zero weight."""
    one, two, log = one_process_and_two_workers(toy_data, tmp_path, max_tokens=max_tokens_giving(parity, toy_data))
    assert "2 worker(s)" in log
    assert list(one.updates) == list(two.updates)
    for col in ("train_loss", "valid_loss", "grad_norm", "lr"):
        pd.testing.assert_series_equal(one[col], two[col], rtol=1e-4, check_names=False)
    assert one.valid_loss.iloc[-1] < one.valid_loss.iloc[0]  # and it trained
    # rank 0 alone records the run's provenance: no worker races another's sidecar
    assert "provenance not recorded" not in log
    assert json.loads((tmp_path / "two" / "metrics.csv.provenance.json").read_text())["command"] == "train"


@pytest.mark.medium
def test_two_workers_diverge_at_the_update_one_process_does(toy_data, tmp_path):
    """The divergence check all-reduces the same loss at the same updates as one process checks it."""
    one, two, _ = one_process_and_two_workers(toy_data, tmp_path, optimizer="sgd", lr=1e6, schedule="constant",
                                              warmup=0, divergence_interval=2)
    assert list(one.diverged) == list(two.diverged) == [1] and list(one.updates) == list(two.updates)
