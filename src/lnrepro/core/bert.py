"""BERT (Devlin et al. 2018) with Post-LN or Pre-LN layers: the encoder of Xiong et al.'s Fig 5.

The layers are model.py's EncoderLayer, so Post-LN and Pre-LN differ exactly as in the
translation model (Pre-LN adds the final LayerNorm). What is BERT's own: learned positions,
segment embeddings, LayerNorm on the embeddings, GELU, N(0, 0.02) initialization, the masked-LM
head tied to the token embedding, and optional next-sentence / classification heads on [CLS].
[CLS] and [SEP] are the dictionary's <s> and </s>; [MASK] is the symbol ``<mask>`` (core.mono_data.MASK).
"""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .checkpoint import load_checkpoint
from .data import BOS, EOS, PAD
from .layers import dropout
from .model import EncoderLayer, ModelConfig
from ..settings import PRETRAIN_DEFAULTS

NORMS = ("post", "pre")  # BERT's residual sublayers (Admin is for the seq2seq model)

CLS, SEP = BOS, EOS


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int
    # BERT-base's (12 layers, 768 hidden, 12 heads, FFN 3072): the trainer's defaults
    layers: int = PRETRAIN_DEFAULTS["layers"]
    d_model: int = PRETRAIN_DEFAULTS["d_model"]
    ffn_dim: int = PRETRAIN_DEFAULTS["ffn_dim"]
    heads: int = PRETRAIN_DEFAULTS["heads"]
    dropout: float = PRETRAIN_DEFAULTS["dropout"]
    attn_dropout: float = PRETRAIN_DEFAULTS["attn_dropout"]
    norm: str = PRETRAIN_DEFAULTS["norm"]  # post | pre
    max_positions: int = 512
    nsp: bool = False  # next-sentence prediction head (Devlin et al.); off: masked LM only
    init_std: float = PRETRAIN_DEFAULTS["init_std"]  # N(0, init_std) weights; BERT-base's 0.02 is ~0.55 / sqrt(768)
    # every LayerNorm's eps; BERT's released code: 1e-12 (checkpoints without it: the default, 1e-5)
    ln_eps: float = PRETRAIN_DEFAULTS["ln_eps"]

    def __post_init__(self):
        if self.norm not in NORMS:
            raise ValueError(f"norm={self.norm!r}: BERT here is 'post' or 'pre' (Admin is for the seq2seq model)")

    def layer_config(self):
        return ModelConfig(vocab_size=self.vocab_size, d_model=self.d_model, ffn_dim=self.ffn_dim, heads=self.heads,
                           enc_layers=self.layers, dec_layers=0, dropout=self.dropout, attn_dropout=self.attn_dropout,
                           enc_norm=self.norm, max_positions=self.max_positions, activation="gelu")


