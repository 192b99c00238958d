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
"""
import csv
import dataclasses
import errno
import hashlib
import json
import math
import os
import re
import shutil
import socket
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from .. import __version__
from ..args import str2bool
from ..settings import LAUNCH_DEFAULTS, LOOP_DEFAULTS
from .divergence import DivergenceCheck
from .fairseq_optim import ClinicRAdam, FairseqAdam
from .precision import FP16_SETTINGS, PRECISIONS, MinimumLossScaleReached, Precision
from .run_lock import lock_run_folder, temporary_path
from .data import dictionary_files
from .schedule import SCHEDULES, Schedule

OPTIMIZERS = ("adam", "sgd", "radam")
# whose Adam/RAdam update equations: torch.optim's, or those of the papers' code (core.fairseq_optim)
OPTIMIZER_IMPLS = ("torch", "fairseq")
# last.pt's layout: 2 = attention's stacked in_proj (older optimizer moments do not fit the
# parameters); 3 = records its data's digests. An older state is not resumed (its epoch weights
# still load for evaluation)
CHECKPOINT_FORMAT = 3
# settings that do not change the result: a run resumes across them
UNFINGERPRINTED = ("log_interval", "threads", "compile", "tensorboard")
# settings added after checkpoints were written (the training cap, the init, the optimizer's
# implementation, the divergence checks' interval, the model's norm_fn): left out at their default, so those checkpoints
# (their fingerprint, their model_config) still resume
LATER_DEFAULTS = {"max_rounds": 0, "max_round_updates": 0, "init": "standard", "optimizer_impl": "torch",
                  "divergence_interval": 100, "norm_fn": "layernorm"}
LN2 = math.log(2)
DEVICE_NOTE = "lnrepro: device"  # pick_device's lines start so: workflow/lib/run_progress.py shows them at once


def setting(default, help, choices=None):
    """A config field with its command-line help and, where the set is closed, its choices."""
    return field(default=default, metadata={"help": help, "choices": choices})


@dataclass(frozen=True)
class LoopConfig:
    """What every trainer shares; the task's own settings extend it (train.TrainConfig, ...)."""
    # optimizer
    optimizer: str = setting(LOOP_DEFAULTS["optimizer"], "adam = AdamW (fairseq's Adam, decoupled weight decay); sgd; "
                             "radam = RAdam (Liu et al.)", OPTIMIZERS)
    lr: float = setting(LOOP_DEFAULTS["lr"], "peak learning rate (lr_max; after warm-up)")
    adam_beta1: float = setting(LOOP_DEFAULTS["adam_beta1"], "Adam/RAdam beta1")
    adam_beta2: float = setting(LOOP_DEFAULTS["adam_beta2"],
                                "Adam/RAdam beta2 (the paper's 0.98; Liu et al. Fig 10 varies it)")
    adam_eps: float = setting(LOOP_DEFAULTS["adam_eps"], "Adam/RAdam epsilon")
    optimizer_impl: str = setting(LOOP_DEFAULTS["optimizer_impl"], "Adam/RAdam update equations: torch = torch.optim.AdamW (eps added "
                                  "to the bias-corrected sqrt(v)) and RAdam (SGD-like steps while "
                                  "unrectified); fairseq = fairseq 0.9's Adam (eps added to sqrt(v): in "
                                  "effect eps/sqrt(1-beta2^t)) and Transformer-Clinic's RAdam (no step "
                                  "but weight decay while unrectified)", OPTIMIZER_IMPLS)
    momentum: float = setting(LOOP_DEFAULTS["momentum"], "SGD momentum (sgd only)")
    weight_decay: float = setting(LOOP_DEFAULTS["weight_decay"], "weight decay, decoupled as fairseq's Adam")
    clip_norm: float = setting(LOOP_DEFAULTS["clip_norm"], "clip the gradient's global L2 norm to this; 0 = no clipping")
    # learning-rate schedule
    schedule: str = setting(LOOP_DEFAULTS["schedule"], "lr schedule after warm-up (lnrepro.core.schedule)", SCHEDULES)
    warmup: int = setting(LOOP_DEFAULTS["warmup"], "linear warm-up, in updates (the paper's T_warmup); 0 = none")
    warmup_init_lr: float = setting(LOOP_DEFAULTS["warmup_init_lr"], "lr the warm-up starts from")
    decay_epoch: int = setting(LOOP_DEFAULTS["decay_epoch"], "step schedules: multiply the lr by --decay-factor from this epoch on")
    decay_factor: float = setting(LOOP_DEFAULTS["decay_factor"], "step schedules: lr multiplier from --decay-epoch on")
    end_lr: float = setting(LOOP_DEFAULTS["end_lr"], "linear schedule: lr at the last update")
    # batches
    max_tokens: int = setting(LOOP_DEFAULTS["max_tokens"], "batch size in tokens per process and micro-batch")
    update_freq: int = setting(LOOP_DEFAULTS["update_freq"], "micro-batches accumulated per update")
    seed: int = setting(LOOP_DEFAULTS["seed"], "seed of initialization, batch order, dropout (and masking)")
    divergence_factor: float = setting(LOOP_DEFAULTS["divergence_factor"], "train loss above this times log2(vocab size) counts as diverged")
    divergence_interval: int = setting(LOOP_DEFAULTS["divergence_interval"], "updates between divergence checks (and one at each round's end): "
                                       "a schedule of updates, so a verdict never depends on machine speed")
    # system
    device: str = setting(LOOP_DEFAULTS["device"], "auto (cuda if available), cpu, cuda or a torch device such as cuda:1")
    precision: str = setting(LOOP_DEFAULTS["precision"], "fp32; bf16 autocast; fp16 autocast with fairseq's dynamic loss scaling "
                             "(lnrepro.core.precision), on any device", PRECISIONS)
    fp16_init_scale: int = setting(LOOP_DEFAULTS["fp16_init_scale"], "fp16: the initial loss scale (fairseq's --fp16-init-scale)")
    fp16_scale_window: int = setting(LOOP_DEFAULTS["fp16_scale_window"], "fp16: updates without an overflow before the scale doubles; 0 = fairseq's "
                                     "default, 2**14 / (processes x update_freq)")
    fp16_scale_tolerance: float = setting(LOOP_DEFAULTS["fp16_scale_tolerance"], "fp16: the fraction of updates since the last rescale that may "
                                          "overflow before the scale halves (fairseq's default 0: every overflow)")
    threshold_loss_scale: float = setting(LOOP_DEFAULTS["threshold_loss_scale"], "fp16: the scale never halves below this; 0 = no threshold")
    min_loss_scale: float = setting(LOOP_DEFAULTS["min_loss_scale"], "fp16: an overflow that leaves the scale at or below this stops the "
                                    "run as diverged")
    compile: bool = setting(LOOP_DEFAULTS["compile"], "torch.compile the model")
    threads: int = setting(LOOP_DEFAULTS["threads"], "torch intra-op threads on CPU; 0 = torch's default")
    log_interval: float = setting(LOOP_DEFAULTS["log_interval"], "seconds between progress lines (in a Snakemake run's terminal: "
                                  "fewer, see LNREPRO_PROGRESS in docs/demo.md)")
    tensorboard: bool = setting(LOOP_DEFAULTS["tensorboard"], "also log per-round scalars to OUT/tensorboard")
    # the config's training_cap (a smoke test of a configuration, never a result): at most this
    # many rounds, of at most this many updates each; 0 = no cap
    max_rounds: int = setting(LOOP_DEFAULTS["max_rounds"], "the config's training_cap: at most this many rounds; 0 = no cap")
    max_round_updates: int = setting(LOOP_DEFAULTS["max_round_updates"], "the config's training_cap: at most this many updates a round; 0 = no cap")

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r}: expected one of {OPTIMIZERS}")
        if self.optimizer_impl not in OPTIMIZER_IMPLS:
            raise ValueError(f"optimizer_impl={self.optimizer_impl!r}: expected one of {OPTIMIZER_IMPLS}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule={self.schedule!r}: expected one of {SCHEDULES}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision={self.precision!r}: expected one of {PRECISIONS}")
        if self.divergence_interval < 1:
            raise ValueError(f"divergence_interval={self.divergence_interval}: expected 1 or more updates")

    def as_dict(self):
        return dataclasses.asdict(self)

    def settings(self):
        """What decides the result."""
        return result_settings(self.as_dict())

    def capped(self):
        return bool(self.max_rounds or self.max_round_updates)

    def capped_rounds(self, rounds):
        return min(rounds, self.max_rounds) if self.max_rounds else rounds

    def capped_round_updates(self, updates):
        return min(updates, self.max_round_updates) if self.max_round_updates else updates

    def summary(self, device, world):
        """The run's settings as the log's first lines say them, in fairseq's words where they have one
        (config/README.md maps fairseq-train's flags to these keys)."""
        if self.optimizer == "sgd":
            optimizer = f"optimizer sgd, momentum {self.momentum:g}"
        else:
            optimizer = (f"optimizer {self.optimizer} (optimizer_impl {self.optimizer_impl}), betas ({self.adam_beta1:g}, "
                         f"{self.adam_beta2:g}), eps {self.adam_eps:g}")
        schedule = {"step": f", x{self.decay_factor:g} from epoch {self.decay_epoch}",
                    "step_inverse_sqrt": f", x{self.decay_factor:g} from epoch {self.decay_epoch}",
                    "linear": f" to {self.end_lr:g}"}.get(self.schedule, "")
        precision = self.precision + (f" (loss scale from {self.fp16_init_scale})" if self.precision == "fp16" else "")
        return [f"settings: lr {self.lr:g}, schedule {self.schedule}{schedule}, warmup {self.warmup} updates from "
                f"lr {self.warmup_init_lr:g} | {optimizer}, weight decay {self.weight_decay:g}, clip norm "
                f"{self.clip_norm:g}{' (none)' if not self.clip_norm else ''}",
                f"settings: batch max_tokens {self.max_tokens} x update_freq {self.update_freq} x {world} "
                f"process(es) | seed {self.seed} | precision {precision} | device {device}",
                *self.model_summary()]

    def model_summary(self):
        """The task's own settings (model, objective, length) as log lines."""
        return []

    def fingerprint(self):
        """The settings' digest; a checkpoint from another fingerprint is never resumed."""
        return hashlib.sha256(json.dumps(self.settings(), sort_keys=True).encode()).hexdigest()[:16]


