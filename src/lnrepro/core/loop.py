"""The training loop every trainer shares: optimizer, lr schedule, token-weighted updates with
accumulation over micro-batches and DDP workers, divergence detection, per-round validation,
atomic checkpoints and resume.

A *task* says what is trained: translation (``translation.TranslationTask``) or BERT's masked LM
(``pretrain.MaskedLMTask``). A *round* ends in validation and a checkpoint: an epoch for
translation, a fixed number of updates for pre-training. The loop writes ``OUT/metrics.csv``
(one row per round) when the run ends and keeps its resumable state under ``OUT/checkpoints/``
(outside a rule's declared outputs): ``epochN.pt`` the weights of round N for evaluation,
``last.pt`` the full state of the last complete round. A killed run restarts from ``last.pt``;
batch order, dropout (and masking) are seeded per round, so it ends with the same metrics as an
uninterrupted one. ``last.pt`` records what it was trained on (settings, digests of the data
files, model shape, processes): a run that differs in any of them starts afresh and logs why; an
unreadable one is moved aside (``last.pt.corrupt-TIME``) and the run starts afresh. Checkpoints
are written whole or not at all; a full disk stops the run naming the file. A trainer whose parent
dies (Snakemake killed) stops at its next update; its ``last.pt`` resumes. A
run whose loss turns NaN/inf or explodes (checked every ``divergence_interval`` updates and at each
round's end), or whose fp16 loss scale reaches its floor (lnrepro.core.precision), is recorded as
diverged: its curve so far plus a final row with diverged=1 and the reason in diverged_reason, and
the command exits 0. The log (stderr) states the run's settings first (``settings: ...`` lines,
LoopConfig.summary), then progress every ``log_interval`` seconds and at each round's end: round
N/M, update N/M of the run, loss, lr, tokens/s, the run's ETA; at a round's end the train and valid
loss each with its ppl (2**nll, fairseq's; in the log only, not in metrics.csv).

The loop is this module (fit, Run); its parts are beside it: the settings (core.config), the device
(core.device) and the worker processes (core.processes), checkpoints and resume (core.checkpoint),
the log's lines and ETA (core.progress).
"""
import csv
import dataclasses
import math
import os
import time
from contextlib import nullcontext

import torch

from .checkpoint import resume_state, resumes, save_round
from .config import LoopConfig
from .divergence import DivergenceCheck
from .fairseq_optim import ClinicRAdam, FairseqAdam
from .precision import MinimumLossScaleReached, Precision
from .processes import Distributed, ParentWatch
from .progress import RunClock, log
from .run_lock import lock_run_folder, temporary_path
from .schedule import Schedule

LN2 = math.log(2)


def fit(cfg: LoopConfig, task, out_dir):
    """Train task's model for task.rounds rounds (fewer and shorter with cfg's cap). The task provides:
    vocab_size, rounds, valid_columns, valid_nll_column (the one of valid_columns that is the nll, in bits,
    whose 2**x the log shows as ppl), build_model(), updates_per_round(per_update),
    round_batches(round, per_update) (per_update batches for each update, in order),
    tokens(batch) (the loss's denominator), loss(model, batch, device) -> (loss sum, nll sum)
    in nats, validate(model, device, autocast) -> {column: value}, data_identity() -> {file name:
    digest} of the files it trains and validates on (see file_digests)."""
    run = Run(cfg, task, out_dir)
    for epoch in range(run.start_epoch, run.rounds + 1):
        row = run.train_round(epoch)
        if row["diverged"]:
            run.record_divergence(row)
            break
        run.validate(row)
        run.record(row)
        run.checkpoint(epoch)
    run.finish()
    return 0


