"""Translation training: a run's settings, its task for the loop, and loading its checkpoints.

One run trains on token batches with label smoothing, with per-epoch checkpoints and metrics.
The loop itself (optimizer, schedule, DDP, divergence, checkpoints, resume) is lnrepro.core.loop's,
shared with BERT pre-training; this module is what makes it translation: the encoder-decoder
model, fairseq's token batches of sentence pairs and the label-smoothed loss.
"""
import math
from dataclasses import dataclass, fields
from pathlib import Path

from .admin import load_omegas
from .batching import collate, epoch_order, make_batches, pair_lengths, too_long
from .checkpoint import data_files, file_digests, load_checkpoint, load_input
from .config import LoopConfig, add_config_arguments, setting
from .data import PAD, ParallelData, vocab_sizes
from .loop import LN2, fit
from .progress import log
from ..settings import INITS, MODEL_NORMS, NORM_FNS, TRAIN_DEFAULTS
from .model import ModelConfig, Transformer, label_smoothed_loss

MAX_POSITIONS = ModelConfig.max_positions  # the longest sentence the model's positional embeddings take


@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    # model (Xiong et al. §5; fairseq transformer_iwslt_de_en by default)
    enc_layers: int = setting(TRAIN_DEFAULTS["enc_layers"], "encoder layers")
    dec_layers: int = setting(TRAIN_DEFAULTS["dec_layers"], "decoder layers")
    d_model: int = setting(TRAIN_DEFAULTS["d_model"], "model width d (embeddings, residual stream)")
    ffn_dim: int = setting(TRAIN_DEFAULTS["ffn_dim"], "inner width of the feed-forward sublayers")
    heads: int = setting(TRAIN_DEFAULTS["heads"], "attention heads")
    dropout: float = setting(TRAIN_DEFAULTS["dropout"], "dropout on embeddings and sublayer outputs")
    attn_dropout: float = setting(TRAIN_DEFAULTS["attn_dropout"], "dropout on attention weights")
    act_dropout: float = setting(TRAIN_DEFAULTS["act_dropout"], "dropout after the FFN activation")
    enc_norm: str = setting(TRAIN_DEFAULTS["enc_norm"], "encoder residual sublayers: Post-LN, Pre-LN (Xiong et al. "
                            "Table 1), Admin (Liu et al. 4.3), FixUp (no LayerNorm; Liu et al. 5.2; both sides), or a "
                            "later scheme: DeepNorm, Sandwich-/Peri-LN, T-Fixup, ResiDual (lnrepro.core.norms)",
                            MODEL_NORMS)
    dec_norm: str = setting(TRAIN_DEFAULTS["dec_norm"], "decoder residual sublayers, as --enc-norm", MODEL_NORMS)
    norm_fn: str = setting(TRAIN_DEFAULTS["norm_fn"], "every normalization layer's function: LayerNorm, RMSNorm "
                           "(Zhang & Sennrich 2019) or DyT (Zhu et al. 2025), whatever the placement", NORM_FNS)
    init: str = setting(TRAIN_DEFAULTS["init"], "weight init: standard (fairseq's) or looklinear (mirrored ReLU FFN "
                        "halves, Balduzzi et al. 2017; Liu et al. 5.2 run it with Post-LN)", INITS)
    share_all_embeddings: bool = setting(TRAIN_DEFAULTS["share_all_embeddings"],
                                         "one embedding for encoder, decoder and output projection")
    admin_omega: str = setting(TRAIN_DEFAULTS["admin_omega"], "omega.json from `lnrepro admin-profile` (norm admin only); empty = none")
    # objective and length
    label_smoothing: float = setting(TRAIN_DEFAULTS["label_smoothing"], "label smoothing of the cross-entropy loss")
    epochs: int = setting(TRAIN_DEFAULTS["epochs"], "epochs to train (one round = one epoch)")

    def model_summary(self):
        norm_fn = f" ({self.norm_fn})" if self.norm_fn != TRAIN_DEFAULTS["norm_fn"] else ""  # the papers' runs: as they were
        return [f"settings: norm enc/dec {self.enc_norm}/{self.dec_norm}{norm_fn}, layers enc/dec {self.enc_layers}/"
                f"{self.dec_layers}, d_model {self.d_model}, ffn "
                f"{self.ffn_dim}, heads {self.heads}, share_all_embeddings {self.share_all_embeddings}, init {self.init}",
                f"settings: dropout {self.dropout:g}, attention dropout {self.attn_dropout:g}, activation dropout "
                f"{self.act_dropout:g} | label smoothing {self.label_smoothing:g} | epochs {self.epochs}"]

    def model_config(self, vocab_size, tgt_vocab_size=0):
        """The model's; tgt_vocab_size: the target dictionary's where the two sides have their own."""
        names = {f.name for f in fields(ModelConfig)}
        return ModelConfig(vocab_size=vocab_size, tgt_vocab_size=tgt_vocab_size,
                           **{k: v for k, v in self.as_dict().items() if k in names})


