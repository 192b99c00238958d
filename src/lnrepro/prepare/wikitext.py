"""Wikitext -> plain paragraphs, the text a reader of the rendered article sees (roughly).

Not a MediaWiki parser: what BERT-style corpora need is the running prose. Templates,
tables, references, comments, files and categories carry little of it and are dropped whole;
links keep their visible label; formatting marks and HTML tags go, their text stays.
Headings, magic words and table remnants are dropped line by line; every other non-blank line
is one paragraph (a list item too, without its bullet).
"""
import html
import re

# tags whose content is not prose: dropped with it (HTML comments separately)
_DROPPED_ELEMENTS = ("ref", "math", "chem", "gallery", "timeline", "syntaxhighlight", "source", "score",
                     "graph", "imagemap", "templatedata", "references", "mapframe", "hiero")
_ELEMENT = re.compile(r"<(%s)\b[^>]*?(?:/>|>.*?</\1\s*>)" % "|".join(_DROPPED_ELEMENTS),
                      re.IGNORECASE | re.DOTALL)
_UNCLOSED_ELEMENT = re.compile(r"<(%s)\b[^>]*>" % "|".join(_DROPPED_ELEMENTS), re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)  # an unclosed comment hides the rest
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*\b[^<>]*>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# innermost [[...]]: a file caption may hold links, so links are resolved from the inside out
_INNER_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_NON_TEXT_LINK = re.compile(r"^\s*:?\s*(?:file|image|media|category)\s*:", re.IGNORECASE)
_EXTERNAL_LINK = re.compile(r"\[(?:(?:https?|ftp):)?//[^\s\]]+(?:\s+([^\]]*))?\]")
_QUOTES = re.compile(r"'{2,}")  # ''italic'', '''bold''', '''''both'''''
_HEADING = re.compile(r"^=+.*=+$")
_LIST_MARKS = re.compile(r"^[*#:;]+\s*")
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
# left behind by dropped templates: "(née Byron; {{IPA|..}})" -> "(née Byron)", "({{lang|..}})" -> ""
_DANGLING_SEPARATOR = re.compile(r"(?:\(\s*[,;]\s*|\s*[,;]\s*\))")
_EMPTY_PARENS = re.compile(r"\(\s*\)")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;])")  # "born {{date}} , in" -> "born, in"
_SPACES = re.compile(r"\s+")


def drop_nested(text, opener, closer):
    """Text without the (possibly nested) opener...closer spans; an unclosed span runs to the end."""
    out, depth, start = [], 0, 0
    for m in re.finditer(f"{re.escape(opener)}|{re.escape(closer)}", text):
        if m.group() == opener:
            if depth == 0:
                out.append(text[start:m.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                start = m.end()
    if depth == 0:
        out.append(text[start:])
    return "".join(out)


def _link_text(m):
    inner = m.group(1)
    if _NON_TEXT_LINK.match(inner):
        return ""
    target, _, label = inner.partition("|")
    return (label or target).strip()


def resolve_links(text):
    """[[a|b]] -> b, [[a]] -> a, file/image/category links -> nothing; [http://x y] -> y."""
    while True:
        text, n = _INNER_LINK.subn(_link_text, text)
        if not n:
            break
    return _EXTERNAL_LINK.sub(lambda m: m.group(1) or "", text)


def _paragraph(line):
    line = _LIST_MARKS.sub("", line.strip())
    if not line or _HEADING.match(line) or line[0] in "|!{}" or line.startswith("----"):
        return ""
    line = html.unescape(line)  # last: an escaped "&lt;ref&gt;" is text, not a tag
    line = _EMPTY_PARENS.sub("", _DANGLING_SEPARATOR.sub(lambda m: m.group().strip(" ,;"), line))
    return _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", line)).strip()


def plain_paragraphs(wikitext):
    """The article's paragraphs as plain text, in order."""
    text = _COMMENT.sub("", wikitext)
    text = _UNCLOSED_ELEMENT.sub("", _ELEMENT.sub("", text))
    text = drop_nested(text, "{{", "}}")
    text = drop_nested(text, "{|", "|}")
    text = resolve_links(text)
    text = _BREAK.sub(" ", text)
    text = _TAG.sub("", text)
    text = _MAGIC_WORD.sub("", _QUOTES.sub("", text))
    return [p for p in map(_paragraph, text.split("\n")) if p]
