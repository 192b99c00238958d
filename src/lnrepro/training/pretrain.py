"""BERT pre-training with the masked-LM objective (Xiong et al. Fig 5a), on lnrepro.core.loop's trainer.

A round is ``valid_interval`` updates: after each, the validation loss (bits per masked token)
and a checkpoint ``checkpoints/epochN.pt`` that fine-tuning reads. Resume, divergence and
multi-GPU behave as for translation because the loop is the same.

Instances follow Devlin et al.'s create_pretraining_data: the sentences of one document are
packed into blocks of up to ``block_size`` tokens ([CLS] A [SEP] (B [SEP])); with next-sentence
prediction, a block is cut at a random sentence and B is the true continuation or, half the
time, sentences of another document. Masks are drawn per batch from (seed, position in the
batch stream), so they differ every epoch and a resumed run draws the same ones.

Two sequence lengths (Devlin et al. A.2: 128 for 90% of the steps, then 512 "to learn the
positional embeddings"): with ``short_block_size`` set, the updates before
round(short_fraction * max_updates) train on instances packed to short_block_size and batched by
short_max_tokens, the rest on block_size instances batched by max_tokens. The switch falls at
that exact update, not at a round boundary, so a round may mix both (the paper's 900k of 1M
updates is the end of round 18 of 50k). Each phase has its own instances of the same documents
and its own batch stream, entered at its first update; an update's batches and masks depend on
its number only, so a resumed run replays them on either side of the switch. Our reading: one
optimizer and lr schedule run across the switch (Devlin et al. state one schedule for the 1M
steps), and validation uses the short length throughout (see MaskedLMTask). A capped run
(training_cap: fewer, shorter rounds) switches at the same fraction of its own updates.
"""
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F

from ..core import launch
from ..core.batching import epoch_order, make_batches
from ..core.bert import CLS, NORMS as BERT_NORMS, SEP, Bert, BertConfig, mask_tokens, pad_batch, pair_input
from ..core.checkpoint import data_files, file_digests, load_input
from ..core.config import LoopConfig, add_config_arguments, config_args, config_from_args, setting
from ..core.data import PAD, Dictionary
from ..core.loop import LN2, fit
from ..core.mono_data import MASK, MonoData
from ..settings import PRETRAIN_DEFAULTS