class Bert(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.tokens = nn.Embedding(cfg.vocab_size, d, padding_idx=PAD)
        self.positions = nn.Embedding(cfg.max_positions, d)
        self.segments = nn.Embedding(2, d)
        self.embed_norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList(EncoderLayer(cfg.layer_config()) for _ in range(cfg.layers))
        self.final_norm = nn.LayerNorm(d) if cfg.norm == "pre" else None  # Pre-LN's final LayerNorm
        # masked-LM head: transform, then the output projection tied to the token embedding
        self.lm_transform = nn.Linear(d, d)
        self.lm_norm = nn.LayerNorm(d)
        self.lm_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        # next-sentence prediction on the pooled [CLS] (dense + tanh), which fine-tuning then reuses;
        # without it every parameter still takes part in the loss (DDP requires that)
        self.pooler = nn.Linear(d, d) if cfg.nsp else None
        self.nsp_head = nn.Linear(d, 2) if cfg.nsp else None
        self.apply(lambda m: bert_init(m, cfg.init_std))
        set_layer_norm_eps(self, cfg.ln_eps)

    def forward(self, tokens, segments, lm_targets=None):
        """Hidden states (B, T, d) of token ids and segment ids (0 = sentence A, 1 = B). With
        lm_targets (B, T; PAD where nothing is predicted): the pre-training outputs instead, the
        masked-LM logits of the target positions (N, V) and the NSP logits (B, 2) or None."""
        pos = torch.arange(tokens.size(1), device=tokens.device)
        x = self.tokens(tokens) + self.positions(pos)[None] + self.segments(segments)
        x = dropout(self.embed_norm(x), self.cfg.dropout, self.training)
        mask = (tokens != PAD)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        if self.final_norm is not None:
            x = self.final_norm(x)
        if lm_targets is None:
            return x
        nsp = self.nsp_head(self.pooled(x)) if self.nsp_head is not None else None
        return self.lm_logits(x[lm_targets != PAD]), nsp

    def lm_logits(self, hidden):
        """Vocabulary logits of the selected (masked) positions' hidden states (N, d) -> (N, V)."""
        h = self.lm_norm(F.gelu(self.lm_transform(hidden)))
        return F.linear(h, self.tokens.weight, self.lm_bias)

    def pooled(self, hidden):
        return torch.tanh(self.pooler(hidden[:, 0]))


def set_layer_norm_eps(module, eps):
    """One eps for every LayerNorm, model.py's encoder layers included (they are built with the
    translation model's 1e-5); LayerNorm reads .eps at every forward."""
    for m in module.modules():
        if isinstance(m, nn.LayerNorm):
            m.eps = eps


def bert_init(module, std=0.02):
    """BERT's initialization: N(0, std) weights, zero biases, pad embedding zero."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.Embedding) and module.padding_idx is not None:
        with torch.no_grad():
            module.weight[module.padding_idx].zero_()


class BertClassifier(nn.Module):
    """A pre-trained Bert with a fresh linear classifier on the pooled [CLS] (GLUE fine-tuning).
    The pooler is the pre-trained one when NSP trained it, else a fresh dense + tanh (RoBERTa)."""

    def __init__(self, bert: Bert, num_labels=2):
        super().__init__()
        self.bert, self.cfg = bert, bert.cfg
        if bert.pooler is None:
            bert.pooler = nn.Linear(bert.cfg.d_model, bert.cfg.d_model)
            bert_init(bert.pooler, bert.cfg.init_std)
        self.classifier = nn.Linear(bert.cfg.d_model, num_labels)
        bert_init(self.classifier, bert.cfg.init_std)

    def forward(self, tokens, segments):
        pooled = self.bert.pooled(self.bert(tokens, segments))
        return self.classifier(dropout(pooled, self.cfg.dropout, self.training))


def pair_input(a, b, max_len):
    """[CLS] a [SEP] b [SEP] with segment ids; the longer side is cut first to fit max_len (as BERT)."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_len - 3:
        (a if len(a) >= len(b) else b).pop()
    tokens = [CLS] + a + [SEP] + b + [SEP]
    segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return tokens, segments


def pad_batch(rows):
    """Lists of (tokens, segments) -> (B, T) tensors padded with PAD / segment 0."""
    T = max(len(t) for t, _ in rows)
    tokens = torch.full((len(rows), T), PAD, dtype=torch.long)
    segments = torch.zeros((len(rows), T), dtype=torch.long)
    for i, (t, s) in enumerate(rows):
        tokens[i, :len(t)] = torch.tensor(t)
        segments[i, :len(s)] = torch.tensor(s)
    return tokens, segments


def mask_tokens(tokens, mask_id, generator, prob=0.15, first_normal=4):
    """Devlin et al.'s masking: choose `prob` of the real tokens (not [CLS]/[SEP]/pad) as targets;
    of those 80% become [MASK], 10% a random token, 10% stay. Random tokens are drawn from the
    ordinary symbols [first_normal, mask_id) (<mask> is the dictionary's last symbol).
    Returns (inputs, targets) with targets PAD where nothing is predicted; at least one target."""
    special = (tokens == PAD) | (tokens == CLS) | (tokens == SEP)
    chosen = (torch.rand(tokens.shape, generator=generator) < prob) & ~special
    if not chosen.any():
        candidates = (~special).nonzero()
        pick = candidates[torch.randint(len(candidates), (1,), generator=generator)][0]
        chosen[pick[0], pick[1]] = True
    targets = torch.where(chosen, tokens, torch.full_like(tokens, PAD))
    action = torch.rand(tokens.shape, generator=generator)
    random_tokens = torch.randint(first_normal, mask_id, tokens.shape, generator=generator)
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(tokens, mask_id), tokens)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_tokens, inputs)
    return inputs, targets


def load_bert(path, device="cpu"):
    """A Bert from a pre-training checkpoint (weights only, safe to load), built with the checkpoint's
    model config; one written before ln_eps existed gets BertConfig's 1e-5, the eps it trained with."""
    state = load_checkpoint(path, device)
    model = Bert(BertConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    return model.to(device)

