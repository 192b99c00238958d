"""Translation training: a run's settings, its task for the loop, and loading its checkpoints.

One run trains on token batches with label smoothing, with per-epoch checkpoints and metrics.
The loop itself (optimizer, schedule, DDP, divergence, checkpoints, resume) is lnrepro.core.loop's,
shared with BERT pre-training; this module is what makes it translation: the encoder-decoder
model, fairseq's token batches of sentence pairs and the label-smoothed loss.
"""
import math
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from .admin import load_omegas
from .batching import collate, epoch_order, make_batches
from .data import PAD, Dictionary, ParallelData
from .loop import LN2, LoopConfig, add_config_arguments, data_files, file_digests, fit, setting
from .model import INITS, NORMS, ModelConfig, Transformer, label_smoothed_loss


@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    # model (Xiong et al. §5; fairseq transformer_iwslt_de_en by default)
    enc_layers: int = setting(6, "encoder layers")
    dec_layers: int = setting(6, "decoder layers")
    d_model: int = setting(512, "model width d (embeddings, residual stream)")
    ffn_dim: int = setting(1024, "inner width of the feed-forward sublayers")
    heads: int = setting(4, "attention heads")
    dropout: float = setting(0.3, "dropout on embeddings and sublayer outputs")
    attn_dropout: float = setting(0.0, "dropout on attention weights")
    act_dropout: float = setting(0.0, "dropout after the FFN activation")
    enc_norm: str = setting("post", "encoder residual sublayers: Post-LN, Pre-LN (Xiong et al. Table 1), Admin "
                            "(Liu et al. 4.3) or FixUp (no LayerNorm; Liu et al. 5.2; both sides)", NORMS)
    dec_norm: str = setting("post", "decoder residual sublayers, as --enc-norm", NORMS)
    init: str = setting("standard", "weight init: standard (fairseq's) or looklinear (mirrored ReLU FFN halves, "
                        "Balduzzi et al. 2017; Liu et al. 5.2 run it with Post-LN)", INITS)
    share_all_embeddings: bool = setting(False, "one embedding for encoder, decoder and output projection")
    admin_omega: str = setting("", "omega.json from `lnrepro admin-profile` (norm admin only); empty = none")
    # objective and length
    label_smoothing: float = setting(0.1, "label smoothing of the cross-entropy loss")
    epochs: int = setting(50, "epochs to train (one round = one epoch)")

    def model_config(self, vocab_size):
        names = {f.name for f in fields(ModelConfig)}
        return ModelConfig(vocab_size=vocab_size, **{k: v for k, v in self.as_dict().items() if k in names})


def add_train_arguments(p):
    """A run's flags: its data, its run dir and every TrainConfig setting (`train`, `admin-profile`)."""
    p.add_argument("--data", required=True, help="binarized data dir (dict.txt, train.pt, valid.pt)")
    p.add_argument("--out", required=True, help="run dir: metrics.csv and checkpoints/")
    add_config_arguments(p, TrainConfig)


class TranslationTask:
    """Sentence pairs in fairseq's token batches; a round is one epoch."""
    valid_columns = ("valid_loss", "valid_nll")

    def __init__(self, cfg: TrainConfig, data_dir: Path):
        self.cfg = cfg
        self.files = data_files(data_dir)
        dict_file, train_file, valid_file = self.files
        self.vocab_size = len(Dictionary.load(dict_file))
        self.train_data = ParallelData.load(train_file)
        self.valid_data = ParallelData.load(valid_file)
        self.batches = make_batches(self.train_data, cfg.max_tokens, cfg.seed)
        self.valid_batches = make_batches(self.valid_data, cfg.max_tokens, cfg.seed)
        self.rounds = cfg.epochs

    def data_identity(self):
        """What a checkpoint must have been trained on to be resumed: the data and Admin's omegas."""
        return file_digests(self.files + ([Path(self.cfg.admin_omega)] if self.uses_omega() else []))

    def uses_omega(self):
        return "admin" in (self.cfg.enc_norm, self.cfg.dec_norm)

    def build_model(self):
        model = Transformer(self.cfg.model_config(self.vocab_size))
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
        return {"valid_loss": loss / ntok / LN2, "valid_nll": nll / ntok / LN2}


def train(cfg: TrainConfig, data_dir: Path, out_dir: Path):
    return fit(cfg, TranslationTask(cfg, data_dir), out_dir)


def load_model(path, device="cpu"):
    """A Transformer from an epoch checkpoint (weights only, safe to load)."""
    state = torch.load(path, weights_only=True, map_location=device)
    model = Transformer(ModelConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    return model.to(device).eval()
