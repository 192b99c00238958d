"""Dictionary and tensors of the BERT pre-training corpus (BPE'd docs text, train and valid).

dict.txt is lnrepro.core.data.Dictionary's format counted over train, with the special symbol
<mask> appended as its last entry (count 0): the BERT code finds it as index["<mask>"].
{train,valid}.pt are MonoData (lnrepro.core.mono_data): token ids without </s>, sentence and
document offsets. Tokens not in the dictionary (valid only) become <unk>.
"""
import os
import sys
from collections import Counter

import torch

from ..core import data
from ..core.mono_data import MASK, FlatBuilder, MonoData
from . import atomic_path, read_lines
from .documents import read_documents


def bert_dictionary(train_path):
    """Dictionary counted over train (most frequent first, ties alphabetical, as Dictionary.build),
    <mask> appended last; corpus tokens spelled like a special symbol are not counted."""
    counter = Counter(tok for line in read_lines(train_path) for tok in line.split())
    reserved = set(data.SPECIALS) | {MASK}
    ordered = sorted(((s, c) for s, c in counter.items() if s not in reserved), key=lambda kv: (-kv[1], kv[0]))
    return data.Dictionary([s for s, _ in ordered] + [MASK], [c for _, c in ordered] + [0])


def encode_documents(vocab, path):
    sentences, doc_offsets = FlatBuilder(), [0]
    for document in read_documents(path):
        for line in document:
            sentences.append(data.token_ids(vocab, line))
        doc_offsets.append(len(sentences))
    tokens, sentence_offsets = sentences.tensors()
    return MonoData(tokens, sentence_offsets, torch.tensor(doc_offsets, dtype=torch.int64))


def binarize_mono(train, valid, out_dir):
    """Writes out_dir/dict.txt, train.pt, valid.pt; returns the dictionary."""
    os.makedirs(out_dir, exist_ok=True)
    vocab = bert_dictionary(train)
    with atomic_path(os.path.join(out_dir, "dict.txt")) as tmp:
        vocab.save(tmp)
    print(f"binarize-mono: dictionary of {len(vocab)} types (4 specials, {MASK} last) -> {out_dir}/dict.txt",
          file=sys.stderr)
    for split, path in (("train", train), ("valid", valid)):
        split_data = encode_documents(vocab, path)
        out = os.path.join(out_dir, f"{split}.pt")
        with atomic_path(out) as tmp:
            split_data.save(tmp)
        n_tokens = len(split_data.tokens)
        unks = int((split_data.tokens == data.UNK).sum())
        print(f"binarize-mono: {split}: {split_data.n_docs} documents, {split_data.n_sentences} sentences, "
              f"{n_tokens} tokens, {unks} <unk> ({100 * unks / max(n_tokens, 1):.2f}%) -> {out}", file=sys.stderr)
    return vocab


def add_arguments(p):
    p.add_argument("--train", required=True, help="BPE'd docs text the dictionary is counted over")
    p.add_argument("--valid", required=True, help="BPE'd docs text")
    p.add_argument("--out-dir", required=True, help="receives dict.txt, train.pt, valid.pt")


def run(args):
    binarize_mono(args.train, args.valid, args.out_dir)
