"""Dictionary and binarized parallel data, in fairseq's conventions.

A dictionary file has one ``token count`` line per symbol, most frequent first; the four
special symbols are implicit and come first: <s>=0, <pad>=1, </s>=2, <unk>=3. A binarized
translation dir holds one joined dictionary, dict.txt (fairseq-preprocess --joined-dictionary), or
one per side, dict.src.txt and dict.tgt.txt (fairseq-preprocess without it).
A binarized split is a ``.pt`` file holding flat int32 token tensors plus int64 offsets,
loadable with ``torch.load(..., weights_only=True)``; every sentence ends with </s>.
"""
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from ..settings import JOINED_DICT, SEPARATE_DICTS

BOS, PAD, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


class Dictionary:
    def __init__(self, symbols, counts=None):
        self.symbols = list(SPECIALS) + [s for s in symbols if s not in SPECIALS]
        self.counts = counts
        self.index = {s: i for i, s in enumerate(self.symbols)}

    def __len__(self):
        return len(self.symbols)

    @classmethod
    def build(cls, lines):
        """Count whitespace tokens; most frequent first, ties alphabetical (as fairseq)."""
        counter = Counter(tok for line in lines for tok in line.split())
        ordered = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        return cls([s for s, _ in ordered], [c for _, c in ordered])

    @classmethod
    def load(cls, path):
        symbols, counts = [], []
        with open(path, encoding="utf-8") as f:
            for line in f:
                sym, count = line.rstrip("\n").rsplit(" ", 1)
                symbols.append(sym)
                counts.append(int(count))
        return cls(symbols, counts)

    def save(self, path):
        counts = self.counts or [0] * (len(self.symbols) - len(SPECIALS))
        with open(path, "w", encoding="utf-8") as f:
            for sym, c in zip(self.symbols[len(SPECIALS):], counts):
                f.write(f"{sym} {c}\n")

    def encode(self, line):
        """Token ids of a whitespace-tokenized line, </s> appended."""
        return [self.index.get(t, UNK) for t in line.split()] + [EOS]

    def decode(self, ids, bpe_symbol="@@ "):
        """Text of ids up to the first </s>, specials dropped, BPE joined if bpe_symbol."""
        words = []
        for i in ids:
            i = int(i)
            if i == EOS:
                break
            if i not in (BOS, PAD):
                words.append(self.symbols[i])
        text = " ".join(words)
        if bpe_symbol:
            text = (text + " ").replace(bpe_symbol, "").rstrip()
        return text


def dictionary_files(data_dir):
    """A binarized translation dir's dictionaries: [dict.txt] where joined, else [source's, target's]."""
    data_dir = Path(data_dir)
    joined, separate = data_dir / JOINED_DICT, [data_dir / name for name in SEPARATE_DICTS]
    has_joined, has_separate = joined.exists(), [p.exists() for p in separate]
    if has_joined and any(has_separate):
        raise ValueError(f"{data_dir}: both a joined {JOINED_DICT} and per-side dictionaries: which one made "
                         "its .pt files is unknown (binarize it again into an empty dir)")
    return separate if any(has_separate) else [joined]  # a missing one: its loader names it


def load_dictionaries(data_dir):
    """(source, target) dictionaries of a binarized translation dir: one object twice where joined."""
    vocabs = [Dictionary.load(path) for path in dictionary_files(data_dir)]
    return vocabs[0], vocabs[-1]


def vocab_sizes(data_dir):
    """A model's (vocab_size, tgt_vocab_size) on a binarized dir (lnrepro.core.model.ModelConfig): the joined
    dictionary's and 0, or the source's and the target's."""
    src, tgt = load_dictionaries(data_dir)
    return len(src), (len(tgt) if tgt is not src else 0)


def token_ids(vocab, line):
    """Ids of a whitespace-tokenized line; no </s> (the BERT corpora's sentences, core.mono_data)."""
    index = vocab.index
    return [index.get(t, UNK) for t in line.split()]


def pack(sentences):
    """List of id lists -> (flat int32 tokens, int64 offsets of length n+1)."""
    lengths = torch.tensor([len(s) for s in sentences], dtype=torch.int64)
    offsets = torch.zeros(len(sentences) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    flat = torch.tensor([t for s in sentences for t in s], dtype=torch.int32)
    return flat, offsets


def save_split(path, src_sentences, tgt_sentences):
    if len(src_sentences) != len(tgt_sentences):
        raise ValueError(f"{path}: {len(src_sentences)} source vs {len(tgt_sentences)} target lines")
    src, src_off = pack(src_sentences)
    tgt, tgt_off = pack(tgt_sentences)
    torch.save({"src": src, "src_offsets": src_off, "tgt": tgt, "tgt_offsets": tgt_off}, path)


@dataclass
class ParallelData:
    """A binarized split: sentence i is src[src_offsets[i]:src_offsets[i+1]]."""
    src: torch.Tensor
    src_offsets: torch.Tensor
    tgt: torch.Tensor
    tgt_offsets: torch.Tensor

    @classmethod
    def load(cls, path):
        return cls(**torch.load(path, weights_only=True))

    def __len__(self):
        return len(self.src_offsets) - 1

    @property
    def src_lengths(self):
        return self.src_offsets[1:] - self.src_offsets[:-1]

    @property
    def tgt_lengths(self):
        return self.tgt_offsets[1:] - self.tgt_offsets[:-1]

    def source(self, i):
        return self.src[self.src_offsets[i]:self.src_offsets[i + 1]]

    def target(self, i):
        return self.tgt[self.tgt_offsets[i]:self.tgt_offsets[i + 1]]
