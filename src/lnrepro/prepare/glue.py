"""GLUE MRPC and RTE: train and dev sentence pairs, normalized to one format.

Inputs, in their published formats:
- a GLUE folder (RTE.zip unpacked, or GLUE's MRPC folder) with train.tsv and dev.tsv somewhere
  below it. RTE: `index, sentence1, sentence2, label` (entailment / not_entailment);
  MRPC: `Quality, #1 ID, #2 ID, #1 String, #2 String` (1 = paraphrase).
- MRPC from Microsoft's files, as GLUE's download_glue_data.py builds it: msr_paraphrase_train.txt
  (MRPC's format) split into train and dev by mrpc_dev_ids.tsv, whose rows are the (#1 ID,
  #2 ID) pairs of dev.
Files are read as tab-separated with quoting off (sentences contain quotes) and a BOM
stripped; a wrong header or column count stops with the file and line.

Output in OUT: {train,dev}.tsv with header `sentence1, sentence2, label` (label 0/1: MRPC
1 = paraphrase, RTE 1 = entailment), and the same columns as line files
{split}.sentence1, {split}.sentence2, {split}.label for the line-based tokenize/BPE steps.
"""
import os
import sys

from . import atomic_open_all, read_lines, write_lines
from .sources import find_member

HEADERS = {
    "mrpc": ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
    "rte": ["index", "sentence1", "sentence2", "label"],
}
LABELS = {"mrpc": {"0": 0, "1": 1}, "rte": {"not_entailment": 0, "entailment": 1}}
SPLITS = ("train", "dev")
COLUMNS = ("sentence1", "sentence2", "label")


class GlueFormatError(ValueError):
    pass


def read_tsv(path, header):
    """(line number, fields) of each row after the header; quoting off, BOM and \\r stripped,
    blank lines skipped. Raises GlueFormatError naming file and line."""
    for number, line in enumerate(read_lines(path), start=1):
        line = line.rstrip("\r")
        if number == 1:
            line = line.lstrip("\ufeff")
            if line.split("\t") != header:
                raise GlueFormatError(f"{path}, line 1: header {line.split(chr(9))} is not {header}")
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise GlueFormatError(f"{path}, line {number}: {len(fields)} tab-separated columns, "
                                  f"expected {len(header)} ({', '.join(header)})")
        yield number, fields


def _label(task, value, path, number):
    try:
        return LABELS[task][value.strip()]
    except KeyError:
        raise GlueFormatError(f"{path}, line {number}: label '{value}' is not one of "
                              f"{sorted(LABELS[task])}") from None


def read_rows(task, path):
    """(fields, (sentence1, sentence2, label 0/1)) of each row of a file in the task's GLUE format."""
    for number, fields in read_tsv(path, HEADERS[task]):
        if task == "mrpc":
            label, s1, s2 = fields[0], fields[3], fields[4]
        else:
            s1, s2, label = fields[1], fields[2], fields[3]
        yield fields, (s1.strip(), s2.strip(), _label(task, label, path, number))


def read_pairs(task, path):
    return [pair for _, pair in read_rows(task, path)]


def read_dev_ids(path):
    """The (#1 ID, #2 ID) pairs of GLUE's MRPC dev split; one tab-separated pair a line."""
    ids = set()
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.strip().lstrip("\ufeff").split("\t")
        if fields == [""]:
            continue
        if len(fields) != 2:
            raise GlueFormatError(f"{path}, line {number}: {len(fields)} tab-separated columns, "
                                  f"expected 2 (#1 ID, #2 ID)")
        ids.add(tuple(fields))
    return ids


def split_msr(train_path, dev_ids_path):
    """{'train': rows, 'dev': rows} from Microsoft's training file, as download_glue_data.py splits it."""
    dev_ids = read_dev_ids(dev_ids_path)
    splits, found = {"train": [], "dev": []}, set()
    for fields, pair in read_rows("mrpc", train_path):
        ids = (fields[1].strip(), fields[2].strip())
        if ids in dev_ids:
            found.add(ids)
        splits["dev" if ids in dev_ids else "train"].append(pair)
    if len(found) < len(dev_ids):
        print(f"prepare-glue: WARNING: {len(dev_ids) - len(found)} of {len(dev_ids)} dev id pairs of "
              f"{dev_ids_path} are not in {train_path}", file=sys.stderr)
    return splits


def write_splits(splits, out_dir):
    """OUT/{split}.tsv and the per-column line files of each split."""
    os.makedirs(out_dir, exist_ok=True)
    for split, rows in splits.items():
        paths = [os.path.join(out_dir, f"{split}.tsv")] + [os.path.join(out_dir, f"{split}.{c}") for c in COLUMNS]
        with atomic_open_all(paths) as (tsv, *columns):
            write_lines(tsv, ["\t".join(COLUMNS)] + ["\t".join(map(str, row)) for row in rows])
            for i, f in enumerate(columns):
                write_lines(f, (str(row[i]) for row in rows))


def prepare_glue(task, out_dir, glue_dir=None, msr_train=None, dev_ids=None):
    """Returns {split: pair count}."""
    if glue_dir:
        splits = {split: read_pairs(task, find_member([glue_dir], f"{split}.tsv")) for split in SPLITS}
    elif task == "mrpc" and msr_train and dev_ids:
        splits = split_msr(msr_train, dev_ids)
    else:
        raise ValueError("give --glue-dir, or for mrpc --msr-train and --dev-ids")
    write_splits(splits, out_dir)
    return {split: len(rows) for split, rows in splits.items()}


def add_arguments(p):
    p.add_argument("--task", required=True, choices=sorted(HEADERS), help="the GLUE task")
    p.add_argument("--out-dir", required=True, help="receives {train,dev}.tsv and their column files")
    p.add_argument("--glue-dir",
                   help="folder with the task's GLUE-format train.tsv and dev.tsv (searched below); or, for "
                        "mrpc, --msr-train and --dev-ids")
    p.add_argument("--msr-train", help="mrpc: msr_paraphrase_train.txt (split into train and dev by --dev-ids)")
    p.add_argument("--dev-ids", help="mrpc: GLUE's mrpc_dev_ids.tsv")


def run(args):
    try:
        counts = prepare_glue(args.task, args.out_dir, args.glue_dir, args.msr_train, args.dev_ids)
    except (OSError, ValueError) as e:
        sys.exit(f"lnrepro prepare-glue: ERROR: {e}")
    labels = ", ".join(f"{label} = {name}" for name, label in LABELS[args.task].items())
    print(f"prepare-glue: {args.task}: " + ", ".join(f"{s} {n} pairs" for s, n in counts.items())
          + f" (labels {labels}) -> {args.out_dir}", file=sys.stderr)
