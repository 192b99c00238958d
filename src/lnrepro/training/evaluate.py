"""Decode every epoch checkpoint of a run with beam search and score BLEU (one table per run).

Reads the run's metrics.csv for its checkpoints; a diverged epoch has none and is skipped.
Writes OUT (bleu.csv: epoch, bleu, signature, decoding settings) and the hypotheses of every
epoch beside it, so any score can be checked by hand. With ``--average-last N`` it decodes
instead one model, the parameter average of the last N epoch checkpoints (fairseq's
average_checkpoints.py, as the Admin recipes use with N = 10): one row, at the last epoch, with
``averaged`` the checkpoints it really averaged (fewer than N when the run has fewer) beside
``average_last`` = N, so a table can say so.

A source sentence longer than the model's positions cannot be encoded: it is not translated (its
line in the hypothesis file stays empty), a warning names its line, bleu.csv's ``skipped`` counts
it, and BLEU is over the other sentences (``sentences``) -- fairseq 0.9's generate.py with
--skip-invalid-size-inputs-valid-test (generate.py:74 passes it as ignore_invalid_inputs;
fairseq/data/data_utils.py:189-193 warns and skips; only generated sentences reach the scorer,
generate.py:180-182). Without that flag fairseq stops (data_utils.py:184-188); here evaluation
runs after training, so a whole table is not lost to one sentence.
"""
import csv
import math
import re
import sys
import time
from pathlib import Path

import torch

from ..core.batching import pad_right
from ..core.beam import beam_search
from ..core.bleu import compound_split_bleu, detokenized_bleu, tokenized_bleu
from ..core.data import ParallelData, load_dictionaries
from ..core import provenance
from ..core.checkpoint import load_input
from ..core.device import pick_device
from ..core.loop import write_csv
from ..core.translation import MAX_POSITIONS, load_model
from ..settings import DECODE_DEFAULTS

COLUMNS = ["epoch", "bleu", "bleu_compound_split", "sacrebleu_detok", "split", "beam", "lenpen", "min_len",
           "sentences", "skipped", "sentences_per_s", "signature", "averaged", "average_last"]


def add_arguments(p):
    p.add_argument("--metrics", required=True, help="the run's metrics.csv (lists its checkpoints)")
    p.add_argument("--data", required=True, help="binarized data dir (its dictionaries, SPLIT.pt)")
    p.add_argument("--split", default=DECODE_DEFAULTS["split"], help="which SPLIT.pt of --data to decode")
    p.add_argument("--reference", required=True, help="tokenized reference text (before BPE)")
    p.add_argument("--detok-reference", default=None,
                   help="raw reference for detokenized sacreBLEU; left out: sacrebleu_detok is NaN")
    d = DECODE_DEFAULTS
    p.add_argument("--beam", type=int, default=d["beam"], help="beam size (fairseq's --beam)")
    p.add_argument("--lenpen", type=float, default=d["lenpen"], help="length penalty: scores divided by length**lenpen")
    p.add_argument("--max-len-a", type=float, default=float(d["max_len_a"]),
                   help="hypotheses at most a * source length + b tokens: a")
    p.add_argument("--max-len-b", type=int, default=d["max_len_b"], help="hypotheses at most a * source length + b tokens: b")
    p.add_argument("--min-len", type=int, default=d["min_len"],
                   help="</s> forbidden before this many tokens (fairseq-generate's --min-len, default 1)")
    p.add_argument("--batch-sentences", type=int, default=d["batch_sentences"], help="sentences decoded per batch")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda or a torch device")
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads; 0 = torch's default")
    p.add_argument("--target-lang", default="en", help="for detokenization")
    p.add_argument("--average-last", type=int, default=0,
                   help="decode only the average of the last N epoch checkpoints (0: every epoch)")
    p.add_argument("--out", required=True, help="bleu.csv")


def decode(model, data, vocab, beam, lenpen, max_len_a, max_len_b, batch_sentences, device, min_len=1):
    """Hypotheses (BPE removed) in corpus order; batches of similar source length. A source longer than
    the model's positions is not translated: its hypothesis is None (too_long_sources)."""
    fits = set(range(len(data))) - set(too_long_sources(data, model.cfg.max_positions))
    order = sorted(fits, key=lambda i: (int(data.src_lengths[i]), i))  # as sorting range(len(data)): stable
    hyps = [None] * len(data)
    for start in range(0, len(order), batch_sentences):
        idx = order[start:start + batch_sentences]
        src = pad_right([data.source(i) for i in idx]).to(device)
        for i, toks in zip(idx, beam_search(model, src, beam, lenpen, max_len_a, max_len_b, min_len)):
            hyps[i] = vocab.decode(toks)
    return hyps


def too_long_sources(data, max_positions):
    """0-based indices of the source sentences (</s> included) longer than max_positions."""
    return [i for i, n in enumerate(data.src_lengths.tolist()) if n > max_positions]


def say_skipped(data_file, data, reference):
    """Warn of the sources too long to translate, by their line in the reference; exit if none is left."""
    skipped = too_long_sources(data, MAX_POSITIONS)
    if not skipped:
        return
    lines = ", ".join(str(i + 1) for i in skipped[:10])
    lines += f", ... ({len(skipped)} in all)" if len(skipped) > 10 else ""
    if len(skipped) == len(data):
        sys.exit(f"{data_file}: all its {len(data)} source sentences are longer than the model's {MAX_POSITIONS} "
                 f"positions: nothing can be translated; split or shorten them in the test set")
    print(f"WARNING: {data_file}: {len(skipped)} of {len(data)} source sentences are longer than the model's "
          f"{MAX_POSITIONS} positions and are not translated (lines {lines} of {reference}; their hypothesis "
          f"lines stay empty); BLEU is over the other {len(data) - len(skipped)}, as fairseq-generate's "
          f"--skip-invalid-size-inputs-valid-test. To score them, split or shorten those sentences",
          file=sys.stderr, flush=True)


