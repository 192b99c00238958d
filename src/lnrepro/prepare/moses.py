"""The Moses preprocessing scripts that prepare-wmt14en2de.sh / prepare-iwslt14.sh run, per line.

sacremoses ports them; this module adds what a byte-for-byte match with the Perl scripts the
fairseq recipes clone (mosesdecoder master) needs beyond the port:

- `PunctNormalizer`: normalize-punctuation.perl. The substitutions of sacremoses'
  `MosesPunctNormalizer` with `perl_parity=True` (the Perl script turns a lone ’ into ", not '),
  without its final strip and with ASCII \\d, as the Perl script reads bytes; the line is normalised
  *with* its newline, as Perl's `$_` holds it: the German rule `s/(\\.+)\\"(\\s*[^<])/\\"$1$2/`
  then also moves a quote before a sentence-final period (`Hallo."` -> `Hallo".`), which the
  newline-less port never does. Languages other than en/cs get the German quote rule, as in Perl.
- `remove_non_printing`: remove-non-printing-char.perl, every character of Unicode general
  category C (control, format, surrogate, private use, unassigned) replaced by a space.
- `PerlTokenizer`: tokenizer.perl. sacremoses' `MosesTokenizer` plus (a) the rule mosesdecoder
  added in Nov 2018 (PR #204) that splits the period off the last word of a line
  unconditionally (`says vs.` -> `says vs .`; sacremoses keeps the old behaviour on purpose,
  its issue #97), (b) \\x1c-\\x1f removed rather than turned into spaces (Perl's `\\s` does not
  match them, its junk rule deletes them), (c) Perl's notion of a blank line, which is printed
  unchanged.
"""
import re
import unicodedata

from sacremoses import MosesPunctNormalizer, MosesTokenizer

# Perl's \s on character strings (Python's \s also matches \x1c-\x1f)
PERL_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_PERL_BLANK = re.compile(f"[{PERL_SPACE}]*")
_INFO_SEPARATORS = re.compile("[\x1c-\x1f]")
_ENDS_WITH_PERIOD = re.compile(r"^(\S+)\.$")


class PunctNormalizer:
    """normalize-punctuation.perl LANG, one line (without its newline) at a time.

    The substitutions are sacremoses' (perl_parity), applied here rather than by its
    `normalize()`, which strips the result: Perl prints leading and trailing spaces as they
    are (a line of spaces stays " ", which tokenizer.perl then prints as a blank line, not
    as an empty one). They are compiled with re.ASCII: mosesdecoder's script reads bytes
    (no :utf8 layer), so its \\d is [0-9] ("٣ %" keeps its space).
    """

    def __init__(self, lang):
        subs = MosesPunctNormalizer(lang, perl_parity=True).substitutions
        if lang not in ("en", "cs", "cz", "de", "es", "fr"):
            # Perl applies the "quotation", comma rule to every language but en and cs/cz;
            # sacremoses only to de/es/fr. It comes just before the final number rule.
            subs = subs[:-1] + list(MosesPunctNormalizer.DE_ES_FR_QUOTATION_FOLLOWED_BY_COMMA) + subs[-1:]
        self._subs = [(re.compile(pattern, re.ASCII), repl) for pattern, repl in subs]

    def __call__(self, line):
        text = line + "\n"  # Perl's $_ holds the newline; the German quote rule can see it
        for pattern, repl in self._subs:
            text = pattern.sub(repl, text)
        return text[:-1] if text.endswith("\n") else text


_non_printing = None


def _category_c_class():
    """A regex character class of every code point of general category C (built once)."""
    ranges, start = [], None
    for cp in range(0x110000):
        is_c = unicodedata.category(chr(cp))[0] == "C"
        if is_c and start is None:
            start = cp
        elif not is_c and start is not None:
            ranges.append((start, cp - 1))
            start = None
    if start is not None:
        ranges.append((start, 0x10FFFF))

    def esc(cp):
        return f"\\U{cp:08x}"
    return "[" + "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges) + "]"


_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")


def remove_non_printing(line):
    """remove-non-printing-char.perl: `s/\\p{C}/ /g` on one line (without its newline)."""
    global _non_printing
    if line.isascii():
        return _ASCII_CONTROL.sub(" ", line)
    if _non_printing is None:
        _non_printing = re.compile(_category_c_class())
    return _non_printing.sub(" ", line)


class PerlTokenizer(MosesTokenizer):
    """MosesTokenizer with tokenizer.perl's final-period rule (mosesdecoder since Nov 2018)."""

    def __init__(self, lang, split_final_period=True):
        super().__init__(lang=lang)
        self.split_final_period = split_final_period

    def handles_nonbreaking_prefixes(self, text):
        text = super().handles_nonbreaking_prefixes(text)
        if not self.split_final_period:
            return text
        tokens = text.split()
        if tokens:
            m = _ENDS_WITH_PERIOD.match(tokens[-1])
            if m:  # "split last words independently as they are unlikely to be non-breaking prefixes"
                tokens[-1] = m.group(1) + " ."
        return " ".join(tokens)

    def tokenize(self, text, *args, **kwargs):
        return super().tokenize(_INFO_SEPARATORS.sub("", text), *args, **kwargs)


def is_blank(line):
    """tokenizer.perl prints lines matching /^\\s*$/ unchanged."""
    return _PERL_BLANK.fullmatch(line) is not None