def result_settings(config_dict):
    """What decides a run's result: settings that do not (UNFINGERPRINTED, the fp16 settings of a run in
    another precision) and later settings at their default (LATER_DEFAULTS: an uncapped run, the
    standard init) are left out, so fingerprints stay those of the versions before them."""
    settings = without_later_defaults(config_dict)
    unused = () if settings.get("precision") == "fp16" else FP16_SETTINGS
    return {k: v for k, v in settings.items() if k not in UNFINGERPRINTED + unused}


def with_precision(config_dict):
    """A train_config written before `precision`, with the precision it trained in: its `bf16` autocast
    bf16 on CUDA and was ignored on CPU (so every device-cpu run, the demo's, trained in fp32)."""
    if "bf16" not in config_dict:
        return config_dict
    bf16 = config_dict["bf16"] and config_dict.get("device") != "cpu"
    return {**{k: v for k, v in config_dict.items() if k != "bf16"}, "precision": "bf16" if bf16 else "fp32"}


def same_settings(state, cfg):
    """Whether a saved state was trained with cfg's settings: its fingerprint, or for a state from before
    `precision` (whose fingerprint hashed `bf16`) its settings read with the precision it trained in."""
    if state.get("fingerprint") == cfg.fingerprint():
        return True
    old = state.get("train_config", {})
    return "bf16" in old and result_settings(with_precision(old)) == cfg.settings()


