"""Lowercase text line by line (Moses lowercase.perl).

--keep-case copies the text unchanged, so a workflow can run the same step for corpora
that are not lowercased.
"""
from . import atomic_open, read_lines, write_lines


def lowercase_file(in_path, out_path, keep_case=False):
    lines = read_lines(in_path, empty="error")
    with atomic_open(out_path) as out:
        write_lines(out, lines if keep_case else (line.lower() for line in lines))


def add_arguments(p):
    p.add_argument("--input", required=True, help="text file to read")
    p.add_argument("--output", required=True, help="text file to write")
    p.add_argument("--keep-case", action="store_true", help="copy without lowercasing")


def run(args):
    lowercase_file(args.input, args.output, args.keep_case)
