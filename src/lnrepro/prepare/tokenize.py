"""Tokenize text with the Moses tokenizer (tokenizer.perl via sacremoses).

Same as prepare-iwslt14.sh's `tokenizer.perl -threads N -l LANG`: XML escaping on
(& -> &amp;, ' -> &apos;, ...), no aggressive hyphen splitting, one line out per line in.
"""
from sacremoses import MosesTokenizer

from . import map_lines

_state = {}  # per worker process: the tokenizer and its options


def _init(lang, aggressive_dash, escape):
    _state.update(tokenizer=MosesTokenizer(lang=lang),
                  options=dict(aggressive_dash_splits=aggressive_dash, escape=escape,
                               return_str=True))


def _tokenize_chunk(lines):
    tok, options = _state["tokenizer"], _state["options"]
    # tokenizer.perl prints blank (whitespace-only) lines unchanged
    return [line if not line.strip() else tok.tokenize(line, **options) for line in lines]


def tokenize_file(in_path, out_path, lang, threads=1, aggressive_dash=False, escape=True):
    return map_lines(_tokenize_chunk, in_path, out_path, threads,
                     _init, (lang, aggressive_dash, escape))


def add_arguments(p):
    p.add_argument("--lang", required=True, help="language code for the Moses rules (de, en)")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--threads", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--aggressive-dash", action="store_true",
                   help="split hyphens as E @-@ Mail (tokenizer.perl -a; off in fairseq)")
    p.add_argument("--no-escape", action="store_true",
                   help="do not escape XML special characters (tokenizer.perl -no-escape)")


def run(args):
    tokenize_file(args.input, args.output, args.lang, args.threads,
                  args.aggressive_dash, not args.no_escape)
