"""A run's settings, decided once: the trainers' defaults, the norm pairs the model builds, what each
stage reads from a run and how a run's settings become a command's flags.

Torch-free (it imports the standard library only): the workflow imports it when Snakemake parses
the rule files, and the trainers (lnrepro.core.config, lnrepro.core.translation,
lnrepro.training.pretrain), the model (lnrepro.core.model) and the analyses that fall back on a
trainer's default (figure legends, probes, the cost plan) read it, so a default or refusal is
stated here once. tests/test_settings.py checks what it says against the code that uses it.
"""
import shlex

# ---- norms and inits the translation model builds (lnrepro.core.model) ----
NORMS = ("post", "pre", "admin", "fixup")  # the papers' (NORM_PAIRS: their hybrids; Liu et al.'s tables)
# further placements the model builds (issue 45; lnrepro.core.norms): DeepNorm, Sandwich-/Peri-LN, T-Fixup,
# ResiDual. A run's norm, enc_norm and dec_norm take MODEL_NORMS (the config schema's enums)
VARIANT_NORMS = ("deepnorm", "sandwich", "tfixup", "resi_dual")
# Liu et al. Fig 2's schemes (lnrepro output-change's default; the lab's figure adds VARIANT_NORMS to them)
OUTPUT_CHANGE_NORMS = ("post", "pre", "admin")
# a sweep axis with a safe side: a threshold figure's edge lies on the other (lnrepro sweep-thresholds)
SAFER_SIDE = {"warmup": "larger", "lr": "smaller"}
MODEL_NORMS = NORMS + VARIANT_NORMS
NORM_FREE_NORMS = ("fixup", "tfixup")  # no normalization layer at all
# the normalization function of every norm layer, whatever the placement (ModelConfig.norm_fn)
NORM_FNS = ("layernorm", "rmsnorm", "dyt")
INITS = ("standard", "looklinear")  # looklinear: Balduzzi et al. 2017 §5, for the ReLU FFN
# LookLinear mirrors the FFN's ReLU halves through LayerNorm's residuals: not with these norms (DeepNorm and
# T-Fixup are initializations of their own too)
LOOKLINEAR_REFUSED_NORMS = ("fixup", "admin", "deepnorm", "tfixup")


def norm_pair_refusal(enc_norm, dec_norm):
    """Why the model refuses enc_norm/dec_norm, or None where it builds: 'admin' (Admin re-weights
    Post-LN residuals, so only beside Admin or Post-LN; Admin on one side with Post-LN on the other
    builds, and admin-profile then writes omegas for that side only) or 'fixup' (FixUp scales by the
    whole network's branch count: both sides or neither). The variants (VARIANT_NORMS) are per side."""
    pair = (enc_norm, dec_norm)
    if "admin" in pair and "pre" in pair:
        return "admin"
    if "fixup" in pair and enc_norm != dec_norm:
        return "fixup"
    if "admin" in pair and not set(pair) <= {"admin", "post"}:  # a variant beside Admin (NORMS: caught above)
        return "admin"
    return None


def norm_fn_refusal(enc_norm, dec_norm, norm_fn):
    """Why the model refuses norm_fn with these sides (a sentence), or None where it builds."""
    if norm_fn == "layernorm":
        return None
    if "admin" in (enc_norm, dec_norm):
        return (f"norm_fn={norm_fn!r} with Admin: Admin is Liu et al.'s LayerNorm re-weighting (its "
                "reparameterization as Post-LN folds into LayerNorm's bias); use norm_fn 'layernorm'")
    if {enc_norm, dec_norm} <= set(NORM_FREE_NORMS):
        return f"norm_fn={norm_fn!r} with enc_norm={enc_norm!r}, dec_norm={dec_norm!r}: no normalization layer to replace"
    return None


NORM_PAIRS = tuple((e, d) for e in NORMS for d in NORMS if norm_pair_refusal(e, d) is None)
# the pairs with a variant on at least one side (not in the workflow's NORM_PAIRS)
VARIANT_NORM_PAIRS = tuple((e, d) for e in MODEL_NORMS for d in MODEL_NORMS
                           if (e, d) not in NORM_PAIRS and norm_pair_refusal(e, d) is None)