def add_train_arguments(p):
    """A run's flags: its data, its run dir and every TrainConfig setting (`train`, `admin-profile`)."""
    p.add_argument("--data", required=True, help="binarized data dir (its dictionaries, train.pt, valid.pt)")
    p.add_argument("--out", required=True, help="run dir: metrics.csv and checkpoints/")
    add_config_arguments(p, TrainConfig)


class TranslationTask:
    """Sentence pairs in fairseq's token batches; a round is one epoch."""
    # valid_pairs: the pairs validated; valid_skipped, train_skipped: the pairs left out (count_pairs)
    valid_columns = ("valid_loss", "valid_nll", "valid_pairs", "valid_skipped", "train_skipped")
    valid_nll_column = "valid_nll"

    def __init__(self, cfg: TrainConfig, data_dir: Path):
        self.cfg = cfg
        self.files = data_files(data_dir)
        *_, train_file, valid_file = self.files
        # vocab_sizes: the model's; vocab_size: the target's, which the loss is over (divergence's bound)
        self.vocab_sizes = load_input(vocab_sizes, data_dir)
        self.vocab_size = self.vocab_sizes[1] or self.vocab_sizes[0]
        self.train_data = load_input(ParallelData.load, train_file)
        self.valid_data = load_input(ParallelData.load, valid_file)
        self.batches = make_batches(self.train_data, cfg.max_tokens, cfg.seed, MAX_POSITIONS)
        # a validation pair longer than max_tokens is a batch of its own: the valid set is the same whatever
        # a run's max_tokens, so runs with different ones are scored alike (core.batching.make_batches)
        self.valid_batches = make_batches(self.valid_data, cfg.max_tokens, cfg.seed, MAX_POSITIONS,
                                          alone_if_longer=True)
        self.pair_counts = count_pairs(self.train_data, self.valid_data, train_file, valid_file, cfg.max_tokens)
        self.rounds = cfg.epochs

    def data_identity(self):
        """What a checkpoint must have been trained on to be resumed: the data and Admin's omegas."""
        return file_digests(self.files + ([Path(self.cfg.admin_omega)] if self.uses_omega() else []))

    def uses_omega(self):
        return "admin" in (self.cfg.enc_norm, self.cfg.dec_norm)

    def build_model(self):
        model = Transformer(self.cfg.model_config(*self.vocab_sizes))
        if self.uses_omega():
            if not self.cfg.admin_omega:
                raise SystemExit("norm 'admin' needs --admin-omega (the output of `lnrepro admin-profile`)")
            load_omegas(model, self.cfg.admin_omega)
        return model

    def updates_per_round(self, per_update):
        return math.ceil(len(self.batches) / per_update)

    def round_batches(self, epoch, per_update):
        return epoch_order(self.batches, self.cfg.seed, epoch)

    def tokens(self, batch):
        return int(self.train_data.tgt_lengths[batch].sum())

    def loss(self, model, batch, device):
        src, prev, tgt = (t.to(device, non_blocking=True) for t in collate(self.train_data, batch))
        return label_smoothed_loss(model(src, prev), tgt, self.cfg.label_smoothing)

    def validate(self, model, device, autocast):
        """Label-smoothed loss and nll in bits per target token, as fairseq logs them."""
        loss = nll = ntok = 0.0
        for idx in self.valid_batches:
            src, prev, tgt = (t.to(device) for t in collate(self.valid_data, idx))
            with autocast():
                logits = model(src, prev)
            l, n = label_smoothed_loss(logits, tgt, self.cfg.label_smoothing)
            loss, nll, ntok = loss + l.item(), nll + n.item(), ntok + int((tgt != PAD).sum())
        return {"valid_loss": loss / ntok / LN2, "valid_nll": nll / ntok / LN2, **self.pair_counts}