class Run:
    """What fit's steps share: the workers, the model with its optimizer and precision, the run's rows
    and updates so far (resumed from last.pt), its lr schedule, and the watches on it. Setting it up
    logs the run's size and settings first."""

    def __init__(self, cfg, task, out_dir):
        self.cfg, self.task, self.out_dir = cfg, task, out_dir
        self.env = Distributed(cfg.device)
        self.device, self.main = self.env.device, self.env.rank == 0
        # before anything reads or empties the folder; rank 0 holds it for the run's workers
        self.lock = lock_run_folder(out_dir) if self.main else None
        if cfg.threads > 0:
            torch.set_num_threads(cfg.threads)
        self.ckpt_dir = out_dir / "checkpoints"
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        self.columns = metric_columns(task.valid_columns)
        self.plan()
        self.build()
        self.resume()
        self.step_model = self.env.wrap(torch.compile(self.model) if cfg.compile else self.model)
        self.board = tensorboard_writer(cfg, out_dir) if self.main else None
        self.announce()
        self.divergence = DivergenceCheck(cfg.divergence_interval, cfg.divergence_factor * math.log2(task.vocab_size),
                                          self.env, self.device)
        self.every = max(1, self.updates_per_round // 10)  # the progress interval of several workers, in updates
        self.clock = RunClock(self.updates, self.rounds * self.updates_per_round)
        self.parent = ParentWatch()

    def plan(self):
        """The run's rounds, the updates of each, and the lr schedule over them."""
        cfg = self.cfg
        self.per_update = cfg.update_freq * self.env.world  # batches summed into one update, over all workers
        # a capped round is the first updates of the real one; a schedule over the whole run (linear
        # decay) ends at the capped run's last update
        self.rounds = cfg.capped_rounds(self.task.rounds)
        self.updates_per_round = cfg.capped_round_updates(self.task.updates_per_round(self.per_update))
        self.schedule = Schedule(cfg.schedule, cfg.lr, cfg.warmup, cfg.warmup_init_lr, cfg.decay_epoch,
                                 cfg.decay_factor, self.rounds * self.updates_per_round, cfg.end_lr)

    def build(self):
        """The model, initialized from the run's seed, its optimizer and the run's precision."""
        torch.manual_seed(self.cfg.seed)
        self.model = self.task.build_model().to(self.device)
        self.optimizer = build_optimizer(self.cfg, self.model.parameters())
        self.mixed = Precision(self.cfg, self.device, self.env.world)

    def resume(self):
        """The state of last.pt where it continues this run (resume_state), else round 1's start."""
        self.rows, self.updates, self.start_epoch = [], 0, 1
        # rank 0 decides and removes stale state first; hashing the data once per run start
        self.identity = ({"data": self.task.data_identity(), "model_config": dataclasses.asdict(self.model.cfg)}
                         if self.main else None)
        state = resume_state(self.ckpt_dir, self.cfg, self.env.world, self.identity) if self.main else None
        self.env.barrier()
        if not self.main:
            state = resume_state(self.ckpt_dir, self.cfg, self.env.world)
        if state:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.mixed.load_state_dict(state.get("loss_scaler"))
            self.rows, self.updates, self.start_epoch = state["metrics"], state["updates"], state["epoch"] + 1

    def announce(self):
        """The log's first lines: the model's size and the run's length, its settings, its cap."""
        cfg, task = self.cfg, self.task
        log(f"{sum(p.numel() for p in self.model.parameters()):,} parameters, vocab {task.vocab_size}, "
            f"{self.updates_per_round} updates/round, {self.rounds} rounds, device {self.device}, "
            f"{self.env.world} worker(s)")
        if self.main:
            for line in cfg.summary(self.device, self.env.world):
                log(line)
        if cfg.capped():
            log(f"CAPPED (training_cap): {self.rounds} of {task.rounds} rounds, {self.updates_per_round} of "
                f"{task.updates_per_round(self.per_update)} updates each; a smoke test, not a result")

    def train_round(self, epoch):
        """Round epoch's updates, with progress lines; its metrics row, validation's columns to come. A
        round that diverges stops there, its row saying why."""
        torch.manual_seed(dropout_seed(self.cfg.seed, epoch, self.env.rank))
        self.model.train()
        tally = RoundTally(self.device)
        order = self.task.round_batches(epoch, self.per_update)
        diverged = ""
        for u in range(self.updates_per_round):
            self.stop_if_orphaned(epoch)
            diverged = self.update(epoch, u, order[u * self.per_update:(u + 1) * self.per_update], tally)
            if diverged:
                break
            if self.progress_due(u, tally.last_log):
                self.log_progress(epoch, tally)
        return self.round_row(epoch, tally, diverged)

    def stop_if_orphaned(self, epoch):
        """Stop where Snakemake (or the launcher) died: last.pt (written whole, atomically) is the last
        complete round."""
        orphaned = self.parent.gone()
        if orphaned:
            raise SystemExit(f"stopping epoch {epoch} at update {self.updates}: {orphaned} (Snakemake or its job "
                             f"step killed?); a rerun {resumes(self.ckpt_dir)}")

    def update(self, epoch, u, group, tally):
        """Update u of the round from its group of per_update batches; why the run diverged there, or ''."""
        tally.lr = self.schedule(self.updates, epoch, (self.cfg.decay_epoch - 1) * self.updates_per_round)
        for g in self.optimizer.param_groups:
            g["lr"] = tally.lr
        group_tokens, normalizer = self.backward(group, tally)
        try:
            gnorm, step = self.mixed.finish(self.model.parameters(), normalizer, self.cfg.clip_norm)
        except MinimumLossScaleReached as e:  # every worker: the same all-reduced gradients
            return str(e)
        if step:  # fp16 skips an overflowed update: not counted, the lr schedule stays
            self.optimizer.step()
            tally.gnorm += gnorm
            self.updates, tally.updates = self.updates + 1, tally.updates + 1
        self.optimizer.zero_grad(set_to_none=True)
        return self.divergence.after_update(group_tokens, u + 1, u == self.updates_per_round - 1)

    def backward(self, group, tally):
        """The gradient of (sum of all workers' losses) / (all their tokens) from this worker's batches of
        the group (DDP averages over workers); the group's tokens and that normalizer."""
        env = self.env
        group_tokens = sum(self.task.tokens(batch) for batch in group)  # all workers' target tokens
        mine = group[env.rank::env.world]
        # a worker left without a batch at the round's end still joins the gradient sum, with zero weight
        weights = [1.0] * len(mine) if mine else [0.0]
        mine = mine or group[:1]
        normalizer = env.world / group_tokens
        for k, (batch, weight) in enumerate(zip(mine, weights)):
            sync = env.world == 1 or k == len(mine) - 1  # all-reduce once, after the last micro-batch
            with (nullcontext() if sync else self.step_model.no_sync()), self.mixed.autocast():
                loss, nll = self.task.loss(self.step_model, batch, self.device)
            (loss * (weight * self.mixed.loss_factor(normalizer))).backward()
            part = weight * loss.detach()
            tally.loss += part
            tally.nll += weight * nll.detach()
            self.divergence.add(part)
        tally.tokens += group_tokens
        return group_tokens, normalizer

    def progress_due(self, u, last_log):
        """A progress line after the round's last update, else every log_interval seconds; with several
        workers every tenth of the round, since they must all-reduce at the same updates."""
        if u == self.updates_per_round - 1:
            return True
        return (u + 1) % self.every == 0 if self.env.world > 1 else time.time() - last_log >= self.cfg.log_interval

    def log_progress(self, epoch, tally):
        mean_loss = self.env.total(tally.loss).item() / tally.tokens / LN2  # a host sync every few seconds
        tally.last_log = time.time()
        # the format lnrepro's Snakefile (workflow/lib/run_progress.py) shows in the terminal
        log(f"epoch {epoch}/{self.rounds} | update {self.updates}/{self.clock.total} | loss {mean_loss:.3f} | "
            f"lr {tally.lr:.3g} | {tally.tokens / (tally.last_log - tally.t0):,.0f} tok/s | "
            f"run eta {self.clock.eta(self.updates)}")

    def round_row(self, epoch, tally, diverged):
        """The round's row of metrics.csv from its tally: losses in bits per token, all workers' tokens."""
        wall, total = time.time() - tally.t0, self.env.total
        return {"epoch": epoch, "updates": self.updates, "train_loss": total(tally.loss).item() / tally.tokens / LN2,
                "train_nll": total(tally.nll).item() / tally.tokens / LN2, "lr": tally.lr,
                "grad_norm": tally.gnorm.item() / tally.updates if tally.updates else float("nan"),
                "loss_scale": self.mixed.scaler.loss_scale if self.mixed.scaler else "",
                "tokens_per_s": tally.tokens / wall, "wall_s": wall, "diverged": int(bool(diverged)),
                "diverged_reason": diverged, "capped": int(self.cfg.capped())}

    def record_divergence(self, row):
        """The diverged round's row ends the curve: no validation, no checkpoint."""
        log(f"epoch {row['epoch']}/{self.rounds} DIVERGED at update {self.updates} ({row['diverged_reason']}); "
            f"recording the curve so far")
        self.rows.append({**row, **{c: float("nan") for c in self.task.valid_columns}, "checkpoint": ""})

    def validate(self, row):
        self.model.eval()
        with torch.no_grad():
            row.update(self.task.validate(self.model, self.device, self.mixed.autocast))
        self.model.train()

    def record(self, row):
        """The round's row among the run's, its end in the log and in TensorBoard."""
        epoch = row["epoch"]
        row["checkpoint"] = f"checkpoints/epoch{epoch}.pt"
        self.rows.append(row)
        # ppl: 2**nll (bits), fairseq's ppl; loss: the loss trained (label-smoothed), as fairseq's loss
        log(f"epoch {epoch}/{self.rounds} done | train {row['train_loss']:.3f} ppl "
            f"{perplexity(row['train_nll']):.2f} | valid {row['valid_loss']:.3f} ppl {perplexity(row[self.task.valid_nll_column]):.2f} | "
            f"gnorm {row['grad_norm']:.3f} | {scale_text(self.mixed)}{row['tokens_per_s']:,.0f} tok/s | "
            f"{row['wall_s']:.1f}s | run eta {self.clock.eta(self.updates)}")
        if self.board:
            for key in ("train_loss", "valid_loss", "lr", "grad_norm", "tokens_per_s"):
                self.board.add_scalar(key, row[key], epoch)
            self.board.add_scalar("train_ppl", perplexity(row["train_nll"]), epoch)  # the log's ppl
            self.board.add_scalar("valid_ppl", perplexity(row[self.task.valid_nll_column]), epoch)

    def checkpoint(self, epoch):
        """Round epoch's checkpoints and progress.csv, by rank 0; every worker waits for them."""
        if self.main:
            save_round(self.model, self.optimizer, self.mixed, self.cfg, self.rows, epoch, self.updates,
                       self.ckpt_dir, self.env.world, self.identity["data"])
            write_csv(self.rows, self.out_dir / "progress.csv", self.columns)
        self.env.barrier()

    def finish(self):
        """metrics.csv, every round's row, by rank 0; the workers' process group closed."""
        if self.main:
            write_csv(self.rows, self.out_dir / "metrics.csv", self.columns)
        self.env.close()


class RoundTally:
    """A round's sums so far: loss, nll (nats) and gradient norms on the device, read at a progress line
    and the round's end (a host sync each); its tokens, counted updates, last lr and start time."""

    def __init__(self, device):
        self.t0 = self.last_log = time.time()
        self.loss, self.nll, self.gnorm = (torch.zeros((), device=device) for _ in range(3))
        self.tokens, self.updates, self.lr = 0, 0, None


def perplexity(bits):
    """2**bits, fairseq's ppl of an nll in bits per token; inf where that overflows a float."""
    try:
        return 2.0 ** bits
    except OverflowError:
        return math.inf


def scale_text(mixed):
    return f"loss scale {mixed.scaler.loss_scale:g} | " if mixed.scaler else ""


def tensorboard_writer(cfg, out_dir):
    if not cfg.tensorboard:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        raise SystemExit(f"tensorboard: true (--tensorboard) needs the tensorboard package: pip install -e '.[tensorboard]' "
                         f"(or pip install tensorboard), or set tensorboard: false ({e})")
    return SummaryWriter(out_dir / "tensorboard")


def build_optimizer(cfg, params):
    # fairseq's SGD is torch.optim.SGD (fairseq 0.9 optim/sgd.py:15): only Adam and RAdam differ
    if cfg.optimizer_impl == "fairseq" and cfg.optimizer != "sgd":
        papers = {"adam": FairseqAdam, "radam": ClinicRAdam}[cfg.optimizer]
        return papers(params, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps,
                      weight_decay=cfg.weight_decay)
    fast = {"fused": True}  # one kernel per step on CUDA and CPU alike (CPU: ~5% faster than foreach at d=64)
    if cfg.optimizer == "adam":
        return torch.optim.AdamW(params, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2),
                                 eps=cfg.adam_eps, weight_decay=cfg.weight_decay, **fast)
    if cfg.optimizer == "radam":
        return torch.optim.RAdam(params, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps,
                                 weight_decay=cfg.weight_decay, decoupled_weight_decay=True, foreach=True)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay, **fast)


def dropout_seed(seed, epoch, rank=0):
    """Dropout stream of one round and worker: a resumed run replays it exactly."""
    return seed * 100003 + epoch * 1009 + rank


def write_csv(rows, path, columns):
    """A table written whole or not at all (a killed job leaves the previous file)."""
    tmp = temporary_path(path)
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def metric_columns(valid_columns):
    return (["epoch", "updates", "train_loss", "train_nll", *valid_columns, "lr", "grad_norm", "loss_scale",
             "tokens_per_s", "wall_s", "diverged", "diverged_reason", "capped", "checkpoint"])