def without_later_defaults(config_dict):
    """The settings, less those added later that still have their default (LATER_DEFAULTS)."""
    return {k: v for k, v in config_dict.items() if k not in LATER_DEFAULTS or v != LATER_DEFAULTS[k]}


def add_config_arguments(p, config_class):
    """One --flag per field of the config dataclass, typed by its default, with the help and
    choices of its setting()."""
    for f in dataclasses.fields(config_class):
        flag = "--" + f.name.replace("_", "-")
        help_text = f.metadata.get("help")
        if f.type is bool or f.type == "bool":
            p.add_argument(flag, type=str2bool, default=f.default,
                           metavar="BOOL", help=help_text + "; BOOL: true/false, 1/0 or yes/no")
        else:
            p.add_argument(flag, type=type(f.default), default=f.default, choices=f.metadata.get("choices"),
                           help=help_text)
    p.add_argument("--nodes", type=int, default=LAUNCH_DEFAULTS["nodes"],
                   help="nodes to train on (several: inside a SLURM job, via srun)")
    p.add_argument("--gpus", type=int, default=LAUNCH_DEFAULTS["gpus"],
                   help="processes per node: one per GPU (CPU workers with --device cpu); see lnrepro.core.launch")


def config_from_args(config_class, args, skip=()):
    return config_class(**{f.name: getattr(args, f.name) for f in dataclasses.fields(config_class) if f.name not in skip})


