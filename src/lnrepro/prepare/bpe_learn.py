"""Learn joint BPE merges on the concatenation of the given files (subword-nmt learn-bpe).

Same as prepare-iwslt14.sh's `cat train.de train.en | learn_bpe.py -s 10000 > codes`.
"""

from subword_nmt.learn_bpe import learn_bpe

from . import InputError, atomic_open, read_lines


def _concatenated(paths):
    # learn_bpe only iterates over lines (and strips their newline), so streaming the
    # files one after another is the same as piping their concatenation
    for path in paths:
        yield from read_lines(path, empty="error")


def learn_joint_bpe(inputs, codes_path, merges=10000, min_frequency=2):
    with atomic_open(codes_path) as out:
        try:
            learn_bpe(_concatenated(inputs), out, merges, min_frequency=min_frequency)
        except ValueError as e:
            if isinstance(e, InputError) or "empty sequence" not in str(e):
                raise
            # subword-nmt's max() over the pair counts: the text has no word to merge in
            raise InputError(f"{', '.join(map(str, inputs))}: no word of two or more characters to "
                             "learn BPE merges from (blank lines only?)") from None


def add_arguments(p):
    p.add_argument("--inputs", nargs="+", required=True, help="files to learn from, in order")
    p.add_argument("--merges", type=int, default=10000, help="merge operations")
    p.add_argument("--codes", required=True, help="output codes file")
    p.add_argument("--min-frequency", type=int, default=2,
                   help="stop when the most frequent pair is rarer")


def run(args):
    learn_joint_bpe(args.inputs, args.codes, args.merges, args.min_frequency)
