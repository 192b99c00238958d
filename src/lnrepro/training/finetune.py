"""Fine-tune one pre-training checkpoint on a GLUE task (Xiong et al. Fig 5b,c; supplementary §1.3).

For every point of the search grid (batch size x lr x epochs) the checkpoint is fine-tuned with
each seed and scored by dev accuracy; the grid point with the best mean is the checkpoint's
result, reported as mean and 95% confidence interval over the seeds (Student's t): ``n`` of its
``seeds`` gave an accuracy (a fine-tuning whose weights went NaN/inf has none), and with n = 1 the
spread and interval are NaN, not 0 (the note says "n = 1 seed"). Optimizer as
Devlin et al.: AdamW (0.9, 0.999), eps 1e-6, weight decay 0.01, linear decay after a warm-up
over the first 10% of updates.

Writes OUT (every fine-tuning: one row per grid point and seed) and OUT with ``.summary.csv``
(the chosen grid point's mean and interval). A checkpoint that does not exist because its
pre-training diverged at or before that round (its metrics.csv says so) gives a summary row marked
diverged, its note saying where; any other missing checkpoint is an error.
"""
import argparse
import copy
import csv
import itertools
import math
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..args import usage_error
from ..core.bert import BertClassifier, load_bert, pad_batch, pair_input
from ..core.checkpoint import load_checkpoint
from ..core.device import pick_device
from ..core.mono_data import PairData
from ..core.progress import log
from ..retention import deleted_note

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: the normal's 1.96)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
SUMMARY_COLUMNS = ["round", "updates", "task", "batch", "lr", "epochs", "seeds", "n", "mean_acc", "std_acc", "ci95",
                   "diverged", "max_updates", "note", "majority_acc"]


def majority_accuracy(labels):
    """The dev accuracy of always answering the most frequent label: the chance level a figure draws
    (MRPC's generated dev set is 64% positive: a classifier there can look trained and be at it)."""
    return labels.bincount().max().item() / len(labels) if len(labels) else float("nan")


def round_checkpoint(text):
    """checkpoints/epochN.pt: its N is the round fine-tuned (run() reads it from the name)."""
    if not re.fullmatch(r"epoch\d+", Path(text).stem):
        raise argparse.ArgumentTypeError(f"'{text}' is not a round checkpoint (checkpoints/epochN.pt)")
    return text


def add_arguments(p):
    p.add_argument("--checkpoint", required=True, type=round_checkpoint,
                   help="a pre-training round checkpoint (checkpoints/epochN.pt)")
    p.add_argument("--metrics", default=None,
                   help="the pre-training's metrics.csv, read when the checkpoint is missing; default: the one "
                        "beside checkpoints/")
    p.add_argument("--data", required=True, help="binarized GLUE task dir (train.pt, dev.pt)")
    p.add_argument("--task", required=True, help="task name, written into the tables")
    p.add_argument("--batch", type=int, nargs="+", default=[16, 32], help="grid: batch sizes, in sentence pairs")
    p.add_argument("--lr", type=float, nargs="+", default=[1e-5, 2e-5, 3e-5, 5e-5, 1e-4],
                   help="grid: peak learning rates")
    p.add_argument("--epochs", type=int, nargs="+", default=[3, 4, 5, 6, 7, 8], help="grid: epochs")
    p.add_argument("--seeds", type=int, default=6,
                   help="fine-tunings per grid point, seeds 1..N (classifier init, order)")
    p.add_argument("--max-len", type=int, default=128,
                   help="tokens per pair input ([CLS] A [SEP] B [SEP], at most the model's positions); longer "
                        "pairs are cut")
    p.add_argument("--warmup-fraction", type=float, default=0.1,
                   help="linear warm-up over this fraction of the updates")
    p.add_argument("--max-updates", type=int, default=0,
                   help="the config's training_cap: stop each fine-tuning after N updates of its schedule (0: none)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, auto or a torch device such as cuda:1")
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads; 0 = torch's default")
    p.add_argument("--out", required=True, help="CSV of every fine-tuning; the summary goes beside it")