def config_args(cfg, skip=("threads",)):
    """The command-line flags that recreate cfg (for the worker processes of a launch)."""
    args = []
    for key, value in cfg.as_dict().items():
        if key not in skip:
            args += ["--" + key.replace("_", "-"), str(value)]
    return args


def dropout_seed(seed, epoch, rank=0):
    """Dropout stream of one round and worker: a resumed run replays it exactly."""
    return seed * 100003 + epoch * 1009 + rank


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def duration(seconds):
    """42s, 3m05s or 2h07m: short enough for a progress line."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    return f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m"


class RunClock:
    """The run's ETA: the updates left at this process's pace so far, which includes its validations
    and checkpoints (a resumed run counts from its restart, not from the updates it resumed after)."""

    def __init__(self, updates_done, total, clock=time.time):
        self.start, self.total, self.clock, self.t0 = updates_done, total, clock, clock()

    def eta(self, updates):
        done = updates - self.start
        return duration((self.clock() - self.t0) / done * (self.total - updates)) if done else "?"


# A job that asks for a GPU and gets a torch that cannot use one stops before it starts: training on
# the CPU instead would spend a GPU allocation (a 12-hour SLURM slot) on a run that never ends in time.
VISIBLE_GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS")
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one entry per GPU where NVIDIA's driver is loaded


def gpus_given(environ=None, nvidia=NVIDIA_GPUS):
    """What shows this process was given GPUs, or None: GPUs SLURM or the user made visible to it
    (SLURM sets CUDA_VISIBLE_DEVICES for a job's --gpus), or, outside SLURM, an NVIDIA GPU in this node."""
    environ = os.environ if environ is None else environ
    for key in VISIBLE_GPU_VARIABLES:
        value = environ.get(key, "").strip()
        if value and value not in ("-1", "NoDevFiles"):  # hidden GPUs; older SLURM's "none allocated"
            return f"{key}={value}"
    # in a SLURM job only its allocation counts: a CPU job on a GPU node sees the node's GPUs in /proc
    if "SLURM_JOB_ID" not in environ and nvidia.is_dir() and any(nvidia.iterdir()):
        return f"an NVIDIA GPU in {nvidia}"
    return None


def torch_build():
    """'torch 2.9.0+cpu (CPU-only build)', 'torch 2.9.0+cu128 (CUDA 12.8 build)'."""
    kind = (f"CUDA {torch.version.cuda} build" if torch.version.cuda
            else f"ROCm {torch.version.hip} build" if getattr(torch.version, "hip", None) else "CPU-only build")
    return f"torch {torch.__version__} ({kind})"


def no_cuda(asked):
    """The one message of a run that asked for CUDA where torch cannot use it: the node, the build, the fix."""
    # SLURM's name of the node (what sinfo and an admin know it by), else its hostname
    node, build = os.environ.get("SLURMD_NODENAME") or socket.gethostname(), torch_build()
    if torch.version.cuda or getattr(torch.version, "hip", None):  # a GPU build that sees no GPU
        return (f"{DEVICE_NOTE} {asked}, but on node {node} {build} sees no usable GPU "
                f"(torch.cuda.device_count() = {torch.cuda.device_count()}). Fix: check the node's GPU "
                f"driver (nvidia-smi) and that the job was given a GPU, or set the run's device: cpu")
    return (f"{DEVICE_NOTE} {asked}, but node {node} has {build}, which cannot use a GPU. Fix: install a CUDA "
            f"build of torch in the environment the job runs in, e.g. TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 "
            f"bash workflow/scripts/setup.sh (the CUDA version the node's driver supports), or set the run's device: cpu")


def pick_device(name):
    """The torch device of `--device`. cuda (or cuda:N) must be usable, and so must auto in a job
    given GPUs (gpus_given); auto elsewhere falls back to the CPU and says so on stderr, where a
    terminal (or lnrepro's Snakefile, which shows the line from the job's log) sees it."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        given = gpus_given()
        if given:
            raise SystemExit(no_cuda(f"auto in a job given GPUs ({given})"))
        print(f"{DEVICE_NOTE} auto: {torch_build()} cannot use a GPU here: running on the CPU",
              file=sys.stderr, flush=True)
        return torch.device("cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(no_cuda(f"{name} asked for"))
    return device


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


def atomic_save(obj, path):
    """obj in path, whole or not at all: written to path.PID.tmp, synced, renamed over path. A killed job
    or a full disk leaves the previous file (a failed write also removes its .tmp); a full disk stops
    the run with a message naming the file, not torch's "basic_ios::clear: iostream error"."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:  # a Python file, so a full disk raises OSError(ENOSPC)
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())  # a full disk may only show here (delayed allocation)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise SystemExit(f"disk full ({errno.errorcode[e.errno]}) while writing {path}: the checkpoints "
                             f"written before it are intact; free space and rerun, it resumes from "
                             f"{path.parent / 'last.pt'}") from e
        raise
    os.replace(tmp, path)


