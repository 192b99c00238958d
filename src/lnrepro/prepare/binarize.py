"""Build the joint dictionary and binarize BPE'd parallel splits (fairseq-preprocess).

Like `fairseq-preprocess --joined-dictionary`: one Dictionary counted over the train
source and target files, then every split encoded with it (unknown words -> <unk>,
</s> appended) into {out_dir}/{split}.pt.
"""
import os
import sys
from itertools import chain

from ..core import data
from . import atomic_path, read_lines, read_parallel


def binarize(src_lang, tgt_lang, train_prefix, splits, prefixes, out_dir, dict_out=None):
    """Returns the dictionary and {split: (sentences, tokens, unks)} (tokens with </s>)."""
    if len(splits) != len(prefixes):
        raise ValueError(f"{len(splits)} --splits but {len(prefixes)} --prefixes")
    os.makedirs(out_dir, exist_ok=True)
    dict_out = dict_out or os.path.join(out_dir, "dict.txt")
    train_files = [f"{train_prefix}.{src_lang}", f"{train_prefix}.{tgt_lang}"]
    vocab = data.Dictionary.build(chain.from_iterable(read_lines(p) for p in train_files))
    with atomic_path(dict_out) as tmp:
        vocab.save(tmp)
    print(f"binarize: joint dictionary of {len(vocab)} types (4 specials) -> {dict_out}",
          file=sys.stderr)
    stats = {}
    for split, prefix in zip(splits, prefixes):
        pairs = read_parallel([f"{prefix}.{src_lang}", f"{prefix}.{tgt_lang}"])
        src, tgt = [], []
        for s, t in pairs:
            src.append(vocab.encode(s))
            tgt.append(vocab.encode(t))
        path = os.path.join(out_dir, f"{split}.pt")
        with atomic_path(path) as tmp:
            data.save_split(tmp, src, tgt)
        tokens = sum(len(x) for x in chain(src, tgt))
        unks = sum(x.count(data.UNK) for x in chain(src, tgt))
        stats[split] = (len(src), tokens, unks)
        print(f"binarize: {split}: {len(src)} sentence pairs, {tokens} tokens, "
              f"{unks} <unk> ({100 * unks / max(tokens, 1):.2f}%) -> {path}", file=sys.stderr)
    return vocab, stats


def add_arguments(p):
    p.add_argument("--src-lang", required=True, help="source language code, the files' suffix (e.g. de)")
    p.add_argument("--tgt-lang", required=True, help="target language code (e.g. en)")
    p.add_argument("--train-prefix", required=True,
                   help="the dictionary is counted over {prefix}.{src-lang} and .{tgt-lang}")
    p.add_argument("--splits", nargs="+", required=True, help="split names, e.g. train valid test")
    p.add_argument("--prefixes", nargs="+", required=True,
                   help="one file prefix per split; files are {prefix}.{lang}")
    p.add_argument("--out-dir", required=True, help="receives {split}.pt")
    p.add_argument("--dict-out", help="dictionary file (default: {out-dir}/dict.txt)")


def run(args):
    binarize(args.src_lang, args.tgt_lang, args.train_prefix, args.splits, args.prefixes,
             args.out_dir, args.dict_out)
