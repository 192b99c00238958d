"""IWSLT14 De-En raw text from the extracted `de-en.tgz`, as fairseq's prepare-iwslt14.sh reads it.

Writes OUT/train.{de,en} and OUT/test.{de,en}; the generic chain does the rest (Moses
tokenization without -a, clean-corpus-n 1-175 / ratio 1.5 on cased tokens, lowercasing,
every 23rd train line to valid, joint BPE).

- train: `de-en/train.tags.de-en.{de,en}` minus every line containing `<url>`, `<talkid>` or
  `<keywords>`; `<title>`, `</title>`, `<description>`, `</description>` removed, their text
  kept (`grep -v ... | sed -e 's/<title>//g' ...`). Every other line (including other tags) stays.
- test: the `<seg id>` lines of IWSLT14.TED.dev2010, IWSLT14.TEDX.dev2012, IWSLT14.TED.tst2010,
  tst2011, tst2012 (`de-en/NAME.de-en.{de,en}.xml`), in that order, tags stripped, ’ -> '.
"""
import os

from . import read_lines
from .sources import MissingMember, find_member, log, raw_directory, seg_text, write_parallel

TRAIN_DROP = ("<url>", "<talkid>", "<keywords>")
TRAIN_STRIP = ("<title>", "</title>", "<description>", "</description>")
TEST_SETS = ("IWSLT14.TED.dev2010", "IWSLT14.TEDX.dev2012", "IWSLT14.TED.tst2010",
             "IWSLT14.TED.tst2011", "IWSLT14.TED.tst2012")


def train_text(lines):
    for line in lines:
        if any(tag in line for tag in TRAIN_DROP):
            continue
        for tag in TRAIN_STRIP:
            line = line.replace(tag, "")
        yield line


def test_text(paths):
    for path in paths:
        yield from seg_text(read_lines(path))


def _pair_dir(roots, src, tgt):
    for pair in (f"{src}-{tgt}", f"{tgt}-{src}"):
        try:
            find_member(roots, f"{pair}/train.tags.{pair}.{src}")
            return pair
        except MissingMember:
            pass
    raise MissingMember(f"no {src}-{tgt}/train.tags.{src}-{tgt}.{src} (or {tgt}-{src}/...) below "
                        f"{', '.join(roots)}: is this IWSLT14's de-en.tgz?")


def prepare_iwslt14(roots, src, tgt, out_dir):
    """Returns {split: pairs}."""
    pair = _pair_dir(roots, src, tgt)
    train = {l: find_member(roots, f"{pair}/train.tags.{pair}.{l}") for l in (src, tgt)}
    test = {l: [find_member(roots, f"{pair}/{name}.{pair}.{l}.xml") for name in TEST_SETS] for l in (src, tgt)}
    counts = {}
    with raw_directory(out_dir) as tmp:
        counts["train"] = write_parallel(
            [os.path.join(tmp, f"train.{l}") for l in (src, tgt)],
            [train_text(read_lines(train[l])) for l in (src, tgt)], "IWSLT14 train.tags")
        counts["test"] = write_parallel(
            [os.path.join(tmp, f"test.{l}") for l in (src, tgt)],
            [test_text(test[l]) for l in (src, tgt)], "IWSLT14 test (" + " + ".join(TEST_SETS) + ")")
    for l in (src, tgt):
        log(f"prepare-iwslt14: train.{l} <- {train[l]}")
        log(f"prepare-iwslt14: test.{l} <- " + " + ".join(test[l]))
    log(f"prepare-iwslt14: {counts['train']} train lines (before tokenization and cleaning), "
        f"{counts['test']} test lines -> {out_dir}")
    return counts


def add_arguments(p):
    p.add_argument("--roots", nargs="+", required=True, help="extracted archive folder(s)")
    p.add_argument("--src", required=True, help="source language (de)")
    p.add_argument("--tgt", required=True, help="target language (en)")
    p.add_argument("--out-dir", required=True, help="raw folder to create: train.LANG, test.LANG")


def run(args):
    try:
        prepare_iwslt14(args.roots, args.src, args.tgt, args.out_dir)
    except (MissingMember, ValueError) as e:
        raise SystemExit(f"lnrepro prepare-iwslt14: ERROR: {e}")
