"""Split documents at random into train and valid, `ratio`:1 (Xiong et al.: 199:1).

Whole documents go to one side, so no validation sentence has its neighbours in training.
Streamed: each document's side is drawn from a generator seeded with --seed (valid with
probability 1/(ratio+1)), so the split is the same on every machine and rerun. Both sides must
not be empty (BPE is learned on train, validation loss needs valid): the last document is held
back and goes to a side that would otherwise stay empty.
"""
import random
import sys

from . import atomic_open_all
from .documents import DocumentWriter, read_documents


def split_documents(in_path, train_out, valid_out, ratio=199, seed=1):
    """Returns (train documents, valid documents)."""
    if ratio < 1:
        raise ValueError(f"--ratio must be at least 1, not {ratio}")
    draw = random.Random(seed)
    with atomic_open_all([train_out, valid_out]) as (train_file, valid_file):
        train, valid = DocumentWriter(train_file), DocumentWriter(valid_file)
        held = None  # (document, its drawn writer), written once the next one is read
        for document in read_documents(in_path):
            if held:
                held[1].write(held[0])
            held = document, valid if draw.randrange(ratio + 1) == 0 else train
        if held:
            side = valid if not valid.documents else train if not train.documents else held[1]
            side.write(held[0])
        if not (train.documents and valid.documents):
            raise ValueError(f"{in_path}: {train.documents + valid.documents} document(s); "
                             f"a train/valid split needs at least 2")
    return train.documents, valid.documents


def add_arguments(p):
    p.add_argument("--input", required=True, help="docs text (one sentence per line, blank line between documents)")
    p.add_argument("--train-out", required=True, help="docs text of the train documents")
    p.add_argument("--valid-out", required=True, help="docs text of the valid documents")
    p.add_argument("--ratio", type=int, default=199, help="train:valid documents, N:1")
    p.add_argument("--seed", type=int, default=1, help="seed of the random split")


def run(args):
    try:
        n_train, n_valid = split_documents(args.input, args.train_out, args.valid_out, args.ratio, args.seed)
    except ValueError as e:
        sys.exit(f"lnrepro split-documents: ERROR: {e}")
    print(f"split-documents: {n_train} train, {n_valid} valid documents (ratio {args.ratio}:1, "
          f"seed {args.seed})", file=sys.stderr)