# ---- the trainers' defaults: every setting's, here only (their config classes read them) ----
# what every trainer shares (lnrepro.core.config.LoopConfig)
LOOP_DEFAULTS = {
    # optimizer (fairseq's Adam betas (0.9, 0.98) of Xiong et al.'s IWSLT recipe)
    "optimizer": "adam", "lr": 5e-4, "adam_beta1": 0.9, "adam_beta2": 0.98, "adam_eps": 1e-8,
    "optimizer_impl": "torch", "momentum": 0.0, "weight_decay": 0.0, "clip_norm": 0.0,
    # learning-rate schedule
    "schedule": "inverse_sqrt", "warmup": 4000, "warmup_init_lr": 0.0, "decay_epoch": 0, "decay_factor": 0.1,
    "end_lr": 0.0,
    # batches, seed, divergence
    "max_tokens": 4096, "update_freq": 1, "seed": 1, "divergence_factor": 3.0, "divergence_interval": 100,
    # system and precision (fp16: fairseq's dynamic loss scaling)
    "device": "auto", "precision": "fp32", "fp16_init_scale": 2 ** 7, "fp16_scale_window": 0,
    "fp16_scale_tolerance": 0.0, "threshold_loss_scale": 0.0, "min_loss_scale": 1e-4, "compile": False,
    "threads": 0, "log_interval": 10.0, "tensorboard": False,
    # the config's training_cap (a smoke test, never a result): 0 = no cap
    "max_rounds": 0, "max_round_updates": 0,
}
# translation (lnrepro.core.translation.TrainConfig; fairseq's transformer_iwslt_de_en)
TRAIN_DEFAULTS = {**LOOP_DEFAULTS, "enc_layers": 6, "dec_layers": 6, "d_model": 512, "ffn_dim": 1024, "heads": 4,
                  "dropout": 0.3, "attn_dropout": 0.0, "act_dropout": 0.0, "share_all_embeddings": False,
                  "enc_norm": "post", "dec_norm": "post", "init": "standard", "label_smoothing": 0.1,
                  "admin_omega": "", "epochs": 50, "norm_fn": "layernorm"}
# BERT pre-training (lnrepro.training.pretrain.PretrainConfig; BERT-base)
PRETRAIN_DEFAULTS = {**LOOP_DEFAULTS, "layers": 12, "d_model": 768, "ffn_dim": 3072, "heads": 12, "norm": "post",
                     "dropout": 0.1, "attn_dropout": 0.1, "init_std": 0.02, "ln_eps": 1e-5, "block_size": 512,
                     "short_block_size": 0, "short_fraction": 0.0, "short_max_tokens": 0, "mask_prob": 0.15,
                     "nsp": True, "max_updates": 1_000_000, "valid_interval": 50_000, "valid_max_sequences": 0}
# the defaults a translation run's value falls back to in the workflow (run_value: its checks and the
# params of the Admin tables and figures); a key not here stays unset (None) there, so adding one
# changes those jobs' params
RUN_VALUE_KEYS = ("enc_norm", "dec_norm", "lr", "adam_beta2", "seed", "init", "ffn_dim")
RUN_VALUE_DEFAULTS = {k: TRAIN_DEFAULTS[k] for k in RUN_VALUE_KEYS}
# the schedules of lnrepro.core.schedule that step the lr down at decay_epoch
STEP_SCHEDULES = ("step", "step_inverse_sqrt")
# Admin's profiling method (lnrepro.core.admin, also in omega.json): a param of every job that
# profiles omega, so a new method reruns them (Snakemake's params trigger) and their trainings after
ADMIN_PROFILE_METHOD = "clinic-running"

# corpus cleaning where a corpus's `clean` sets no value (lnrepro.prepare.clean: clean-corpus-n.perl's
# min and max words per side, and its length ratio)
CLEAN_DEFAULTS = {"min": 1, "max": 175, "ratio": 1.5}
# decoding where neither a corpus's nor a run's `decode` sets a value (lnrepro evaluate's defaults:
# fairseq-generate's beam 5, lenpen 1, max_len_b 200, min_len 1)
DECODE_DEFAULTS = {"split": "test", "beam": 5, "lenpen": 1.0, "max_len_a": 0, "max_len_b": 200, "min_len": 1,
                   "batch_sentences": 128}
# a claim's scale entry (config `claims:`): these words describe the scale; its other keys change
# what the claim measures (lnrepro.analyses.claims)
CLAIM_SCALE_WORDS = ("scaled", "seed_spread", "note", "not_at_this_scale")

# ---- what each stage reads from a run ----
LAUNCH_KEYS = ("nodes", "gpus")  # how many processes train a run: training only, not Admin profiling
LAUNCH_DEFAULTS = {"nodes": 1, "gpus": 1}  # one process (lnrepro.core.config's --nodes, --gpus)
# what a training logs besides its log, not what it computes: kept out of a run's settings (so out of
# the figures' and other rules' params) and passed by the training rules only when true (log_flags),
# so a config that leaves them out (or false) trains with the commands it had before they were keys
LOG_KEYS = ("tensorboard",)
# resolved by the workflow (or by evaluation), not passed to the trainer
RUN_ONLY_KEYS = ("corpus", "model", "norm", "description", "update_tokens", "decode", "joined_dictionary")
# a translation run's dictionaries (lnrepro.core.data, lnrepro.prepare.binarize): one joined (dict.txt,
# fairseq-preprocess --joined-dictionary) where a run sets no joined_dictionary, as every run trained
# before the key existed; false: one per side (Xiong et al.'s IWSLT runs, fairseq's IWSLT14 example)
JOINED_DICTIONARY_DEFAULT = True
JOINED_DICT = "dict.txt"
SEPARATE_DICTS = ("dict.src.txt", "dict.tgt.txt")
BERT_RUN_ONLY_KEYS = ("corpus", "model", "description")