@dataclass(frozen=True)
class PretrainConfig(LoopConfig):
    # model: BERT-base (Devlin et al.; Xiong et al. supplementary §1.2)
    layers: int = setting(PRETRAIN_DEFAULTS["layers"], "encoder layers (BERT-base: 12)")
    d_model: int = setting(PRETRAIN_DEFAULTS["d_model"], "model width d")
    ffn_dim: int = setting(PRETRAIN_DEFAULTS["ffn_dim"], "inner width of the feed-forward sublayers")
    heads: int = setting(PRETRAIN_DEFAULTS["heads"], "attention heads")
    dropout: float = setting(PRETRAIN_DEFAULTS["dropout"], "dropout on embeddings and sublayer outputs")
    attn_dropout: float = setting(PRETRAIN_DEFAULTS["attn_dropout"], "dropout on attention weights")
    init_std: float = setting(PRETRAIN_DEFAULTS["init_std"], "weights drawn from N(0, init_std)")
    ln_eps: float = setting(PRETRAIN_DEFAULTS["ln_eps"], "every LayerNorm's eps (BERT's released code: 1e-12)")
    norm: str = setting(PRETRAIN_DEFAULTS["norm"], "residual sublayers: Post-LN or Pre-LN (Xiong et al. Fig 5a)",
                        BERT_NORMS)
    # objective and length
    block_size: int = setting(PRETRAIN_DEFAULTS["block_size"], "tokens per instance ([CLS] A [SEP] (B [SEP]))")
    # a first phase of shorter sequences (Devlin et al. A.2); short_block_size 0 = one phase
    short_block_size: int = setting(PRETRAIN_DEFAULTS["short_block_size"], "block size of a first, shorter phase (Devlin et al. A.2: 128); 0 = one phase")
    short_fraction: float = setting(PRETRAIN_DEFAULTS["short_fraction"], "fraction of --max-updates in the short phase (set with --short-block-size)")
    short_max_tokens: int = setting(PRETRAIN_DEFAULTS["short_max_tokens"], "batch tokens in the short phase; 0 = as many sequences as --max-tokens holds "
                                    "at --block-size")
    nsp: bool = setting(PRETRAIN_DEFAULTS["nsp"], "next-sentence prediction as well as masked LM")
    mask_prob: float = setting(PRETRAIN_DEFAULTS["mask_prob"], "fraction of tokens masked")
    max_updates: int = setting(PRETRAIN_DEFAULTS["max_updates"], "updates in all")
    valid_interval: int = setting(PRETRAIN_DEFAULTS["valid_interval"],
                                  "updates per round: validation loss and a checkpoint after each")
    valid_max_sequences: int = setting(PRETRAIN_DEFAULTS["valid_max_sequences"], "validate on at most this many sequences; 0 = the whole valid split")

    def __post_init__(self):
        super().__post_init__()
        if bool(self.short_block_size) != bool(self.short_fraction):
            raise ValueError("short_block_size and short_fraction are set together (both 0: one phase)")
        if self.short_block_size and not (self.short_block_size < self.block_size and 0 < self.short_fraction < 1):
            raise ValueError(f"short_block_size {self.short_block_size} must be below block_size {self.block_size} "
                             f"and short_fraction {self.short_fraction} in (0, 1)")

    def round_updates(self):
        return self.capped_round_updates(self.valid_interval)

    def total_updates(self):
        """max_updates, or what the cap leaves of it: the phases split this total."""
        if not self.capped():
            return self.max_updates
        return self.capped_rounds(math.ceil(self.max_updates / self.valid_interval)) * self.round_updates()

    def phases(self):
        """(first update, block size, max_tokens) of each sequence-length phase, in order."""
        if not self.short_block_size:
            return [(0, self.block_size, self.max_tokens)]
        short_tokens = self.short_max_tokens or self.max_tokens * self.short_block_size // self.block_size
        return [(0, self.short_block_size, short_tokens),
                (round(self.short_fraction * self.total_updates()), self.block_size, self.max_tokens)]

    def model_summary(self):
        phases = ", ".join(f"block_size {block} (max_tokens {tokens}) from update {start}"
                           for start, block, tokens in self.phases())
        return [f"settings: BERT norm {self.norm}, {self.layers} layers, d_model {self.d_model}, ffn {self.ffn_dim}, heads "
                f"{self.heads}, init_std {self.init_std:g}, ln_eps {self.ln_eps:g} | dropout {self.dropout:g}, "
                f"attention dropout {self.attn_dropout:g}",
                f"settings: masked LM (mask_prob {self.mask_prob:g}){' + next-sentence prediction' if self.nsp else ''}"
                f" | {phases} | max_updates {self.max_updates}, valid_interval {self.valid_interval}"]

    def model_config(self, vocab_size):
        return BertConfig(vocab_size=vocab_size, layers=self.layers, d_model=self.d_model, ffn_dim=self.ffn_dim,
                          heads=self.heads, dropout=self.dropout, attn_dropout=self.attn_dropout, init_std=self.init_std, norm=self.norm,
                          max_positions=self.block_size, nsp=self.nsp, ln_eps=self.ln_eps)


def add_arguments(p):
    p.add_argument("--data", required=True, help="binarized monolingual data dir (dict.txt, train.pt, valid.pt)")
    p.add_argument("--out", required=True, help="run dir: metrics.csv and checkpoints/")
    add_config_arguments(p, PretrainConfig)


def run(args):
    cfg = config_from_args(PretrainConfig, args)
    if launch.run(args.nodes, args.gpus, cfg.threads, ["--data", args.data, "--out", args.out] + config_args(cfg),
                  subcommand="pretrain"):
        return 0  # not reached: the launch replaced this process
    return pretrain(cfg, Path(args.data), Path(args.out))


def pretrain(cfg: PretrainConfig, data_dir: Path, out_dir: Path):
    return fit(cfg, MaskedLMTask(cfg, data_dir), out_dir)


def make_instances(data: MonoData, block_size, nsp, rng):
    """Blocks as sentence ranges: int64 array of rows (a_start, a_end, b_start, b_end, is_next);
    b_start == b_end when there is no second segment."""
    budget = block_size - (3 if nsp else 2)
    lengths = np.diff(data.sentence_offsets.numpy())
    rows = []
    for doc in range(data.n_docs):
        first, last = int(data.doc_offsets[doc]), int(data.doc_offsets[doc + 1])
        start, length = first, 0
        for s in range(first, last):
            length += int(lengths[s])
            if s == last - 1 or length >= budget:
                end = s + 1
                if not nsp:
                    rows.append((start, end, end, end, 1))
                else:
                    rows.append(next_sentence_pair(data, doc, start, end, rng))
                start, length = end, 0
    return np.array(rows, dtype=np.int64).reshape(-1, 5)