def ci95(values):
    """(mean, sample std, half-width of the 95% confidence interval of the mean); one value has no
    spread, so std and interval are NaN (not 0), and no value gives NaN for all three."""
    n = len(values)
    if n < 2:
        return (values[0] if n else float("nan")), float("nan"), float("nan")
    mean, std = statistics.fmean(values), statistics.stdev(values)
    t = T975[n - 2] if n - 1 <= len(T975) else 1.96
    return mean, std, t * std / math.sqrt(n)


def encode(data: PairData, max_len):
    return [pair_input(a.tolist(), b.tolist(), max_len) for a, b, _ in (data.pair(i) for i in range(len(data)))]


class Pretrained:
    """A pre-training checkpoint, read and built once per seed instead of once per fine-tuning (the
    grid fine-tunes it 360 times; building BERT-base draws ~110M random numbers the checkpoint then
    overwrites). build(seed) returns a copy and leaves the generator where a fresh build from that
    seed would, so the classifier's initialization and every result are unchanged."""

    def __init__(self, checkpoint, device):
        self.checkpoint, self.device = checkpoint, device
        self.model, self.rng_after = None, {}

    def build(self, seed):
        torch.manual_seed(seed)
        if seed not in self.rng_after:
            self.model = load_bert(self.checkpoint, self.device)
            self.rng_after[seed] = torch.get_rng_state()
        torch.set_rng_state(self.rng_after[seed])
        return copy.deepcopy(self.model)


