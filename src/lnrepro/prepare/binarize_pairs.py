"""Tensors of one GLUE split (BPE'd sentence1/sentence2 line files and 0/1 labels).

Token ids come from the pre-training corpus's dict.txt (the fine-tuned model's vocabulary),
no </s> appended; tokens it lacks become <unk>. Output: PairData (lnrepro.core.mono_data).
"""
import sys

import torch

from ..core import data
from ..core.mono_data import FlatBuilder, PairData
from . import atomic_path, read_parallel


def binarize_pairs(dict_path, s1_path, s2_path, labels_path, out):
    vocab = data.Dictionary.load(dict_path)
    s1, s2, labels = FlatBuilder(), FlatBuilder(), []
    for number, (a, b, label) in enumerate(read_parallel([s1_path, s2_path, labels_path]), start=1):
        if label not in ("0", "1"):
            raise ValueError(f"{labels_path}, line {number}: label '{label}' is not 0 or 1")
        s1.append(data.token_ids(vocab, a))
        s2.append(data.token_ids(vocab, b))
        labels.append(int(label))
    pairs = PairData(*s1.tensors(), *s2.tensors(), torch.tensor(labels, dtype=torch.int64))
    with atomic_path(out) as tmp:
        pairs.save(tmp)
    return pairs


def add_arguments(p):
    p.add_argument("--dict", required=True, help="the pre-training corpus's dict.txt")
    p.add_argument("--s1", required=True, help="BPE'd sentence1, one a line")
    p.add_argument("--s2", required=True, help="BPE'd sentence2, line-parallel")
    p.add_argument("--labels", required=True, help="0/1, one a line")
    p.add_argument("--out", required=True, help="the split's .pt file")


def run(args):
    try:
        pairs = binarize_pairs(args.dict, args.s1, args.s2, args.labels, args.out)
    except ValueError as e:
        sys.exit(f"lnrepro binarize-pairs: ERROR: {e}")
    tokens = len(pairs.s1) + len(pairs.s2)
    unks = int((pairs.s1 == data.UNK).sum() + (pairs.s2 == data.UNK).sum())
    print(f"binarize-pairs: {len(pairs)} pairs ({int(pairs.labels.sum())} labelled 1), {tokens} tokens, "
          f"{unks} <unk> ({100 * unks / max(tokens, 1):.2f}%) -> {args.out}", file=sys.stderr)