def finetune_summary_key(run, task, round_):
    """How Fig 5's rule and `lnrepro figure5 --summaries` name a fine-tuning summary: RUN:TASK:ROUND."""
    return f"{run}:{task}:{round_}"


# a probe at initialization (probe-gradients) takes the probed run's width and batches
PROBE_KEYS = ("d_model", "ffn_dim", "heads", "dropout", "attn_dropout", "act_dropout", "share_all_embeddings",
              "max_tokens", "label_smoothing", "device")
WARMUP_PROBE_KEYS = ("max_tokens", "label_smoothing", "device")  # a checkpoint's probe: its run's batches
ADMIN_PROBE_KEYS = tuple(k for k in PROBE_KEYS if k != "device")  # Admin's probes: width and batches
MODEL_KEYS = ("enc_layers", "dec_layers", "d_model", "ffn_dim", "heads", "dropout", "attn_dropout",
              "act_dropout", "share_all_embeddings")
DEPENDENCY_KEYS = MODEL_KEYS + ("enc_norm", "dec_norm", "norm_fn", "init", "seed", "max_tokens")  # what rebuilds a run's init
UPDATE_NORM_KEYS = ("optimizer", "max_tokens", "seed", "label_smoothing")  # what update-norms needs of a run
# what the cost plan (lnrepro plan) reads of a translation or BERT run: its size, batches, length, precision,
# device (a GPU's or the CPU's time)
PLAN_KEYS = ("corpus", "d_model", "ffn_dim", "enc_layers", "dec_layers", "layers", "enc_norm", "dec_norm", "norm", "norm_fn",
             "share_all_embeddings", "max_tokens", "update_freq", "gpus", "nodes", "epochs", "max_updates",
             "optimizer", "momentum", "block_size", "nsp", "short_block_size", "short_fraction",
             "short_max_tokens", "valid_interval", "precision", "device")


def lr_text(lr):
    """'1.4e-3', '1e-3', '5e-4': the learning rate as trained, every significant digit of it ('{:.0e}'
    wrote 1.4e-3 as '1e-3' and 1.5e-3 as '2e-3', a legend that disagreed with the run)."""
    if not lr:
        return "0"
    mantissa, exponent = f"{lr:.6e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


# ---- a run's settings -> a command's flags ----
def merged_run_settings(config, run):
    """A translation run's settings: train_defaults <- models[model] <- the run's own keys, its log keys
    left out; `norm` sets both sides, and the run's own norm wins over inherited sides."""
    own = config["runs"][run]
    merged = {k: v for k, v in {**config["train_defaults"], **own}.items() if k not in LOG_KEYS}
    settings = {**config["models"][merged["model"]], **merged}
    if "norm" in settings:
        settings.setdefault("enc_norm", settings["norm"])
        settings.setdefault("dec_norm", settings["norm"])
        if "norm" in own:
            settings["enc_norm"] = settings["dec_norm"] = own["norm"]
    return settings


def cli_flags(settings):
    """{'warmup_init_lr': 0} -> '--warmup-init-lr 0' (shell-quoted), keys sorted."""
    return " ".join(f"--{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in sorted(settings.items()))


def picked_flags(settings, keys):
    """The flags of those of keys the settings set."""
    return cli_flags({k: settings[k] for k in keys if k in settings})


def trainer_flags(settings, run_only=RUN_ONLY_KEYS):
    """What a trainer (train, admin-profile, pretrain) takes of a run: every setting but those the
    workflow resolves and the launch layout."""
    return cli_flags({k: v for k, v in settings.items() if k not in run_only + LAUNCH_KEYS})


def launch_flags(settings):
    """'--gpus 4 --nodes 2' where a run sets more than one process; '' for one (the default)."""
    return cli_flags({k: v for k, v in settings.items() if k in LAUNCH_KEYS and v != LAUNCH_DEFAULTS[k]})


def launched_trainer_flags(settings, run_only=RUN_ONLY_KEYS):
    """A training's flags: the trainer's, then the launch layout (the process count changes every
    update's batch)."""
    flags, layout = trainer_flags(settings, run_only), launch_flags(settings)
    return f"{flags} {layout}" if layout else flags