def next_sentence_pair(data, doc, start, end, rng):
    """Cut sentences [start, end) at a random point; B is the rest, or (half the time, or when
    there is a single sentence) a run of sentences from another document."""
    cut = start + 1 if end - start < 2 else int(rng.integers(start + 1, end))
    if end - start >= 2 and (rng.random() < 0.5 or data.n_docs < 2):
        return (start, cut, cut, end, 1)
    other = int(rng.integers(data.n_docs - 1))
    other += other >= doc
    o_first, o_last = int(data.doc_offsets[other]), int(data.doc_offsets[other + 1])
    b_start = int(rng.integers(o_first, o_last))
    return (start, cut, b_start, min(o_last, b_start + max(1, end - cut)), 0)


@dataclass(frozen=True)
class Phase:
    """The training instances of one sequence length and their batches, used from update `start` on."""
    start: int
    block_size: int
    rows: np.ndarray
    batches: list


class MaskedLMTask:
    """BERT's masked LM (+ next-sentence prediction when cfg.nsp) over a monolingual corpus."""

    def __init__(self, cfg: PretrainConfig, data_dir: Path):
        self.cfg = cfg
        self.files = data_files(data_dir)
        dict_file, train_file, valid_file = self.files
        vocab = load_input(Dictionary.load, dict_file)
        if MASK not in vocab.index:
            raise SystemExit(f"{dict_file} has no {MASK} symbol (binarize with `lnrepro binarize-mono`)")
        self.vocab_size, self.mask_id = len(vocab), vocab.index[MASK]
        self.train = load_input(MonoData.load, train_file)
        self.valid = load_input(MonoData.load, valid_file)
        rng = np.random.default_rng(cfg.seed)  # one stream, phase after phase
        self.phases = [self.train_phase(start, block, max_tokens, rng) for start, block, max_tokens in cfg.phases()]
        # our reading: validation keeps the first phase's length throughout, so Fig 5a is one curve
        # across the switch; at block_size, the rounds before it would score positions never trained
        _, valid_block, valid_tokens = cfg.phases()[0]
        self.valid_rows = make_instances(self.valid, valid_block, cfg.nsp, np.random.default_rng(cfg.seed + 1))
        if cfg.valid_max_sequences:
            self.valid_rows = self.valid_rows[:cfg.valid_max_sequences]
        valid_batches = make_batches(self.lengths(self.valid, self.valid_rows, valid_block), valid_tokens, cfg.seed)
        # validation masks are fixed, so every round is scored on the same predictions
        self.valid_masked = [self.masked(self.valid, self.valid_rows, b, ("valid", i), valid_block)
                             for i, b in enumerate(valid_batches)]
        self.rounds = math.ceil(cfg.max_updates / cfg.valid_interval)
        self.valid_columns = ("valid_loss", "valid_mlm_acc") + (("valid_nsp_acc",) if cfg.nsp else ())
        self.valid_nll_column = "valid_loss"  # the masked LM's nll: NSP is not in it
        self._pending = {}

    def data_identity(self):
        return file_digests(self.files)

    def build_model(self):
        return Bert(self.cfg.model_config(self.vocab_size))

    def updates_per_round(self, per_update):
        return self.cfg.valid_interval

    def train_phase(self, start, block_size, max_tokens, rng):
        rows = make_instances(self.train, block_size, self.cfg.nsp, rng)
        batches = make_batches(self.lengths(self.train, rows, block_size), max_tokens, self.cfg.seed)
        return Phase(start, block_size, rows, batches)

    def phase_at(self, update):
        """The index of the phase that trains update `update` (0-based)."""
        return sum(update >= phase.start for phase in self.phases[1:])

    def round_batches(self, round, per_update):
        """The round's slice of the stream of (position, phase, batch): each phase is an endless
        stream of its own batches, reshuffled every epoch, entered at the phase's first update."""
        per_round = self.cfg.round_updates() * per_update
        orders = {}
        out = []
        for pos in range((round - 1) * per_round, round * per_round):
            p = self.phase_at(pos // per_update)
            phase = self.phases[p]
            epoch, i = divmod(pos - phase.start * per_update, len(phase.batches))
            if (p, epoch) not in orders:
                orders[p, epoch] = epoch_order(phase.batches, self.cfg.seed, epoch + 1)
            out.append((pos, p, tuple(orders[p, epoch][i])))
        return out

    def lengths(self, data, rows, block_size):
        """Instance lengths with [CLS]/[SEP], as make_batches reads them."""
        off = data.sentence_offsets.numpy()
        a0, a1, b0, b1 = (rows[:, k] for k in range(4))
        framing = np.where(b1 > b0, 3, 2)
        t = torch.from_numpy(np.minimum(block_size, off[a1] - off[a0] + off[b1] - off[b0] + framing))
        return SimpleNamespace(src_lengths=t, tgt_lengths=t)

    def masked(self, data, rows, indices, key, block_size):
        """(inputs, segments, targets, is_next) of the instances `indices`, masked by key's stream."""
        pairs = []
        off = data.sentence_offsets
        for a0, a1, b0, b1, _ in rows[list(indices)]:
            # a document's sentences lie one after another in the flat token buffer
            a = data.tokens[off[a0]:off[a1]].tolist()
            b = data.tokens[off[b0]:off[b1]].tolist()
            pairs.append(block_input(a, b, b1 > b0, block_size))
        tokens, segments = pad_batch(pairs)
        generator = torch.Generator().manual_seed(hash_key(self.cfg.seed, key))
        inputs, targets = mask_tokens(tokens, self.mask_id, generator, self.cfg.mask_prob)
        is_next = torch.as_tensor(rows[list(indices), 4], dtype=torch.long)
        return inputs, segments, targets, is_next

    def batch(self, item):
        """The masked batch of a stream item, kept from tokens() (which every worker calls for the
        whole update) until loss() uses it. Masks are keyed by the position in the whole stream,
        so the phases never share one."""
        pos, p, indices = item
        if pos not in self._pending:
            phase = self.phases[p]
            self._pending[pos] = self.masked(self.train, phase.rows, indices, ("train", pos), phase.block_size)
        return self._pending[pos]

    def tokens(self, item):
        return int((self.batch(item)[2] != PAD).sum())

    def loss(self, model, item, device):
        inputs, segments, targets, is_next = (t.to(device) for t in self.batch(item))
        self._pending = {pos: b for pos, b in self._pending.items() if pos > item[0]}  # other workers' items
        mlm, nsp = model(inputs, segments, lm_targets=targets)
        nll = F.cross_entropy(mlm.float(), targets[targets != PAD], reduction="sum")
        loss = nll
        if nsp is not None:  # per-sequence NSP mean, weighted so loss / masked tokens adds it once
            loss = loss + F.cross_entropy(nsp.float(), is_next, reduction="sum") * (nll.new_tensor(mlm.size(0)) / is_next.numel())
        return loss, nll

    def validate(self, model, device, autocast):
        """Masked-LM loss in bits per masked token, its accuracy, and NSP accuracy when trained."""
        nll = correct = ntok = nsp_correct = nseq = 0.0
        for inputs, segments, targets, is_next in self.valid_masked:
            inputs, segments, targets, is_next = (t.to(device) for t in (inputs, segments, targets, is_next))
            with autocast():
                mlm, nsp = model(inputs, segments, lm_targets=targets)
            gold = targets[targets != PAD]
            nll += F.cross_entropy(mlm.float(), gold, reduction="sum").item()
            correct += int((mlm.argmax(-1) == gold).sum())
            ntok += gold.numel()
            if nsp is not None:
                nsp_correct += int((nsp.argmax(-1) == is_next).sum())
                nseq += is_next.numel()
        out = {"valid_loss": nll / ntok / LN2, "valid_mlm_acc": correct / ntok}
        if self.cfg.nsp:
            out["valid_nsp_acc"] = nsp_correct / nseq
        return out


def block_input(a, b, has_b, block_size):
    """[CLS] A [SEP] (B [SEP]) with segment ids, cut to block_size tokens."""
    if not has_b:
        a = a[:block_size - 2]
        return [CLS] + a + [SEP], [0] * (len(a) + 2)
    return pair_input(a, b, block_size)  # the longer segment is cut first (Devlin et al.)


def hash_key(seed, key):
    """A 63-bit generator seed from (seed, key); Python's hash() is salted per process, this is not."""
    digest = hashlib.sha256(repr((seed, key)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1
