"""Filter a parallel corpus by sentence length and length ratio (clean-corpus-n.perl).

Per pair, as the Perl script: remove '|' (unless the first pair has one, i.e. the corpus
is factored), collapse whitespace runs to one space, strip; drop the pair if a side is
empty, has fewer than min or more than max words, a word longer than max-word-length,
or a word-count ratio above ratio in either direction. Kept pairs are written normalised.
"""
import re
import sys

from ..settings import CLEAN_DEFAULTS
from . import InputError, atomic_open_all, read_parallel

# Perl's \s on Unicode strings; Python's \s would also match \x1c-\x1f
_PERL_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_SPACES = re.compile(f"[{_PERL_SPACE}]+")
_BLANK_FACTOR = re.compile(r"[ |]\|")


def normalize(line, factored=False):
    """'|' removed (unless factored), whitespace runs -> one space, stripped."""
    if not factored:
        line = line.replace("|", "")
    return _SPACES.sub(" ", line).strip(" ")


def keep(src, tgt, min_len=CLEAN_DEFAULTS["min"], max_len=CLEAN_DEFAULTS["max"], ratio=CLEAN_DEFAULTS["ratio"],
         max_word_length=1000):
    """Whether a normalised pair passes clean-corpus-n.perl's filters."""
    if not src or not tgt:
        return False
    ns, nt = len(src.split(" ")), len(tgt.split(" "))
    if not (min_len <= ns <= max_len and min_len <= nt <= max_len):
        return False
    if ns / nt > ratio or nt / ns > ratio:
        return False
    # the Perl script measures runs of non-space, non-'|' characters (words or factors)
    too_long = re.compile(f"[^{_PERL_SPACE}|]{{{max_word_length + 1}}}")
    return not (too_long.search(src) or too_long.search(tgt))


def clean_corpus(src_in, tgt_in, src_out, tgt_out, min_len=CLEAN_DEFAULTS["min"], max_len=CLEAN_DEFAULTS["max"],
                 ratio=CLEAN_DEFAULTS["ratio"], max_word_length=1000):
    """Returns (pairs read, pairs kept)."""
    n_in = n_out = 0
    factored = None
    with atomic_open_all([src_out, tgt_out]) as (fs, ft):
        for src, tgt in read_parallel([src_in, tgt_in], empty="error"):
            n_in += 1
            if factored is None:  # decided by the first pair only, as in the Perl script
                factored = "|" in src or "|" in tgt
            src, tgt = normalize(src, factored), normalize(tgt, factored)
            if not keep(src, tgt, min_len, max_len, ratio, max_word_length):
                continue
            if factored and (_BLANK_FACTOR.search(src) or _BLANK_FACTOR.search(tgt)):
                raise ValueError(f"blank factor in line {n_in}: {src!r} / {tgt!r}")
            fs.write(src + "\n")
            ft.write(tgt + "\n")
            n_out += 1
        if not n_out:  # inside the block: no output is left
            raise InputError(f"{src_in}, {tgt_in}: empty: no pairs after cleaning (of {n_in}); check "
                             f"the length limits (--min {min_len}, --max {max_len}, --ratio {ratio}) and the files")
    return n_in, n_out


def add_arguments(p):
    p.add_argument("--src-in", required=True, help="source text, one sentence per line")
    p.add_argument("--tgt-in", required=True, help="target text, line-aligned with --src-in")
    p.add_argument("--src-out", required=True, help="kept source lines")
    p.add_argument("--tgt-out", required=True, help="kept target lines")
    p.add_argument("--min", type=int, default=CLEAN_DEFAULTS["min"], help="minimum words per side")
    p.add_argument("--max", type=int, default=CLEAN_DEFAULTS["max"], help="maximum words per side")
    p.add_argument("--ratio", type=float, default=CLEAN_DEFAULTS["ratio"],
                   help="maximum word-count ratio either way")
    p.add_argument("--max-word-length", type=int, default=1000,
                   help="drop pairs with a longer word, in characters")


def run(args):
    n_in, n_out = clean_corpus(args.src_in, args.tgt_in, args.src_out, args.tgt_out,
                               args.min, args.max, args.ratio, args.max_word_length)
    print(f"clean: kept {n_out} of {n_in} sentence pairs", file=sys.stderr)