class Unreadable(Exception):
    """A file that exists but does not load: truncated, empty or garbage."""


def load_torch(path, **kwargs):
    """torch.load(path, weights_only=True), raising Unreadable naming the file for a truncated, empty
    or garbage one (torch's own errors name no file; for garbage it suggests weights_only=False,
    which is unsafe)."""
    try:
        return torch.load(path, weights_only=True, **kwargs)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as e:  # RuntimeError (zip), EOFError (empty), UnpicklingError/KeyError (garbage), OSError
        size = path.stat().st_size if path.exists() else 0
        raise Unreadable(f"{path}: unreadable, {size} bytes (truncated, empty or not written by torch.save: "
                         f"{type(e).__name__})") from e


def load_input(load, path):
    """load(path) of a data file an earlier step wrote; a truncated or corrupt one stops the command
    with its name and how to rebuild it."""
    try:
        return load(path)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as e:
        size = Path(path).stat().st_size
        raise SystemExit(f"{path}: unreadable, {size} bytes (truncated or corrupt: {type(e).__name__}); rebuild "
                         f"it: snakemake --force {path} (or delete it and rerun Snakemake)") from e


def load_checkpoint(path, device="cpu"):
    """An epoch checkpoint's state, weights only; a file that does not load, or whose content is not
    what its name and place say (check_checkpoint), stops the command naming it and the fix."""
    path = Path(path)
    try:
        state = load_torch(path, map_location=device)
    except Unreadable as e:
        raise SystemExit(f"{e}; {rebuild(path)}") from e
    check_checkpoint(path, state)
    return state


def rebuild(path):
    """How to get an epoch checkpoint back: only by retraining its run (the epochs before it are needed)."""
    if path.parent.name != "checkpoints":
        return "replace it"
    return f"retrain its run: rm -r {path.parent} && snakemake --force {path.parent.parent / 'metrics.csv'}"


