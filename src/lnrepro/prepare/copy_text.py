"""Copy a UTF-8 text file line by line (the tok/ stage of a corpus that is already tokenized)."""
from .local import copy_text


def add_arguments(p):
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)


def run(args):
    copy_text(args.input, args.output)