def finetune_once(pretrained, train, dev, batch, lr, epochs, seed, warmup_fraction, device, max_updates=0):
    """Dev accuracy after fine-tuning the Pretrained checkpoint with one setting and seed; a cap
    (max_updates) stops it early, on the uncapped schedule."""
    model = BertClassifier(pretrained.build(seed)).to(device)
    inputs, labels = train
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "norm" in n]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "norm" in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=lr, betas=(0.9, 0.999), eps=1e-6)
    steps = epochs * math.ceil(len(inputs) / batch)
    warmup = max(1, int(warmup_fraction * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda n: (n + 1) / warmup if n < warmup else max(0.0, (steps - n) / max(1, steps - warmup)))
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(inputs))
        for start in range(0, len(inputs), batch):
            if max_updates and schedule.last_epoch >= max_updates:
                return accuracy(model, dev, device)
            idx = order[start:start + batch]
            tokens, segments = pad_batch([inputs[i] for i in idx])
            loss = F.cross_entropy(model(tokens.to(device), segments.to(device)), labels[idx].to(device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            schedule.step()
    if not all(torch.isfinite(p).all() for p in model.parameters()):
        return float("nan")  # the argmax of NaN logits would be an invented accuracy
    return accuracy(model, dev, device)


def seeds_note(n, seeds):
    """'' when several seeds all gave a value; else 'n = 1 seed', 'n = 1 seed (of 6)', 'n = 4 of 6 seeds'."""
    if n == 1:
        return "n = 1 seed" + (f" (of {seeds})" if seeds > 1 else "")
    return "" if n == seeds else f"n = {n} of {seeds} seeds"


@torch.no_grad()
def accuracy(model, dev, device, batch=64):
    model.eval()
    inputs, labels = dev
    correct = 0
    for start in range(0, len(inputs), batch):
        tokens, segments = pad_batch(inputs[start:start + batch])
        correct += int((model(tokens.to(device), segments.to(device)).argmax(-1).cpu() == labels[start:start + batch]).sum())
    return correct / len(inputs)


def summarize(rows, task, round_, updates):
    """The grid point with the best mean dev accuracy over the seeds that gave one (n of seeds), with
    its 95% interval; a grid point no seed gave a value for is chosen only if all are so."""
    frame = pd.DataFrame(rows)
    best = None
    for (batch, lr, epochs), group in frame.groupby(["batch", "lr", "epochs"], sort=True):
        values = [v for v in group.dev_acc if math.isfinite(v)]
        mean, std, half = ci95(values)
        if best is None or mean > best["mean_acc"] or (math.isnan(best["mean_acc"]) and values):
            best = {"round": round_, "updates": updates, "task": task, "batch": batch, "lr": lr, "epochs": epochs,
                    "seeds": len(group), "n": len(values), "mean_acc": mean, "std_acc": std, "ci95": half,
                    "diverged": 0, "note": seeds_note(len(values), len(group))}
    return best


def pretraining_divergence(metrics, round_):
    """'pre-training diverged at update N (round R): reason' when the run stopped at or before this
    round, else None (the checkpoint should exist)."""
    with open(metrics, newline="") as f:
        diverged = [r for r in csv.DictReader(f) if r["diverged"] == "1"]
    if not diverged or int(diverged[-1]["epoch"]) > round_:
        return None
    r = diverged[-1]
    reason = r.get("diverged_reason") or "no reason recorded"
    return f"pre-training diverged at update {r['updates']} (round {r['epoch']}): {reason}"


def write_rows(path, rows, columns):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def summary_of(out):
    """The summary beside the CSV of every fine-tuning (round3.csv: round3.summary.csv)."""
    return Path(out).with_suffix(".summary.csv")


def run(args):
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    summary_path = summary_of(out)
    checkpoint = Path(args.checkpoint)
    round_ = int(checkpoint.stem.removeprefix("epoch"))
    if not checkpoint.exists():
        retained = deleted_note(checkpoint)  # not a divergence: pruned after the rounds then fine-tuned
        if retained:
            usage_error("finetune", retained)
        metrics = Path(args.metrics) if args.metrics else checkpoint.parent.parent / "metrics.csv"
        if not metrics.exists():
            sys.exit(f"{checkpoint}: no such checkpoint, nor {metrics} to say why: run the pre-training first "
                     f"(snakemake {metrics}), or pass its metrics.csv with --metrics.")
        diverged = pretraining_divergence(metrics, round_)
        if diverged is None:  # deleted, or never trained: no result to record
            sys.exit(f"{checkpoint}: no such checkpoint, and {metrics} records no divergence at or before "
                     f"round {round_}. Re-run the pre-training that writes it (snakemake --force {metrics}), "
                     f"or restore the checkpoint.")
        log(f"{checkpoint}: no such checkpoint: {diverged}; recorded as diverged")
        write_rows(out, [], ["round", "task", "batch", "lr", "epochs", "seed", "dev_acc"])
        write_rows(summary_path, [{"round": round_, "task": args.task, "diverged": 1, "note": diverged,
                                   "majority_acc": majority_accuracy(PairData.load(Path(args.data) / "dev.pt").labels)}],
                   SUMMARY_COLUMNS)
        return 0
    updates = load_checkpoint(checkpoint).get("updates", 0)
    max_len = min(args.max_len, load_bert(checkpoint).cfg.max_positions)
    data = {}
    for split in ("train", "dev"):
        pairs = PairData.load(Path(args.data) / f"{split}.pt")
        data[split] = (encode(pairs, max_len), pairs.labels.clone())
    device = pick_device(args.device)  # torch.device would refuse auto, the paper config's device
    rows, pretrained = [], Pretrained(checkpoint, device)
    if args.max_updates:
        log(f"CAPPED (training_cap): each fine-tuning stops after {args.max_updates} update(s); a smoke test, not a result")
    for batch, lr, epochs in itertools.product(args.batch, args.lr, args.epochs):
        for seed in range(1, args.seeds + 1):
            t0 = time.time()
            acc = finetune_once(pretrained, data["train"], data["dev"], batch, lr, epochs, seed,
                                args.warmup_fraction, device, args.max_updates)
            rows.append({"round": round_, "task": args.task, "batch": batch, "lr": lr, "epochs": epochs,
                         "seed": seed, "dev_acc": acc})
            log(f"round {round_} | {args.task} | batch {batch} lr {lr:g} epochs {epochs} seed {seed} | "
                f"dev acc {acc:.4f} | {time.time() - t0:.1f}s")
    write_rows(out, rows, list(rows[0]))
    best = {**summarize(rows, args.task, round_, updates), "max_updates": args.max_updates,
            "majority_acc": majority_accuracy(data["dev"][1])}
    write_rows(summary_path, [best], SUMMARY_COLUMNS)
    log(f"round {round_} ({updates} updates) | {args.task}: {best['mean_acc']:.4f} +- {best['ci95']:.4f} "
        f"{best['note']} (batch {best['batch']}, lr {best['lr']:g}, {best['epochs']} epochs)")
    return 0
