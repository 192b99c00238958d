"""Compare a prepared corpus's sentence-pair counts with what the recipe is known to produce.

prepare-iwslt14.sh gives 160,239 / 7,283 / 6,750 train / valid / test pairs from the real
de-en.tgz; newstest2014 has 3,003 lines. A difference is reported as a WARNING in the log
(and in the table), not an error: the data may legitimately differ (another archive, another
Moses version), but never silently.
"""
import csv
import os
import sys

from . import atomic_path


def count_lines(path):
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def _pairs(items, what):
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{what}: expected SPLIT=VALUE, got '{item}'")
        out[key] = value
    return out


def check_counts(files, expected, out, source="", log=None):
    """files: {split: path}; expected: {split: int}. Returns the list of mismatching splits.
    Messages go to log (default stderr); a WARNING goes to stderr as well."""
    log = log or sys.stderr
    rows, mismatches = [], []
    for split, path in files.items():
        n = count_lines(path)
        want = expected.get(split)
        ok = want is None or n == want
        rows.append({"split": split, "pairs": n, "expected": "" if want is None else want,
                     "status": "ok" if ok else "DIFFERS", "file": path})
        if not ok:
            mismatches.append(split)
            warning = (f"WARNING: {source + ': ' if source else ''}{split} has {n} sentence pairs, the recipe "
                       f"gives {want} ({n - want:+d}); {path}. The data differs from what the papers used.")
            for stream in {log, sys.stderr}:
                print(warning, file=stream, flush=True)
        else:
            print(f"check-counts: {split}: {n} pairs" + (" (as expected)" if want is not None else ""), file=log)
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["split", "pairs", "expected", "status", "file"], delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    return mismatches


def add_arguments(p):
    p.add_argument("--files", nargs="+", required=True, help="SPLIT=PATH (one side's file per split)")
    p.add_argument("--expect", nargs="*", default=[], help="SPLIT=COUNT")
    p.add_argument("--source", default="", help="what the data is (for the message)")
    p.add_argument("--out", required=True, help="table: split, pairs, expected, status")
    p.add_argument("--log", default=None,
                   help="messages go here (appended); WARNINGs also to stderr; left out: stderr only")


def run(args):
    files = _pairs(args.files, "--files")
    expected = {k: int(v) for k, v in _pairs(args.expect, "--expect").items()}
    unknown = set(expected) - set(files)
    if unknown:
        raise SystemExit(f"--expect names splits without --files: {sorted(unknown)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    log = open(args.log, "a", encoding="utf-8") if args.log else None
    try:
        check_counts(files, expected, args.out, args.source, log)
    finally:
        if log:
            log.close()
