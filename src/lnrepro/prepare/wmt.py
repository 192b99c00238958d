"""WMT14 En-De raw text from the extracted archives, as prepare-wmt14en2de.sh --icml17 reads them.

Writes OUT/train.{en,de} (europarl v7, commoncrawl, news-commentary v9 concatenated in that
order), OUT/test.{en,de} (newstest2014 from test-full/newstest2014-deen-{src,ref}.{en,de}.sgm:
`<seg id>` lines, tags stripped, ’ -> ', 3003 lines) and, with --valid-set (e.g. newstest2013
from dev.tgz, as the paper text says), OUT/valid.{en,de} the same way. The per-line Moses
steps (normalize-punctuation, remove-non-printing-char on train, tokenizer -a) are the
tokenize rule's; cleaning comes after BPE.

Training bytes that are not UTF-8 are decoded as U+FFFD (Perl's :utf8 layer would pass them
on with a warning); the log counts such lines.
"""
import os

from . import read_lines
from .sources import MissingMember, find_any, find_member, log, raw_directory, seg_text, write_parallel

ICML17_TRAIN = ("training/europarl-v7.de-en", "commoncrawl.de-en", "training/news-commentary-v9.de-en")


class _Decoder:
    def __init__(self):
        self.bad = 0

    def lines(self, path):
        with open(path, "rb") as f:
            for raw in f:
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError:
                    self.bad += 1
                    yield raw.decode("utf-8", errors="replace")


def sgm_path(roots, name, kind, lang, src, tgt):
    """NAME-PAIR-KIND.LANG.sgm (newstest2014-deen-src.en.sgm) or NAME-KIND.LANG.sgm (dev/)."""
    candidates = [f"{name}-{a}{b}-{kind}.{lang}.sgm" for a, b in ((src, tgt), (tgt, src))]
    return find_any(roots, candidates + [f"{name}-{kind}.{lang}.sgm"])


def _sgm_pair(roots, name, src, tgt):
    return {src: sgm_path(roots, name, "src", src, src, tgt), tgt: sgm_path(roots, name, "ref", tgt, src, tgt)}


def prepare_wmt14(roots, src, tgt, out_dir, train_corpora=ICML17_TRAIN, test_set="newstest2014",
                  valid_set=None):
    """Returns {split: lines}."""
    train = {l: [find_member(roots, f"{c}.{l}") for c in train_corpora] for l in (src, tgt)}
    sets = {"test": _sgm_pair(roots, test_set, src, tgt)}
    if valid_set:
        sets["valid"] = _sgm_pair(roots, valid_set, src, tgt)
    counts = {}
    decoder = _Decoder()
    with raw_directory(out_dir) as tmp:
        counts["train"] = 0
        outs = [open(os.path.join(tmp, f"train.{l}"), "w", encoding="utf-8", newline="\n") for l in (src, tgt)]
        try:
            for i, corpus in enumerate(train_corpora):
                # corpus by corpus, so a corpus whose sides differ in length is named
                parts = [os.path.join(tmp, f".part.{l}") for l in (src, tgt)]
                n = write_parallel(parts, [decoder.lines(train[l][i]) for l in (src, tgt)], corpus)
                for part, out in zip(parts, outs):
                    with open(part, encoding="utf-8", newline="\n") as f:
                        for line in f:
                            out.write(line)
                    os.remove(part)
                counts["train"] += n
                log(f"prepare-wmt14: {corpus}: {n} lines ({train[src][i]}, {train[tgt][i]})")
        finally:
            for out in outs:
                out.close()
        for split, files in sets.items():
            counts[split] = write_parallel(
                [os.path.join(tmp, f"{split}.{l}") for l in (src, tgt)],
                [seg_text(read_lines(files[l])) for l in (src, tgt)], f"{split} ({files[src]}, {files[tgt]})")
            log(f"prepare-wmt14: {split}: {counts[split]} lines <- {files[src]}, {files[tgt]}")
    if decoder.bad:
        log(f"prepare-wmt14: WARNING: {decoder.bad} training lines were not valid UTF-8 "
            f"(bad bytes decoded as U+FFFD)")
    log(f"prepare-wmt14: {counts} -> {out_dir}")
    return counts


def add_arguments(p):
    p.add_argument("--roots", nargs="+", required=True, help="extracted archive folder(s)")
    p.add_argument("--src", required=True, help="source language (en)")
    p.add_argument("--tgt", required=True, help="target language (de)")
    p.add_argument("--train-corpora", nargs="+", default=list(ICML17_TRAIN),
                   help="member prefixes, files PREFIX.LANG (default: the --icml17 set)")
    p.add_argument("--test-set", default="newstest2014", help="SGML test set name")
    p.add_argument("--valid-set", default=None,
                   help="SGML validation set name, e.g. newstest2013; left out: no valid split")
    p.add_argument("--out-dir", required=True, help="raw folder to create: train/test[/valid].LANG")


def run(args):
    try:
        prepare_wmt14(args.roots, args.src, args.tgt, args.out_dir, args.train_corpora, args.test_set,
                      args.valid_set)
    except (MissingMember, ValueError) as e:
        raise SystemExit(f"lnrepro prepare-wmt14: ERROR: {e}")