def check_checkpoint(path, state):
    """An epoch checkpoint named epochN.pt must hold epoch N, and one in a run's checkpoints/ must be of
    that run's settings (the fingerprint of the run's last.pt): a copied or mixed-up file would
    otherwise give one epoch another's BLEU. Checkpoints written before they recorded these pass."""
    named = re.fullmatch(r"epoch(\d+)\.pt", path.name)
    if named and "epoch" in state and state["epoch"] != int(named.group(1)):
        raise SystemExit(f"{path}: holds epoch {state['epoch']}{of_run(state)}, not epoch {named.group(1)} as its "
                         f"name says (a copied or mixed-up checkpoint); {rebuild(path)}")
    last = path.parent / "last.pt"
    if not (named and state.get("fingerprint") and last.exists()):
        return
    try:
        run = load_torch(last, map_location="cpu", mmap=True)  # mapped: its tensors are not read
    except Unreadable:
        return  # the trainer moves it aside at its next start; nothing to compare with
    if run.get("fingerprint") not in (None, state["fingerprint"]):
        raise SystemExit(f"{path}: epoch {state['epoch']}{of_run(state)} with settings {state['fingerprint']}, but "
                         f"{last} is of settings {run['fingerprint']}{of_run(run)}: a checkpoint of another run "
                         f"(copied in?); {rebuild(path)}")


def of_run(state):
    return f" of run '{state['run']}'" if state.get("run") else ""


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


def data_files(data_dir):
    """The files of a binarized data dir that a task trains and validates on: its dictionaries (one joined
    or one per side: lnrepro.core.data), train.pt, valid.pt."""
    return [*dictionary_files(data_dir), data_dir / "train.pt", data_dir / "valid.pt"]


def file_digests(paths):
    """{file name: sha256} of the files a run trains and validates on. Read in chunks, so a
    multi-GB train.pt costs seconds at each run start, not its size in memory."""
    digests = {}
    for path in paths:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 24):
                h.update(chunk)
        digests[path.name] = h.hexdigest()
    return digests


def differing(saved, current):
    """The keys whose values differ between two dicts (a key missing on one side differs)."""
    return sorted(k for k in saved.keys() | current.keys() if saved.get(k) != current.get(k))


def differ(names):
    return f"{', '.join(names)} differ{'s' if len(names) == 1 else ''}"


def stale_reason(state, cfg, world, identity):
    """Why a saved state cannot continue this run, or None when it can. identity: this run's
    {"data": file digests, "model_config": the model's config}; None checks the rest only."""
    fmt = state.get("format", 1)
    if fmt != CHECKPOINT_FORMAT:
        return f"was written by an older version of lnrepro (checkpoint format {fmt}, now {CHECKPOINT_FORMAT})"
    if state.get("world", 1) != world:  # it sets the batch of every update
        return f"was trained by {state.get('world', 1)} process(es), this run has {world}"
    if not same_settings(state, cfg):
        keys = differing(result_settings(with_precision(state.get("train_config", {}))), cfg.settings())
        return f"was trained with other settings ({differ(keys) if keys else 'fingerprint differs'})"
    if identity is None:
        return None
    # data first: a new vocabulary also changes the model's shape, and the data is the cause
    for what, label in (("data", "on other data"), ("model_config", "for another model shape")):
        keys = differing(without_later_defaults(state.get(what) or {}), without_later_defaults(identity[what]))
        if keys:
            return f"was trained {label} ({differ(keys)})"
    return None


