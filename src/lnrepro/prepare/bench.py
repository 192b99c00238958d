"""Benchmark of the data preparation: lines/s per step, and the speed-up of the parallel steps.

Generates an IWSLT14-sized De-En corpus (160K pairs by default) with the demo generator,
then runs the steps the rules run: tokenization (IWSLT style, and WMT style with
normalize-punctuation + remove-non-printing + -a) and BPE application with 1 and N worker
processes, and cleaning, lowercasing, BPE learning once. Prints one row per step.
Not a test: the numbers depend on the machine. `lnrepro bench-prepare --help`.
"""
import os
import sys
import tempfile
import time

from . import write_lines
from .bpe_apply import apply_bpe_file
from .bpe_learn import learn_joint_bpe
from .clean import clean_corpus
from .demo_grammar import generate_translation
from .lowercase import lowercase_file
from .tokenize import tokenize_file


def _timed(rows, step, procs, lines, func, *args, **kwargs):
    t0 = time.perf_counter()
    func(*args, **kwargs)
    dt = time.perf_counter() - t0
    rows.append((step, procs, lines, dt))
    print(f"  {step:<44} {procs:>2} proc  {lines:>8} lines  {dt:7.2f} s  {lines / dt:9.0f} lines/s",
          file=sys.stderr, flush=True)


def bench(pairs=160_000, threads=(1, 2), merges=10_000, workdir=None):
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        p = lambda name: os.path.join(d, name)  # noqa: E731
        t0 = time.perf_counter()
        data = generate_translation("deen", pairs, seed=1)
        with open(p("raw.de"), "w", encoding="utf-8") as fde, open(p("raw.en"), "w", encoding="utf-8") as fen:
            write_lines(fde, (de for de, _ in data))
            write_lines(fen, (en for _, en in data))
        print(f"generated {pairs} De-En pairs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        rows = []
        for n in threads:
            _timed(rows, "tokenize de (IWSLT: tokenizer.perl -l de)", n, pairs, tokenize_file,
                   p("raw.de"), p(f"tok{n}.de"), "de", threads=n)
        for n in threads:
            _timed(rows, "tokenize de (WMT: norm + non-print + -a)", n, pairs, tokenize_file,
                   p("raw.de"), p(f"wmt{n}.de"), "de", threads=n, aggressive_dash=True,
                   split_final_period=True, normalize_punctuation=True, remove_non_printing=True)
        tokenize_file(p("raw.en"), p("tok.en"), "en", threads=max(threads))
        _timed(rows, "clean (clean-corpus-n 1-175 / 1.5)", 1, pairs, clean_corpus,
               p(f"tok{threads[0]}.de"), p("tok.en"), p("clean.de"), p("clean.en"))
        n_clean = sum(1 for _ in open(p("clean.de"), encoding="utf-8"))
        _timed(rows, "lowercase", 1, n_clean, lowercase_file, p("clean.de"), p("lc.de"))
        lowercase_file(p("clean.en"), p("lc.en"))
        _timed(rows, f"bpe-learn ({merges} merges, de+en)", 1, 2 * n_clean, learn_joint_bpe,
               [p("lc.de"), p("lc.en")], p("codes"), merges)
        for n in threads:
            _timed(rows, "bpe-apply de", n, n_clean, apply_bpe_file, p("codes"), p("lc.de"), p(f"bpe{n}.de"), n)
        same = all(open(p(f"{kind}{threads[0]}.de"), "rb").read() == open(p(f"{kind}{n}.de"), "rb").read()
                   for kind in ("tok", "wmt", "bpe") for n in threads)
    print("\nstep\tprocesses\tlines\tseconds\tlines_per_s\tspeedup_vs_1")
    base = {}
    for step, procs, lines, dt in rows:
        base.setdefault(step, dt)
        print(f"{step}\t{procs}\t{lines}\t{dt:.2f}\t{lines / dt:.0f}\t{base[step] / dt:.2f}")
    print(f"\noutputs with {threads[0]} and {max(threads)} processes identical: {same}; "
          f"CPUs on this machine: {os.cpu_count()}")
    return rows


def add_arguments(p):
    p.add_argument("--pairs", type=int, default=160_000, help="sentence pairs (IWSLT14's size)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="process counts to compare")
    p.add_argument("--merges", type=int, default=10_000, help="BPE merges")
    p.add_argument("--workdir", default=None, help="scratch folder (default: the system's temp)")


def run(args):
    bench(args.pairs, tuple(args.threads), args.merges, args.workdir)
