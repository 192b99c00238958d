"""Moses fidelity: tokenizer.perl, normalize-punctuation.perl and remove-non-printing-char.perl.

The expected strings are what the Perl scripts of mosesdecoder master (the version fairseq's
recipes clone) print for each input, worked out from the scripts' rules; each case says which
rule it exercises. tokenizer.perl: `-l LANG` (+ `-a`), escaping on, the final-period rule of
master (a line's last word loses its period even after a non-breaking prefix).
"""
import pytest

from lnrepro.prepare import moses
from lnrepro.prepare.tokenize import tokenize_file


def tokenize(lang, lines, tmp_path, **options):
    src = tmp_path / f"in.{lang}"
    src.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / f"out.{lang}"
    tokenize_file(src, out, lang, split_final_period=True, **options)
    return out.read_text(encoding="utf-8").split("\n")[:-1]


# (input, expected tokenizer.perl -l en output)
ENGLISH = [
    # every escaped character: & | < > ' " [ ]; "<tag>" and brackets padded as "other" characters
    ('This is a "test" & more: <tag> | [x].',
     "This is a &quot; test &quot; &amp; more : &lt; tag &gt; &#124; &#91; x &#93; ."),
    # English apostrophes: n't stays with its word's end ('t), possessives, "1990's"
    ("Don't stop, it's the 1990's and the dogs' bowl.",
     "Don &apos;t stop , it &apos;s the 1990 &apos;s and the dogs &apos; bowl ."),
    # a line-initial apostrophe has nothing before it: the rules that split it need a character
    ("'Hello,' she said.", "&apos;Hello , &apos; she said ."),
    # non-breaking prefixes: Mr./Dr. always, No. only before a number (#NUMERIC_ONLY#)
    ("Mr. Smith met Dr. Jones at No. 10, not No. Limit.",
     "Mr. Smith met Dr. Jones at No. 10 , not No . Limit ."),
    # an abbreviation with inner periods, a word before a lowercase word, and the last word:
    # master splits the final period even off a known prefix ("vs.")
    ("e.g. this vs. that, says vs.", "e.g. this vs. that , says vs ."),
    # multi-dots stay one token; ? ! $ % ( ) padded; 5,300.50 is one number
    ("Wait... what?! It costs $5,300.50 (about 20%).",
     "Wait ... what ? ! It costs $ 5,300.50 ( about 20 % ) ."),
    # commas between letters are split even without spaces; a number's final comma too
    ("A,B,C and 5,", "A , B , C and 5 ,"),
]

# (input, expected tokenizer.perl -l de output)
GERMAN = [
    # „ “ padded; decimal comma and thousands point kept; Mio. before a capital stays (prefix)
    ("Er sagte: „Die E-Mail kostet 3,5 Mio. bzw. 1.000 Euro.“",
     "Er sagte : „ Die E-Mail kostet 3,5 Mio. bzw. 1.000 Euro . “"),
    # inner-period abbreviations (z.B., d.h.) stay whole mid-line
    ("Das sind z.B. 2,5 Mio. Euro, d.h. sehr viel.",
     "Das sind z.B. 2,5 Mio. Euro , d.h. sehr viel ."),
    # ordinal "3." (1-99 are German prefixes) stays; the last word's period is split off
    ("Am 3. Oktober kostete es 5 Mio.", "Am 3. Oktober kostete es 5 Mio ."),
    ("Es gibt z.B.", "Es gibt z.B ."),
    # non-English apostrophes are split off on both sides
    ("Das ist's, sagt er.", "Das ist &apos; s , sagt er ."),
    ('a|b <i> [x] & "y"', "a &#124; b &lt; i &gt; &#91; x &#93; &amp; &quot; y &quot;"),
]


@pytest.mark.parametrize("lang, cases", [("en", ENGLISH), ("de", GERMAN)])
def test_tokenizer_perl(tmp_path, lang, cases):
    assert tokenize(lang, [c for c, _ in cases], tmp_path) == [e for _, e in cases]


def test_tokenizer_perl_aggressive_hyphens(tmp_path):
    lines = ["The state-of-the-art E-mail--system costs 5-10 euros.",
             "Die E-Mail-Adresse von Müller-Lüdenscheidt."]
    # -a: a hyphen between two alphanumerics becomes @-@; "--" is not between alphanumerics
    assert tokenize("en", lines[:1], tmp_path, aggressive_dash=True) == [
        "The state @-@ of @-@ the @-@ art E @-@ mail--system costs 5 @-@ 10 euros ."]
    assert tokenize("de", lines[1:], tmp_path, aggressive_dash=True) == [
        "Die E @-@ Mail @-@ Adresse von Müller @-@ Lüdenscheidt ."]
    assert tokenize("en", lines[:1], tmp_path) == [
        "The state-of-the-art E-mail--system costs 5-10 euros ."]