def resume_state(ckpt_dir, cfg, world=1, identity=None):
    """The last complete round's state, or None. Starting afresh empties ckpt_dir (the loop's own
    folder), so no epoch checkpoint of other settings or data is left for evaluation to read.
    identity: see stale_reason; fit's other processes pass None, after rank 0 has checked it."""
    last = ckpt_dir / "last.pt"
    if not last.exists():
        clear(ckpt_dir)  # epoch checkpoints without their last.pt: of an unknown run
        return None
    try:
        state = load_torch(last, map_location="cpu")
    except Unreadable as e:  # moved aside, never deleted: the user may want it
        aside = last.with_name(f"last.pt.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(last, aside)
        log(f"{e}; moved aside to {aside.name}; starting afresh (its epoch checkpoints cannot resume a run: "
            f"they hold no optimizer state)")
        clear(ckpt_dir)
        return None
    reason = stale_reason(state, cfg, world, identity)
    if reason:
        log(f"{last} {reason}; starting afresh")
        clear(ckpt_dir)
        return None
    log(f"resuming after epoch {state['epoch']} ({state['updates']} updates)")
    return state


def clear(ckpt_dir):
    """Empty the run's checkpoint folder, but for the files moved aside as corrupt (last.pt.corrupt-*)."""
    for path in ckpt_dir.iterdir():
        if ".corrupt-" not in path.name:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


class ParentWatch:
    """Whether the process that started this run has died (Snakemake killed with -9, a job step gone):
    an orphan trainer would run on to its end while a rerun waits on the lock or races it. A dead
    parent shows as a changed os.getppid() (the orphan is re-parented), whatever thread or shell
    started it; the workers of a local torchrun launch also watch the process that ran `lnrepro
    train` (LAUNCHER_PID, set by core.launch), since their own parent, torchrun, lives on."""

    def __init__(self):
        self.parent = os.getppid()
        self.launcher = int(os.environ.get(LAUNCHER_PID, 0))

    def gone(self):
        """Why this run should stop, or None: one getppid() call (and a /proc read for a launcher)."""
        if os.getppid() != self.parent:
            return f"its parent process {self.parent} died"
        if self.launcher and not alive(self.launcher):
            return f"the process that launched it ({self.launcher}) died"
        return None


LAUNCHER_PID = "LNREPRO_LAUNCHER_PID"


def alive(pid):
    """Whether pid runs (a zombie, killed but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


class Distributed:
    """torchrun's environment: one process per GPU (or CPU worker with gloo); rank 0 writes."""

    def __init__(self, device_name):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.device = pick_device(device_name)
        if self.world > 1:
            if self.device.type == "cuda":
                self.device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
                torch.cuda.set_device(self.device)
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")

    def wrap(self, model):
        if self.world == 1:
            return model
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=[self.device] if self.device.type == "cuda" else None)

    def total(self, value):
        """Sum of a local tensor over all workers."""
        if self.world > 1:
            value = value.clone()
            dist.all_reduce(value)
        return value

    def barrier(self):
        if self.world > 1:
            dist.barrier()

    def close(self):
        if self.world > 1:
            dist.destroy_process_group()


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


def resumes(ckpt_dir):
    return ("resumes from " + str(ckpt_dir / "last.pt")) if (ckpt_dir / "last.pt").exists() else "starts afresh"


def scale_text(mixed):
    return f"loss scale {mixed.scaler.loss_scale:g} | " if mixed.scaler else ""


def save_round(model, optimizer, mixed, cfg, rows, epoch, updates, ckpt_dir, world, data):
    """Weights of this round (for evaluation) and the full resumable state (with fp16's loss scaler) and
    what it was trained on (data: file_digests of the task's files), each written atomically."""
    model_cfg = dataclasses.asdict(model.cfg)
    # what it is, beside its name, so evaluation can tell a copied or renamed file (check_checkpoint)
    run = {"epoch": epoch, "updates": updates, "run": ckpt_dir.parent.name, "fingerprint": cfg.fingerprint()}
    atomic_save({"model": model.state_dict(), "model_config": model_cfg, **run}, ckpt_dir / f"epoch{epoch}.pt")
    atomic_save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "loss_scaler": mixed.state_dict(),
                 "model_config": model_cfg,
                 "train_config": cfg.as_dict(), "fingerprint": cfg.fingerprint(), "epoch": epoch,
                 "updates": updates, "seed": cfg.seed, "metrics": rows, "version": __version__, "world": world,
                 "data": data, "format": CHECKPOINT_FORMAT, "run": run["run"]},
                ckpt_dir / "last.pt")


def tensorboard_writer(cfg, out_dir):
    if not cfg.tensorboard:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        raise SystemExit(f"tensorboard: true (--tensorboard) needs the tensorboard package: pip install -e '.[tensorboard]' "
                         f"(or pip install tensorboard), or set tensorboard: false ({e})")
    return SummaryWriter(out_dir / "tensorboard")
