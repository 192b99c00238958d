"""Build the dictionaries and binarize BPE'd parallel splits (fairseq-preprocess).

Like `fairseq-preprocess --joined-dictionary`: one Dictionary counted over the train source and
target files (dict.txt); with --separate-dictionaries, as fairseq-preprocess without that flag
(fairseq's IWSLT14 example, Xiong et al.'s IWSLT runs): one per side, counted over its own train
file (dict.src.txt, dict.tgt.txt). Every split is encoded with them (unknown words -> <unk>, </s>
appended) into {out_dir}/{split}.pt.
"""
import os
import sys
from itertools import chain

from ..core import data
from . import atomic_path, read_lines, read_parallel


def build_dictionaries(src_lang, tgt_lang, train_prefix, out_dir, dict_out=None, separate=False):
    """Counts and saves the dictionaries; returns (source's, target's): one object twice where joined."""
    train_files = [f"{train_prefix}.{src_lang}", f"{train_prefix}.{tgt_lang}"]
    if not separate:
        vocab = data.Dictionary.build(chain.from_iterable(read_lines(p) for p in train_files))
        outs, vocabs = [dict_out or os.path.join(out_dir, data.JOINED_DICT)], [vocab, vocab]
    else:
        vocabs = [data.Dictionary.build(read_lines(p)) for p in train_files]
        outs = [os.path.join(out_dir, name) for name in data.SEPARATE_DICTS]
    for vocab, path in zip(vocabs, outs):
        with atomic_path(path) as tmp:
            vocab.save(tmp)
        print(f"binarize: {'joint ' if not separate else ''}dictionary of {len(vocab)} types (4 specials) -> {path}",
              file=sys.stderr)
    return vocabs[0], vocabs[1]


def binarize(src_lang, tgt_lang, train_prefix, splits, prefixes, out_dir, dict_out=None, separate=False):
    """Returns the source dictionary, the target's and {split: (sentences, tokens, unks)} (tokens with </s>)."""
    if len(splits) != len(prefixes):
        raise ValueError(f"{len(splits)} --splits but {len(prefixes)} --prefixes")
    if separate and dict_out:
        raise ValueError("--dict-out names a joined dictionary; separate ones are {out-dir}/dict.src.txt, dict.tgt.txt")
    os.makedirs(out_dir, exist_ok=True)
    src_vocab, tgt_vocab = build_dictionaries(src_lang, tgt_lang, train_prefix, out_dir, dict_out, separate)
    stats = {}
    for split, prefix in zip(splits, prefixes):
        pairs = read_parallel([f"{prefix}.{src_lang}", f"{prefix}.{tgt_lang}"])
        src, tgt = [], []
        for s, t in pairs:
            src.append(src_vocab.encode(s))
            tgt.append(tgt_vocab.encode(t))
        path = os.path.join(out_dir, f"{split}.pt")
        with atomic_path(path) as tmp:
            data.save_split(tmp, src, tgt)
        tokens = sum(len(x) for x in chain(src, tgt))
        unks = sum(x.count(data.UNK) for x in chain(src, tgt))
        stats[split] = (len(src), tokens, unks)
        print(f"binarize: {split}: {len(src)} sentence pairs, {tokens} tokens, "
              f"{unks} <unk> ({100 * unks / max(tokens, 1):.2f}%) -> {path}", file=sys.stderr)
    return src_vocab, tgt_vocab, stats


def add_arguments(p):
    p.add_argument("--src-lang", required=True, help="source language code, the files' suffix (e.g. de)")
    p.add_argument("--tgt-lang", required=True, help="target language code (e.g. en)")
    p.add_argument("--train-prefix", required=True,
                   help="the dictionary is counted over {prefix}.{src-lang} and .{tgt-lang}")
    p.add_argument("--splits", nargs="+", required=True, help="split names, e.g. train valid test")
    p.add_argument("--prefixes", nargs="+", required=True,
                   help="one file prefix per split; files are {prefix}.{lang}")
    p.add_argument("--out-dir", required=True, help="receives {split}.pt")
    p.add_argument("--dict-out", help="the joined dictionary's file (default: {out-dir}/dict.txt)")
    p.add_argument("--separate-dictionaries", action="store_true",
                   help="one dictionary per side, {out-dir}/dict.src.txt and dict.tgt.txt (fairseq-preprocess "
                        "without --joined-dictionary)")


def run(args):
    binarize(args.src_lang, args.tgt_lang, args.train_prefix, args.splits, args.prefixes,
             args.out_dir, args.dict_out, args.separate_dictionaries)