def test_tokenizer_blank_and_junk(tmp_path):
    # tokenizer.perl prints a whitespace-only line unchanged; \x1c-\x1f are deleted (Perl's \s
    # does not match them), not turned into spaces; tabs and runs of spaces become one space
    assert tokenize("en", ["   ", "a\x1cb", "a \t  b"], tmp_path) == ["   ", "ab", "a b"]


def test_old_tokenizer_keeps_a_final_prefix_period(tmp_path):
    # without split_final_period: tokenizer.perl before Nov 2018 (and sacremoses) keeps a
    # known prefix's period on the last word, and splits any other
    cases = [("en", "He says vs.", "He says vs."), ("de", "Es kostet 5 Mio.", "Es kostet 5 Mio."),
             ("de", "Das Haus.", "Das Haus .")]
    for lang, line, expected in cases:
        src = tmp_path / f"in.{lang}"
        src.write_text(line + "\n", encoding="utf-8")
        tokenize_file(src, tmp_path / "out", lang)
        assert (tmp_path / "out").read_text(encoding="utf-8") == expected + "\n"


# (language, input, expected normalize-punctuation.perl LANG output, without the newline)
NORMALIZE = [
    # „ “ ” become "; German moves a comma after the closing quote: ," -> ",
    ("de", "„Hallo“, sagte er.", '"Hallo", sagte er.'),
    # German/other: s/(\.+)"(\s*[^<])/"$1$2/ also fires before the line's newline
    ("de", "Er sagte „Hallo.“", 'Er sagte "Hallo".'),
    ("de", "Er sagte „Hallo.“ Dann ging er.", 'Er sagte "Hallo". Dann ging er.'),
    # English moves , and . inside the closing quote
    ("en", "He said “Hello”, then left.", 'He said "Hello," then left.'),
    ("en", "He said “Hello”.", 'He said "Hello."'),
    # « » become " (the space rules around them need no-break spaces, not plain ones)
    ("fr", "Il dit « bonjour » et «salut».", 'Il dit " bonjour " et "salut".'),
    # runs of spaces collapse; a space goes before "(" and after ")" and then before punctuation
    # and inside the parentheses it is removed
    ("de", "Das  ist   gut  ( sehr gut ) .", "Das ist gut (sehr gut)."),
    # en dash -> -, em dash -> " - "
    ("en", "a – b — c", "a - b - c"),
    # ´ -> '; ’ between letters -> '; ‘ -> '; any other ’ -> " (Perl's version, not sacremoses')
    ("en", "It´s ‘quoted’ and Peter’s ’x’.", "It's 'quoted\" and Peter's \"x.\""),
    ("en", "Wait…", "Wait..."),
    # ` -> ', '' -> ' " ' ; Perl prints the line's leading space as it is
    ("en", "``Hi'' there", ' " Hi " there'),
    # no space before % after a digit, nor before : ;
    ("en", "50 % off ; ok : yes", "50% off; ok: yes"),
    ("en", "a\rb", "ab"),
    # a no-break space between digits: German-style decimal comma in de, a point in en; the
    # script reads bytes, so its \d is [0-9] and Arabic-Indic digits are left alone
    ("de", "1\u00a0000 und ٣\u00a0٣", "1,000 und ٣\u00a0٣"),
    ("en", "1\u00a0000 and ٣ %", "1.000 and ٣ %"),
]


@pytest.mark.parametrize("lang, line, expected", NORMALIZE)
def test_normalize_punctuation_perl(lang, line, expected):
    assert moses.PunctNormalizer(lang)(line) == expected


def test_remove_non_printing_char_perl():
    # s/\p{C}/ /g: tab, zero-width space, soft hyphen, DEL, private use
    assert moses.remove_non_printing("a\tb\u200bc\u00add\x7fe\ue000f") == "a b c d e f"
    assert moses.remove_non_printing("plain ascii") == "plain ascii"


def test_wmt_training_line_pipeline(tmp_path):
    """normalize-punctuation | remove-non-printing-char | tokenizer -a, as
    prepare-wmt14en2de.sh pipes its training text."""
    lines = ["„Die E-Mail-Adresse“  kostet\u200b 3,5 Mio.", "   ", "Sie sagte: «Ja»."]
    assert tokenize("de", lines, tmp_path, aggressive_dash=True, normalize_punctuation=True,
                    remove_non_printing=True) == [
        "&quot; Die E @-@ Mail @-@ Adresse &quot; kostet 3,5 Mio .",
        " ",  # the normalizer prints " ", which tokenizer.perl passes on as a blank line
        "Sie sagte : &quot; Ja &quot; .",
    ]
