"""The "docs text" format every BERT-corpus step reads and writes.

UTF-8, one paragraph (or, after split-sentences, one sentence) per line, documents separated
by a blank line. A whitespace-only line counts as blank, and runs of blank lines as one
separator, so a hand-edited file reads the same; writers never emit an empty document.
"""
from . import read_lines


def is_separator(line):
    return not line.strip()


def read_documents(*paths):
    """Documents (lists of their non-blank lines) of the files in order, streamed."""
    for path in paths:
        lines = []
        for line in read_lines(path):
            if not is_separator(line):
                lines.append(line)
            elif lines:
                yield lines
                lines = []
        if lines:
            yield lines


class DocumentWriter:
    """Writes documents to an open text file with one blank line between them.

    Lines can be added one at a time (`add`, then `end_document`), so a streaming step never
    holds a whole document; a document that got no line leaves no trace.
    """

    def __init__(self, f):
        self.f = f
        self.documents = self.lines = 0
        self._open = False  # the current document has a line already

    def add(self, line):
        if not self._open:
            if self.documents:
                self.f.write("\n")
            self.documents += 1
            self._open = True
        self.f.write(line)
        self.f.write("\n")
        self.lines += 1

    def end_document(self):
        self._open = False

    def write(self, lines):
        for line in lines:
            self.add(line)
        self.end_document()
