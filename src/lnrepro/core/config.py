"""The settings every trainer shares: LoopConfig (the tasks' configs extend it), one command-line flag
per field and back (a launch's workers get the flags that recreate it), and which settings decide a
result. A run's fingerprint hashes only those, so a checkpoint still resumes across a setting that
changes nothing, or one added later at its default."""
import dataclasses
import hashlib
import json
from dataclasses import dataclass, field

from ..args import str2bool
from ..settings import LAUNCH_DEFAULTS, LOOP_DEFAULTS
from .precision import FP16_SETTINGS, PRECISIONS
from .schedule import SCHEDULES

OPTIMIZERS = ("adam", "sgd", "radam")
# whose Adam/RAdam update equations: torch.optim's, or those of the papers' code (core.fairseq_optim)
OPTIMIZER_IMPLS = ("torch", "fairseq")
# settings that do not change the result: a run resumes across them
UNFINGERPRINTED = ("log_interval", "threads", "compile", "tensorboard")
# settings added after checkpoints were written (the training cap, the init, the optimizer's
# implementation, the divergence checks' interval, the model's norm_fn): left out at their default, so those checkpoints
# (their fingerprint, their model_config) still resume
LATER_DEFAULTS = {"max_rounds": 0, "max_round_updates": 0, "init": "standard", "optimizer_impl": "torch",
                  "divergence_interval": 100, "norm_fn": "layernorm"}


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
