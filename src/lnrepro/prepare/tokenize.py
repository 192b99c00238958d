"""Tokenize text with the Moses tokenizer (tokenizer.perl via sacremoses).

Same as prepare-iwslt14.sh's `tokenizer.perl -threads N -l LANG`: XML escaping on
(& -> &amp;, ' -> &apos;, ...), no aggressive hyphen splitting, one line out per line in.
Options for the other recipes and for exact parity with today's tokenizer.perl (see moses.py):
`--aggressive-dash` (-a), `--split-final-period` (mosesdecoder since Nov 2018), and
`--normalize-punctuation` / `--remove-non-printing`, which run normalize-punctuation.perl and
remove-non-printing-char.perl on each line first, as prepare-wmt14en2de.sh pipes its training
text through them, and `--lowercase`, which lowercases the tokens in the same pass (the BERT
corpus: after tokenizing, as prepare-iwslt14.sh does, because the tokenizer's nonbreaking
prefixes such as "Dr." are matched case-sensitively).
"""
from sacremoses import MosesTokenizer

from . import map_lines

_state = {}  # per worker process: the tokenizer, its options and the per-line preprocessing


def _init(lang, aggressive_dash, escape, split_final_period=False, normalize_punctuation=False,
          remove_non_printing=False, lowercase=False):
    steps = []
    if split_final_period or normalize_punctuation or remove_non_printing:
        from . import moses
        tokenizer = moses.PerlTokenizer(lang, split_final_period)
        blank = moses.is_blank
        if normalize_punctuation:
            steps.append(moses.PunctNormalizer(lang))
        if remove_non_printing:
            steps.append(moses.remove_non_printing)
    else:  # the original behaviour, unchanged
        tokenizer = MosesTokenizer(lang=lang)

        def blank(line):
            return not line.strip()
    _state.update(tokenizer=tokenizer, steps=steps, blank=blank, lowercase=lowercase,
                  options=dict(aggressive_dash_splits=aggressive_dash, escape=escape,
                               return_str=True))


def _tokenize_chunk(lines):
    tok, options, blank = _state["tokenizer"], _state["options"], _state["blank"]
    for step in _state["steps"]:
        lines = [step(line) for line in lines]
    # tokenizer.perl prints blank (whitespace-only) lines unchanged
    lines = [line if blank(line) else tok.tokenize(line, **options) for line in lines]
    return [line.lower() for line in lines] if _state["lowercase"] else lines


def tokenize_file(in_path, out_path, lang, threads=1, aggressive_dash=False, escape=True,
                  split_final_period=False, normalize_punctuation=False, remove_non_printing=False,
                  lowercase=False):
    return map_lines(_tokenize_chunk, in_path, out_path, threads, _init,
                     (lang, aggressive_dash, escape, split_final_period, normalize_punctuation,
                      remove_non_printing, lowercase), empty="error")


def add_arguments(p):
    p.add_argument("--lang", required=True, help="language code for the Moses rules (de, en)")
    p.add_argument("--input", required=True, help="text file to read")
    p.add_argument("--output", required=True, help="text file to write")
    p.add_argument("--threads", type=int, default=1, help="worker processes")
    p.add_argument("--aggressive-dash", action="store_true",
                   help="split hyphens as E @-@ Mail (tokenizer.perl -a; off in fairseq)")
    p.add_argument("--no-escape", action="store_true",
                   help="do not escape XML special characters (tokenizer.perl -no-escape)")
    p.add_argument("--split-final-period", action="store_true",
                   help="split the period off a line's last word unconditionally, as tokenizer.perl "
                        "does since Nov 2018 ('says vs.' -> 'says vs .')")
    p.add_argument("--normalize-punctuation", action="store_true",
                   help="normalize-punctuation.perl LANG on each line first")
    p.add_argument("--remove-non-printing", action="store_true",
                   help="remove-non-printing-char.perl on each line first (after normalizing)")
    p.add_argument("--lowercase", action="store_true", help="lowercase the tokenized text (lowercase.perl)")


def run(args):
    tokenize_file(args.input, args.output, args.lang, args.threads, args.aggressive_dash,
                  not args.no_escape, args.split_final_period, args.normalize_punctuation,
                  args.remove_non_printing, args.lowercase)
