"""Split every N-th line of parallel files off as validation data.

prepare-iwslt14.sh does `awk '{if (NR%23 == 0) print $0;}'` for valid and the
complement for train: 1-based line numbers divisible by N go to valid.
"""
import sys

from . import atomic_open_all, read_parallel, warn


def split_valid(inputs, train_outputs, valid_outputs, every=23):
    if not len(inputs) == len(train_outputs) == len(valid_outputs):
        raise ValueError("need as many --train-outputs and --valid-outputs as --inputs")
    counts = [0, 0]
    with atomic_open_all(train_outputs) as train, atomic_open_all(valid_outputs) as valid:
        for number, row in enumerate(read_parallel(inputs, empty="error"), start=1):
            is_valid = number % every == 0
            counts[is_valid] += 1
            for f, line in zip(valid if is_valid else train, row):
                f.write(line + "\n")
    if not counts[1]:  # legitimate for a file operation, though training will want a valid set
        warn(f"{', '.join(map(str, inputs))}: {counts[0]} lines, fewer than --every {every}: the valid split is empty")
    return tuple(counts)


def add_arguments(p):
    p.add_argument("--every", type=int, default=23, help="line-number modulus")
    p.add_argument("--inputs", nargs="+", required=True, help="line-aligned text files to split alike")
    p.add_argument("--train-outputs", nargs="+", required=True, help="one per input: the lines kept for train")
    p.add_argument("--valid-outputs", nargs="+", required=True, help="one per input: every Nth line (--every)")


def run(args):
    n_train, n_valid = split_valid(args.inputs, args.train_outputs, args.valid_outputs,
                                   args.every)
    print(f"split-valid: {n_train} train, {n_valid} valid lines", file=sys.stderr)
