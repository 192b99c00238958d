"""Lowercase text line by line (Moses lowercase.perl)."""
from . import atomic_open, read_lines, write_lines


def lowercase_file(in_path, out_path):
    with atomic_open(out_path) as out:
        write_lines(out, (line.lower() for line in read_lines(in_path)))


def add_arguments(p):
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)


def run(args):
    lowercase_file(args.input, args.output)
