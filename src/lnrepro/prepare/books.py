"""A folder of books as docs text: the BookCorpus stand-in.

The original BookCorpus (Zhu et al. 2015) is no longer distributed; Xiong et al. crawled their
own, as Devlin et al. suggest. Whatever the user collects goes in one folder: every *.txt below
it (recursively, in sorted path order, so the output does not depend on the file system) is one
document; its paragraphs are split on blank lines and the lines inside a paragraph are joined
with a space (hard-wrapped text reads as the prose it is).
"""
import os
import sys

from . import atomic_open, empty_input
from .documents import DocumentWriter, read_documents


def book_files(directory):
    found = []
    for root, _, files in os.walk(directory):
        found += [os.path.join(root, name) for name in files if name.endswith(".txt")]
    if not found:
        raise FileNotFoundError(f"no *.txt files below {directory}: put the books there, one UTF-8 .txt file each")
    return sorted(found)


def paragraphs(path):
    """The file's paragraphs, each one line; streamed. (Blank-line-separated groups of lines are
    what read_documents yields: here they are paragraphs.)"""
    for lines in read_documents(path):
        yield " ".join(line.strip() for line in lines)


def prepare_books(directory, out):
    """Write every book below directory as one document; returns (documents, paragraphs)."""
    with atomic_open(out) as f:
        writer = DocumentWriter(f)
        for path in book_files(directory):
            writer.write(paragraphs(path))  # not UTF-8: InputError with the file and line
        if not writer.documents:  # inside the block: no output is left
            raise empty_input(directory, "paragraphs", "its *.txt files are empty or blank")
    return writer.documents, writer.lines


def add_arguments(p):
    p.add_argument("--dir", required=True, help="folder of books, one UTF-8 *.txt file each (searched recursively)")
    p.add_argument("--out", required=True, help="docs text: a paragraph per line, blank line between books")


def run(args):
    try:
        docs, paragraphs_written = prepare_books(args.dir, args.out)
    except (OSError, ValueError) as e:
        sys.exit(f"lnrepro prepare-books: ERROR: {e}")
    print(f"prepare-books: {docs} books, {paragraphs_written} paragraphs -> {args.out}", file=sys.stderr)