def average_checkpoints(paths, device="cpu"):
    """A model whose every parameter and buffer is the mean over the checkpoints (all one architecture)."""
    models = [load_model(p, device) for p in paths]
    states = [m.state_dict() for m in models]
    mean = {k: sum(s[k].double() for s in states).div(len(states)).to(v.dtype) if v.is_floating_point() else v
            for k, v in states[-1].items()}
    models[-1].load_state_dict(mean)
    return models[-1]


def hypothesis_prefix(average_last):
    """hyp_epochN.txt: epoch N's checkpoint; hyp_avgK_epochN.txt: the job averaging the last K
    (--average-last K) up to epoch N. Each job's files by its own name, whatever it really averaged."""
    return f"hyp_avg{average_last}_epoch" if average_last > 0 else "hyp_epoch"


def own_hypotheses(out_dir, average_last):
    """The hypothesis files in out_dir that a job with this --average-last writes (and records):
    a run evaluated again after it trained fewer epochs must not keep the old ones beside its table."""
    pattern = re.compile(re.escape(hypothesis_prefix(average_last)) + r"\d+\.txt")
    return sorted(p for p in Path(out_dir).glob("hyp_*.txt") if pattern.fullmatch(p.name))


def remove_hypotheses(out_dir, average_last):
    """This job's earlier hypotheses and their records (no other job's: the folder holds every
    decoding of the run); it writes its own again."""
    for path in own_hypotheses(out_dir, average_last):
        provenance.sidecar_path(path).unlink(missing_ok=True)
        path.unlink()


def detokenize(lines, lang):
    from sacremoses import MosesDetokenizer
    detok = MosesDetokenizer(lang)
    return [detok.detokenize(line.split()) for line in lines]


def run(args):
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    data_dir, out = Path(args.data), Path(args.out)
    vocab = load_dictionaries(data_dir)[1]  # the target side's
    data = load_input(ParallelData.load, data_dir / f"{args.split}.pt")
    # utf-8-sig: a byte order mark at a file's start is not text (as lnrepro.prepare.read_lines)
    refs = Path(args.reference).read_text(encoding="utf-8-sig").splitlines()
    if len(refs) != len(data):
        sys.exit(f"{args.reference}: {len(refs)} lines but {args.split}.pt has {len(data)} sentences")
    raw_refs = Path(args.detok_reference).read_text(encoding="utf-8-sig").splitlines() if args.detok_reference else None
    say_skipped(data_dir / f"{args.split}.pt", data, args.reference)
    with open(args.metrics, newline="") as f:
        epochs = [r for r in csv.DictReader(f) if r["checkpoint"]]
    run_dir = Path(args.metrics).parent
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_hypotheses(out.parent, args.average_last)
    rows = []
    models = [(r, 0, lambda r=r: load_model(run_dir / r["checkpoint"], device)) for r in epochs]
    if args.average_last > 0:  # a run that diverged before any checkpoint leaves the table empty
        last = epochs[-args.average_last:]
        models = [(last[-1], len(last), lambda: average_checkpoints([run_dir / r["checkpoint"] for r in last], device))
                  ] if last else []
        if len(last) < args.average_last:  # the table's averaged column says so too
            print(f"{args.metrics}: {len(last)} checkpoint(s), fewer than the {args.average_last} asked: "
                  + (f"averaging {len(last)}" if last else "nothing to decode, the table stays empty"),
                  file=sys.stderr, flush=True)
    for r, averaged, build in models:
        model = build()
        t0 = time.time()
        hyps = decode(model, data, vocab, args.beam, args.lenpen, args.max_len_a, args.max_len_b,
                      args.batch_sentences, device, args.min_len)
        elapsed = time.time() - t0
        name = f"{hypothesis_prefix(args.average_last)}{r['epoch']}.txt"
        # one line per test sentence, empty where one was skipped, so line N is the reference's line N
        (out.parent / name).write_text("\n".join(h or "" for h in hyps) + "\n", encoding="utf-8")
        kept = [i for i, h in enumerate(hyps) if h is not None]
        scored, scored_refs = [hyps[i] for i in kept], [refs[i] for i in kept]
        score, signature = tokenized_bleu(scored, scored_refs)
        split_score, _ = compound_split_bleu(scored, scored_refs)
        detok = math.nan
        if raw_refs is not None:
            detok = detokenized_bleu(detokenize(scored, args.target_lang), [raw_refs[i] for i in kept])[0].score
        rows.append({"epoch": int(r["epoch"]), "bleu": score.score, "bleu_compound_split": split_score.score,
                     "sacrebleu_detok": detok, "split": args.split, "beam": args.beam, "lenpen": args.lenpen,
                     "min_len": args.min_len, "sentences": len(kept), "skipped": len(hyps) - len(kept),
                     "sentences_per_s": len(kept) / elapsed,
                     "signature": signature, "averaged": averaged, "average_last": args.average_last})
        print(f"epoch {r['epoch']}: BLEU {score.score:.2f} ({len(kept) / elapsed:.0f} sentences/s)",
              file=sys.stderr, flush=True)
    write_csv(rows, out, COLUMNS)
    return 0
