"""A user's own parallel text as a corpus's raw folder.

`prepare-local` copies train/test (and, if given, valid) source/target files into
OUT/{split}.{lang}, checking that they are UTF-8 and that both sides have as many lines.
"""
import os
import sys

from . import read_parallel
from .sources import log, raw_directory


def _copy_pairs(s, t, s_out, t_out):
    # s_out, t_out lie in raw_directory's temporary folder: a failure leaves no output
    n = 0
    with open(s_out, "w", encoding="utf-8", newline="\n") as fs, open(t_out, "w", encoding="utf-8", newline="\n") as ft:
        for a, b in read_parallel([s, t], empty="error"):
            fs.write(a + "\n")
            ft.write(b + "\n")
            n += 1
    return n


def prepare_local(src_lang, tgt_lang, out_dir, train, test, valid=None):
    """train/test/valid: (source path, target path). Returns {split: lines}."""
    splits = {"train": train, "test": test, **({"valid": valid} if valid else {})}
    counts = {}
    with raw_directory(out_dir) as tmp:
        for split, (s, t) in splits.items():
            counts[split] = _copy_pairs(s, t, os.path.join(tmp, f"{split}.{src_lang}"),
                                        os.path.join(tmp, f"{split}.{tgt_lang}"))
            log(f"prepare-local: {split}: {counts[split]} lines <- {s}, {t}")
    return counts


def add_arguments(p):
    p.add_argument("--src-lang", required=True, help="source language code, the files' suffix (e.g. de)")
    p.add_argument("--tgt-lang", required=True, help="target language code (e.g. en)")
    p.add_argument("--train", nargs=2, required=True, metavar=("SRC", "TGT"), help="train text files, line-aligned")
    p.add_argument("--test", nargs=2, required=True, metavar=("SRC", "TGT"), help="test text files, line-aligned")
    p.add_argument("--valid", nargs=2, default=None, metavar=("SRC", "TGT"),
                   help="optional; without it the chain splits every Nth train line off")
    p.add_argument("--out-dir", required=True, help="raw folder to create: {split}.{lang}")


def run(args):
    try:
        prepare_local(args.src_lang, args.tgt_lang, args.out_dir, args.train, args.test, args.valid)
    except (OSError, ValueError) as e:  # missing file, mismatched sides, not UTF-8
        sys.exit(f"lnrepro prepare-local: ERROR: {e}")

