"""English Wikipedia as docs text: one article a document, one paragraph a line.

Streams a MediaWiki pages-articles XML dump (bz2-compressed or plain) with iterparse, freeing
every page once read, so a 20 GB dump needs no more memory than its largest page. Kept: pages
of the main namespace (ns 0) that are not redirects; their wikitext goes through
wikitext.plain_paragraphs. Tags are matched by local name, so every export schema version
(xmlns .../export-0.10/, 0.11, ...) reads the same.
"""
import bz2
import sys
import xml.etree.ElementTree as ET

from . import atomic_open
from .documents import DocumentWriter
from .wikitext import plain_paragraphs


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def _open_dump(path):
    with open(path, "rb") as f:
        compressed = f.read(3) == b"BZh"
    return bz2.open(path, "rb") if compressed else open(path, "rb")


def _child_text(element, name):
    for child in element:
        if _local(child.tag) == name:
            return child.text or ""
    return None


def _article_text(page):
    """The wikitext of a main-namespace, non-redirect page; None for any other page."""
    ns = _child_text(page, "ns")
    if ns is not None and ns.strip() != "0":
        return None
    if any(_local(child.tag) == "redirect" for child in page):
        return None
    text = None
    for child in page:
        if _local(child.tag) == "revision":  # pages-articles holds one; take the last
            text = _child_text(child, "text")
    if text is None or text.lstrip()[:9].upper() == "#REDIRECT":  # older dumps: no <redirect/>
        return None
    return text


def articles(dump):
    """(title, wikitext) of each article in the dump, streamed."""
    with _open_dump(dump) as f:
        root = None
        for event, element in ET.iterparse(f, events=("start", "end")):
            if root is None:
                root = element
            if event != "end" or _local(element.tag) != "page":
                continue
            text = _article_text(element)
            if text is not None:
                yield _child_text(element, "title"), text
            root.clear()  # drop the pages read so far: memory stays that of one page


def prepare_wikipedia(dump, out, max_docs=None):
    """Write the dump's articles as docs text; returns (documents, paragraphs)."""
    with atomic_open(out) as f:
        writer = DocumentWriter(f)
        for _, text in articles(dump):
            if max_docs is not None and writer.documents >= max_docs:
                break
            writer.write(plain_paragraphs(text))
    return writer.documents, writer.lines


def add_arguments(p):
    p.add_argument("--dump", required=True, help="pages-articles XML dump, .xml.bz2 or plain .xml")
    p.add_argument("--out", required=True, help="docs text: a paragraph per line, blank line between articles")
    p.add_argument("--max-docs", type=int, default=None, help="stop after this many articles (default: all)")


def run(args):
    try:
        docs, paragraphs = prepare_wikipedia(args.dump, args.out, args.max_docs)
    except (OSError, ET.ParseError, EOFError) as e:
        sys.exit(f"lnrepro prepare-wikipedia: ERROR: {args.dump}: {e} (a truncated or corrupt dump?)")
    print(f"prepare-wikipedia: {docs} articles, {paragraphs} paragraphs -> {args.out}", file=sys.stderr)
