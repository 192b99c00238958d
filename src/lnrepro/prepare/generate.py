"""`lnrepro generate`: the demo corpora (translation, monolingual, sentence-pair tasks) as files.

What they contain is lnrepro.prepare.demo_grammar's; this module writes each task's splits in the
layout of the real corpus it stands in for.
"""
import os
import random

from .demo_grammar import generate_documents, generate_pairs, generate_translation


def _write(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)


def write_task(task, out_dir, seed, n_train, n_test, n_valid=None, one_file=False):
    """Write the task's files into out_dir; returns their paths.

    deen/ende: train.{de,en} test.{de,en} (+ valid.* only if n_valid); mono: train.txt valid.txt
    (documents; valid gets n_valid or n_test), or with one_file docs.txt alone (the n_train train
    documents, for a pipeline that splits them itself); mrpc/rte: train.tsv dev.tsv (dev gets
    n_valid or n_test)."""
    if one_file and task != "mono":
        raise ValueError(f"one_file is for task mono, not {task}")
    os.makedirs(out_dir, exist_ok=True)
    paths = []

    def out(name, lines):
        paths.append(os.path.join(out_dir, name))
        _write(paths[-1], lines)

    if task in ("deen", "ende"):
        splits = [("train", n_train), ("test", n_test)] + ([("valid", n_valid)] if n_valid else [])
        for split, n in splits:
            pairs = generate_translation(task, n, seed, split)
            out(f"{split}.de", [de for de, _ in pairs])
            out(f"{split}.en", [en for _, en in pairs])
    elif task == "mono":
        files = [("docs.txt", "train", n_train)] if one_file else \
            [("train.txt", "train", n_train), ("valid.txt", "valid", n_valid or n_test)]
        for name, split, n in files:
            docs = generate_documents(n, seed, split)
            out(name, [line for i, d in enumerate(docs) for line in ([""] if i else []) + d])
    elif task in ("mrpc", "rte"):
        for split, n in (("train", n_train), ("dev", n_valid or n_test)):
            rows = generate_pairs(task, n, seed, split)
            if task == "mrpc":
                ids = random.Random(f"mrpc-ids/{split}/{seed}").sample(range(100000, 4000000), 2 * n)
                lines = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"] + \
                    [f"{y}\t{ids[2 * i]}\t{ids[2 * i + 1]}\t{a}\t{b}" for i, (a, b, y) in enumerate(rows)]
            else:
                lines = ["index\tsentence1\tsentence2\tlabel"] + [f"{i}\t{a}\t{b}\t{y}" for i, (a, b, y) in enumerate(rows)]
            out(f"{split}.tsv", lines)
    else:
        raise ValueError(f"unknown task: {task}")
    return paths


def add_arguments(parser):
    parser.add_argument("--task", required=True, choices=["deen", "ende", "mono", "mrpc", "rte"],
                        help="translation (deen, ende), monolingual documents (mono) or a GLUE-like pair task")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated text")
    parser.add_argument("--out-dir", required=True, help="folder the task's split files are written to")
    parser.add_argument("--n-train", type=int, required=True, help="pairs / documents / rows in train")
    parser.add_argument("--n-test", type=int, required=True, help="test pairs (mono: valid documents; GLUE: dev rows)")
    parser.add_argument("--n-valid", type=int, default=None,
                        help="valid split size (overrides --n-test for mono/GLUE); left out: none for deen/ende")
    parser.add_argument("--one-file", action="store_true",
                        help="mono: the --n-train documents alone in docs.txt (split later, as a real corpus is)")


def run(args):
    for path in write_task(args.task, args.out_dir, args.seed, args.n_train, args.n_test, args.n_valid,
                           args.one_file):
        print(path)
