"""Copy a UTF-8 text file line by line (the tok/ stage of a corpus that is already tokenized)."""
from . import atomic_open, read_lines, write_lines


def copy_text(in_path, out_path):
    with atomic_open(out_path) as out:
        write_lines(out, read_lines(in_path, empty="error"))


def add_arguments(p):
    p.add_argument("--input", required=True, help="text file to read")
    p.add_argument("--output", required=True, help="text file to write")


def run(args):
    copy_text(args.input, args.output)
