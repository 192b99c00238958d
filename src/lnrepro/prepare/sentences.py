"""Split docs text into sentences with spaCy, as Xiong et al. (supplementary 1.3) do first.

The pipeline is `spacy.blank("en")` plus the rule-based "sentencizer": spaCy's English
tokenizer (whose exceptions keep "Dr." or "e.g." whole) and a split after sentence-final
punctuation. It needs no trained model, so nothing is downloaded; the parser-based segmenter
of a trained pipeline would be more accurate on hard cases and much slower on 3.4B words.
Output: one sentence per line, a blank line between documents; streamed through nlp.pipe.
"""
import sys

from . import atomic_open
from .documents import DocumentWriter, read_documents

# spaCy refuses longer texts (a safeguard sized for its parser); a paragraph beyond it, such as
# an unwrapped book without blank lines, is cut at a space into pieces of at most this length.
MAX_PARAGRAPH_CHARS = 100_000


def sentencizer():
    import spacy  # imported here: loading spaCy takes a while and only this step needs it

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def pieces(paragraph, limit=MAX_PARAGRAPH_CHARS):
    while len(paragraph) > limit:
        cut = paragraph.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        yield paragraph[:cut]
        paragraph = paragraph[cut:].lstrip()
    yield paragraph


def _numbered_paragraphs(inputs):
    for number, document in enumerate(read_documents(*inputs)):
        for paragraph in document:
            for piece in pieces(paragraph):
                yield piece, number


def sentence_texts(doc):
    """The sentences of one parsed text, stripped, none empty."""
    return [s for s in (span.text.strip() for span in doc.sents) if s]


def split_sentences(inputs, out, threads=1, batch_size=256):
    """Sentences of the documents of the input files (in order) -> out; returns (documents, sentences)."""
    nlp = sentencizer()
    parsed = nlp.pipe(_numbered_paragraphs(inputs), as_tuples=True, batch_size=batch_size,
                      n_process=threads)
    with atomic_open(out) as f:
        writer, current = DocumentWriter(f), None
        for doc, number in parsed:
            if number != current:
                writer.end_document()
                current = number
            for sentence in sentence_texts(doc):
                writer.add(sentence)
    return writer.documents, writer.lines


def add_arguments(p):
    p.add_argument("--inputs", nargs="+", required=True, help="docs text files, their documents in order")
    p.add_argument("--out", required=True, help="one sentence per line, blank line between documents")
    p.add_argument("--threads", type=int, default=1, help="spaCy worker processes")
    p.add_argument("--batch-size", type=int, default=256, help="paragraphs per spaCy batch")


def run(args):
    docs, n = split_sentences(args.inputs, args.out, args.threads, args.batch_size)
    print(f"split-sentences: {docs} documents, {n} sentences -> {args.out}", file=sys.stderr)