def count_pairs(train_data, valid_data, train_file, valid_file, max_tokens):
    """{valid_pairs, valid_skipped, train_skipped}: the pairs a run validates on and those it leaves out
    (longer than the model's positions; in training also than max_tokens), each said on stderr. Refuses
    (SystemExit naming the file and the fix) a run left without a validation or training pair: it would
    train a whole epoch and then fail on an empty sum."""
    if len(valid_data) == 0:
        raise SystemExit(f"{valid_file}: no validation pairs, so no epoch could be validated. Its corpus has "
                         f"fewer cleaned pairs than its valid_every (config: corpora.CORPUS.valid_every) or an "
                         f"empty valid set of its own (files.valid, valid_set): lower valid_every or give the "
                         f"corpus a valid set, then rebuild {valid_file}")
    valid_out = too_long(valid_data, MAX_POSITIONS)
    alone = len(too_long(valid_data, min(max_tokens, MAX_POSITIONS))) - len(valid_out)
    if len(valid_out):
        log(f"WARNING: {valid_file}: {len(valid_out)} of {len(valid_data)} validation pairs are longer than the "
            f"model's {MAX_POSITIONS} positions and are not validated (lines {first_few(valid_out)}); "
            f"the valid loss is that of the other {len(valid_data) - len(valid_out)}")
    if len(valid_out) == len(valid_data):
        raise SystemExit(f"{valid_file}: all its {len(valid_data)} validation pairs are longer than the model's "
                         f"{MAX_POSITIONS} positions: clean the corpus with a lower clean.max (config: "
                         f"corpora.CORPUS.clean.max) and rebuild {valid_file}")
    if alone:
        log(f"{valid_file}: {alone} validation pair(s) longer than max_tokens {max_tokens}, each validated in a "
            f"batch of its own")
    train_out = too_long(train_data, min(max_tokens, MAX_POSITIONS))
    if len(train_out):
        longest = int(pair_lengths(train_data).max())
        log(f"WARNING: {train_file}: {len(train_out)} of {len(train_data)} training pairs are longer than max_tokens "
            f"{max_tokens} (or the model's {MAX_POSITIONS} positions) and are left out of training (lines "
            f"{first_few(train_out)}; the longest has {longest} tokens); to train on them raise max_tokens "
            f"(config: train_defaults.max_tokens or runs.RUN.max_tokens) to {min(longest, MAX_POSITIONS)}")
    if len(train_out) == len(train_data):
        raise SystemExit(f"{train_file}: none of its {len(train_data)} training pairs fits max_tokens {max_tokens}: "
                         f"raise max_tokens (config: train_defaults.max_tokens or runs.RUN.max_tokens)")
    return {"valid_pairs": len(valid_data) - len(valid_out), "valid_skipped": len(valid_out),
            "train_skipped": len(train_out)}


def first_few(indices, n=10):
    """'3, 17, 40' or '3, 17, ... (25 in all)': 1-based pair numbers (the lines of the split's text)."""
    shown = ", ".join(str(int(i) + 1) for i in indices[:n])
    return shown + (f", ... ({len(indices)} in all)" if len(indices) > n else "")


def train(cfg: TrainConfig, data_dir: Path, out_dir: Path):
    return fit(cfg, TranslationTask(cfg, data_dir), out_dir)


def load_model(path, device="cpu"):
    """A Transformer from an epoch checkpoint (weights only, safe to load; see checkpoint.load_checkpoint)."""
    state = load_checkpoint(path, device)
    model = Transformer(ModelConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    return model.to(device).eval()
