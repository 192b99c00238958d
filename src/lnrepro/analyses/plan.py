"""A cost plan before anything trains: per run, per figure and table, and in total, the trainings,
updates, model FLOPs, GPU-hours at a stated throughput, and the disk of checkpoints and data.

Everything here is an estimate from the config's settings (the workflow passes them as --spec);
nothing is built, and of the data only a corpus's dict.txt is read where it exists (its vocabulary).
What is assumed is written into the plan beside the numbers.

- parameters: counted from the settings as lnrepro.core.model / lnrepro.core.bert build them
  (tests/test_plan.py checks the count against the real modules); the vocabulary, until the
  dictionary is built, is estimated as bpe_merges + VOCAB_EXTRA;
- updates: epochs x updates per epoch, where updates per epoch = the corpus's training tokens / the
  run's tokens per update (max_tokens x gpus x nodes x update_freq), or max_updates where set (BERT);
  training_cap as the trainers apply it; BERT fine-tuning: every grid point, seed and fine-tuned round;
- FLOPs: 6 x parameters x tokens trained on (forward and backward; attention's own FLOPs left out);
- GPU-hours: FLOPs / (peak x MFU), all options (the config's `plan:` sets them; the defaults: an H100's
  dense bf16 peak for fp16 and bf16 runs, its FP32 peak for fp32 ones, 30% MFU);
- checkpoints: what lnrepro.core.loop.save_round writes: one epochN.pt per round (the weights, fp32)
  and last.pt (the weights and the optimizer's moments), every one kept; after retention
  (`checkpoints: {keep: needed}`): last.pt and the rounds lnrepro.training.retain.needed_epochs keeps
  for the run's consumers (the spec's checkpoints.needs), their updates estimated as the run's;
- data: the binarized splits (int32 tokens, int64 offsets) and the text stages before them;
  downloaded archives and BERT's Wikipedia/books text are not counted.
"""
import csv
import json
import math
from pathlib import Path

from lnrepro.args import json_object
from lnrepro.settings import LAUNCH_DEFAULTS, PRETRAIN_DEFAULTS, TRAIN_DEFAULTS
from lnrepro.training.retain import needed_epochs

# ---- the corpora's sizes where the config states none (sentence pairs in the training split) ----
IWSLT14_TRAIN_PAIRS = 160_239  # fairseq's prepare-iwslt14.sh output (config.yaml: expected_counts.train)
WMT14_TRAIN_PAIRS = 4_500_000  # Vaswani et al. 2017 §5.1: "about 4.5 million sentence pairs"
# BPE tokens per training pair as batches count them (the longer side, with padding): our estimates.
# generated, by the generator's task: a demo build's 81 (deen) and 112 (ende) updates per epoch at
# max_tokens 900 on 4,304 and 3,413 training pairs; another task: 16;
# iwslt14: its ~1,100 updates per epoch at 4,096 tokens (demo.yaml) on 160,239 pairs;
# wmt14: longer sentences than IWSLT's (not measured: no WMT14 build here)
TOKENS_PER_PAIR = {"generated": 16, "iwslt14": 28, "wmt14": 32, "local": 28}
GENERATED_TOKENS_PER_PAIR = {"deen": 17, "ende": 30}
TEXT_BYTES_PER_PAIR = {"generated": 120, "iwslt14": 230, "wmt14": 300, "local": 230}  # both sides, one text stage
TEXT_STAGES = 4  # raw, tokenized, cleaned/lowercased, BPE: each a full copy of the text
VOCAB_EXTRA = 400  # symbols beside the merges: characters and <pad> <s> </s> <unk> (our estimate)
BYTES_PER_PARAM = 4  # fp32 weights and moments (fp16 runs too: autocast keeps fp32 weights)
OPTIMIZER_MOMENTS = {"adam": 2, "radam": 2, "sgd": 0}  # state tensors per parameter (sgd: with momentum, 1)
H100_BF16_DENSE_TFLOPS = 989.0  # NVIDIA H100 SXM datasheet, dense (not 2:4 sparse): fp16 and bf16 runs
# fp32 runs (and BERT fine-tuning) multiply in plain FP32: lnrepro enables no TF32 (torch's default for
# matmuls is off), so their peak is the datasheet's FP32, 67 TFLOP/s: 15x slower than bf16's
H100_FP32_TFLOPS = 67.0
MFU = 0.30  # model FLOPs utilization: an assumption, not a measurement
TOP = 5
# GLUE training pairs (Wang et al. 2019, GLUE, Table 1); a fine-tuning batch pads to its longest pair,
# so max_len x pairs bounds an epoch's tokens from above
GLUE_TRAIN_PAIRS = {"mrpc": 3_668, "rte": 2_490}

# where a run sets no value: the trainers' defaults (lnrepro.settings: TRAIN_DEFAULTS, PRETRAIN_DEFAULTS)


# ---- parameters ------------------------------------------------------------------------------
def attention_params(d, fixup=False):
    return 4 * d * d + 4 * d + fixup  # stacked in_proj (3d x d + 3d), out_proj (d x d + d); FixUp's bias


def ffn_params(d, f, fixup=False):
    return 2 * d * f + f + d + 2 * fixup  # fc1, fc2; FixUp's two scalar biases


def sublayer_params(d, norm):
    return {"post": 2 * d, "pre": 2 * d, "admin": 3 * d, "fixup": 2}[norm]  # LayerNorm; Admin's omega


def translation_params(settings, vocab):
    """lnrepro.core.model.Transformer's parameter count: the decoder's embedding is also the output
    projection; share_all_embeddings makes it the encoder's too; Pre-LN adds a final LayerNorm."""
    s = {**TRAIN_DEFAULTS, **settings}
    d, f = s["d_model"], s["ffn_dim"]
    enc, dec = (settings.get(side, settings.get("norm", TRAIN_DEFAULTS[side])) for side in ("enc_norm", "dec_norm"))
    enc_layer = attention_params(d, enc == "fixup") + ffn_params(d, f, enc == "fixup") + 2 * sublayer_params(d, enc)
    dec_layer = (2 * attention_params(d, dec == "fixup") + ffn_params(d, f, dec == "fixup")
                 + 3 * sublayer_params(d, dec))
    embeddings = vocab * d * (1 if s["share_all_embeddings"] else 2)
    finals = 2 * d * ((enc == "pre") + (dec == "pre"))
    return s["enc_layers"] * enc_layer + s["dec_layers"] * dec_layer + embeddings + finals


def bert_params(settings, vocab):
    """lnrepro.core.bert.Bert's: token, position (block_size) and segment embeddings with their
    LayerNorm, encoder layers, the masked-LM head (tied output, own bias) and NSP's pooler and head."""
    s = {**PRETRAIN_DEFAULTS, **settings}
    d, f, norm = s["d_model"], s["ffn_dim"], s["norm"]
    layer = attention_params(d) + ffn_params(d, f) + 2 * sublayer_params(d, norm)
    embeddings = vocab * d + s["block_size"] * d + 2 * d + 2 * d
    head = d * d + d + 2 * d + vocab
    nsp = (d * d + d + 2 * d + 2) if s["nsp"] else 0
    return s["layers"] * layer + embeddings + 2 * d * (norm == "pre") + head + nsp


def checkpoint_bytes(params, optimizer, momentum=0.0):
    """(epochN.pt, last.pt): the weights; the weights and the optimizer's moments (save_round)."""
    moments = OPTIMIZER_MOMENTS.get(optimizer, 2) + (optimizer == "sgd" and momentum > 0)
    return params * BYTES_PER_PARAM, params * BYTES_PER_PARAM * (1 + moments)


# ---- corpora ---------------------------------------------------------------------------------
def train_pairs(corpus):
    """Sentence pairs in a corpus's training split, or None where the config cannot tell (local)."""
    source = corpus["source"]
    if source == "generated":
        n = corpus["generator"]["n_train"]
        return n - n // corpus.get("valid_every", 23)  # every Nth pair goes to valid (split-valid)
    if "train" in corpus.get("expected_counts", {}):
        return corpus["expected_counts"]["train"]
    return {"iwslt14": IWSLT14_TRAIN_PAIRS, "wmt14": WMT14_TRAIN_PAIRS}.get(source)


def corpus_vocab(corpus, dict_path=None):
    """(size, where from): the built dictionary's where it exists (a planned corpus has none yet)."""
    if dict_path and Path(dict_path).exists():
        from lnrepro.core.data import Dictionary  # torch: only where there is a dictionary to read

        return len(Dictionary.load(dict_path)), dict_path
    return corpus["bpe_merges"] + VOCAB_EXTRA, f"bpe_merges + {VOCAB_EXTRA}"


def tokens_per_pair(corpus):
    if corpus["source"] == "generated":
        return GENERATED_TOKENS_PER_PAIR.get(corpus["generator"].get("task"), TOKENS_PER_PAIR["generated"])
    return TOKENS_PER_PAIR[corpus["source"]]


def corpus_data_bytes(corpus):
    pairs = train_pairs(corpus)
    if pairs is None:
        return 0
    tokens = pairs * tokens_per_pair(corpus)
    binarized = tokens * 2 * 4 + pairs * 2 * 8  # both sides' int32 tokens and int64 offsets
    return binarized + pairs * TEXT_BYTES_PER_PAIR[corpus["source"]] * TEXT_STAGES


# ---- runs ------------------------------------------------------------------------------------
def processes(s):
    return s.get("gpus", LAUNCH_DEFAULTS["gpus"]) * s.get("nodes", LAUNCH_DEFAULTS["nodes"])


def plan_translation(name, s, corpus, vocab, rates, needs=None):
    tokens_per_update = s.get("max_tokens", TRAIN_DEFAULTS["max_tokens"]) * processes(s) * s.get("update_freq", 1)
    pairs = train_pairs(corpus)
    rounds = min(s.get("epochs", 1), s.get("max_rounds") or math.inf)  # training_cap: the trainer's flags
    if s.get("max_updates"):
        updates = s["max_updates"]
    elif pairs is None:
        updates = 0
    else:
        per_epoch = math.ceil(pairs * tokens_per_pair(corpus) / tokens_per_update)
        updates = rounds * min(per_epoch, s.get("max_round_updates") or math.inf)
    params = translation_params(s, vocab)
    return run_row(name, "translation", s, params, updates, tokens_per_update, round_updates(rounds, updates), rates,
                   needs)


def plan_bert(name, s, vocab, rates, needs=None):
    s = {**PRETRAIN_DEFAULTS, **s}
    long_tokens = s["max_tokens"]
    short = s.get("short_max_tokens") or long_tokens
    frac = s.get("short_fraction", 0) if s.get("short_block_size") else 0
    tokens_per_update = (frac * short + (1 - frac) * long_tokens) * processes(s) * s.get("update_freq", 1)
    rounds = min(math.ceil(s["max_updates"] / s["valid_interval"]), s.get("max_rounds") or math.inf)
    updates = min(s["max_updates"], rounds * min(s["valid_interval"], s.get("max_round_updates") or math.inf))
    params = bert_params(s, vocab)
    return run_row(name, "bert", s, params, updates, tokens_per_update, round_updates(rounds, updates), rates, needs)


def plan_finetune(name, s, vocab, ft, tasks, rounds, rates, cap=0):
    """Every fine-tuning of a BERT run's rounds (bert.smk: one job per run, task and round): each grid
    point (batch x lr x epochs) and seed trains afresh from the round's checkpoint; nothing is saved.
    cap: training_cap.finetune_updates, the updates of each fine-tuning at most."""
    per_point = len(ft["lr"]) * ft["seeds"] * rounds  # the lr and seed axes repeat each batch x epochs
    updates = tokens = 0
    for task in tasks:
        pairs = GLUE_TRAIN_PAIRS.get(task, 0)
        for b in ft["batch"]:
            for e in ft["epochs"]:
                n = min(e * math.ceil(pairs / b), cap or math.inf)
                updates += per_point * n
                tokens += per_point * min(n * b, e * pairs) * ft["max_len"]
    trainings = per_point * len(tasks) * len(ft["batch"]) * len(ft["epochs"])
    params = bert_params(s, vocab)  # the pre-trained model's count: the classifier's to a few d x d
    flops = 6 * params * tokens
    return {"run": f"{name} fine-tuning", "kind": "finetune", "params": params, "updates": updates, "tokens": tokens,
            "flops": flops, "gpu_hours": flops / rates["fp32"] / 3600, "checkpoints": 0, "checkpoint_bytes": 0,
            "retained_checkpoints": 0, "retained_bytes": 0,
            "trainings": trainings, "precision": "fp32"}  # finetune.py: no autocast


def round_updates(rounds, updates):
    """[(round, updates done at its end)]: the run's updates spread evenly over its rounds."""
    per_round = math.ceil(updates / rounds) if rounds else 0
    return [(r, min(r * per_round, updates)) for r in range(1, rounds + 1)]


def retained_rounds(rounds_done, needs):
    """The rounds whose checkpoints retention keeps; every one where nothing is known of the run's readers
    (a run no target trains)."""
    return len(rounds_done) if needs is None else len(needed_epochs(needs, rounds_done))


def run_row(name, kind, s, params, updates, tokens_per_update, rounds_done, rates, needs=None):
    tokens = updates * tokens_per_update
    flops = 6 * params * tokens
    precision = s.get("precision", "fp32")
    optimizer = s.get("optimizer", TRAIN_DEFAULTS["optimizer"])
    epoch_ckpt, last_ckpt = checkpoint_bytes(params, optimizer, s.get("momentum", 0.0))
    kept = retained_rounds(rounds_done, needs)
    return {"run": name, "kind": kind, "params": params, "updates": updates, "tokens": tokens, "flops": flops,
            "gpu_hours": flops / rates[precision] / 3600, "checkpoints": len(rounds_done) + 1, "precision": precision,
            "checkpoint_bytes": len(rounds_done) * epoch_ckpt + last_ckpt, "retained_checkpoints": kept + 1,
            "retained_bytes": kept * epoch_ckpt + last_ckpt}


def plan(spec, peak_tflops=H100_BF16_DENSE_TFLOPS, mfu=MFU, fp32_peak_tflops=H100_FP32_TFLOPS):
    """{'runs': [row per run], 'groups': {name: sums}, 'total': sums, 'data_bytes': int}."""
    rates = {"fp32": fp32_peak_tflops * 1e12 * mfu, "fp16": peak_tflops * 1e12 * mfu, "bf16": peak_tflops * 1e12 * mfu}
    used = sorted({s["corpus"] for s in spec["runs"].values()})
    vocabs = {c: corpus_vocab(spec["corpora"][c], spec.get("dicts", {}).get(c)) for c in used}
    needs = spec.get("checkpoints", {}).get("needs", {})
    rows = {name: plan_translation(name, s, spec["corpora"][s["corpus"]], vocabs[s["corpus"]][0], rates, needs.get(name))
            for name, s in spec["runs"].items()}
    bert = spec.get("bert", {})
    for name, s in bert.get("runs", {}).items():
        vocab = bert["corpora"][s["corpus"]]["bpe_merges"] + VOCAB_EXTRA + 1  # + <mask>
        rows[name] = plan_bert(name, s, vocab, rates, needs.get(name))
        if bert.get("finetune") and bert.get("tasks"):
            ft = plan_finetune(name, s, vocab, bert["finetune"], bert["tasks"], bert["finetune_rounds"][name],
                               rates, bert.get("finetune_updates", 0))
            rows[ft["run"]] = ft
    groups = {group: totals([rows[r] for r in dict.fromkeys(runs)]) for group, runs in spec.get("groups", {}).items()}
    data = sum(corpus_data_bytes(spec["corpora"][c]) for c in used)
    return {"runs": list(rows.values()), "groups": groups, "total": totals(list(rows.values())), "data_bytes": data,
            "vocab": vocabs, "keep": spec.get("checkpoints", {}).get("keep", "all")}


SUMMED = ("updates", "tokens", "flops", "gpu_hours", "checkpoints", "checkpoint_bytes", "retained_checkpoints",
          "retained_bytes")


def totals(rows):
    return {"trainings": sum(r.get("trainings", 1) for r in rows), **{k: sum(r[k] for r in rows) for k in SUMMED}}


# ---- output ----------------------------------------------------------------------------------
def gb(n):
    return f"{n / 1e9:,.1f}"


def md_row(name, t):
    return (f"| {name} | {t['trainings']:,} | {t['updates']:,} | {t['flops']:.3g} | {t['gpu_hours']:,.1f} "
            f"| {gb(t['checkpoint_bytes'])} | {gb(t['retained_bytes'])} |")


def retention_line(keep):
    """What the 'after retention' column means under the config's checkpoints.keep."""
    what = ("last.pt and the epochs a configured step reads again, by lnrepro.training.retain.needed_epochs: "
            "the last admin.average_last, the probe's after warm-up, Figs 3/11's pairs, Figs 7-8's last, BERT's "
            "fine-tuned rounds; the rest is deleted once the run's readers, per-epoch decoding too, finish, so "
            "until then a run holds every epoch")
    if keep == "needed":
        return f"- after retention (`checkpoints: {{keep: needed}}`, this config's): {what}"
    return (f"- after retention: what `checkpoints: {{keep: needed}}` would leave: {what}. This config keeps "
            f"all (`keep: {keep}`): its disk is the 'all kept' column")


def markdown(p, peak_tflops, mfu, fp32_peak_tflops=H100_FP32_TFLOPS):
    total = p["total"]
    header = ("| | trainings | updates | model FLOPs | GPU-hours | checkpoints GB, all kept | after retention GB |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
    tunings = sum(r.get("trainings", 0) for r in p["runs"] if r["kind"] == "finetune")
    tuned = f" ({total['trainings'] - tunings:,} + {tunings:,} BERT fine-tunings)" if tunings else ""
    lines = ["# Cost plan", "",
             f"**Total: {total['trainings']:,} trainings{tuned}, {total['updates']:,} updates, {total['flops']:.3g} FLOPs, "
             f"{total['gpu_hours']:,.1f} GPU-hours, {gb(total['checkpoint_bytes'])} GB of checkpoints "
             f"({total['checkpoints']:,} files; {gb(total['retained_bytes'])} GB, {total['retained_checkpoints']:,} "
             f"files, after retention) + {gb(p['data_bytes'])} GB of data.**", "",
             "## Assumptions (estimates, not measurements)", "",
             f"- throughput per GPU: peak x {mfu:.0%} MFU (assumed, not measured): fp16/bf16 runs {peak_tflops:g} "
             f"TFLOP/s peak (default: an H100 SXM's dense bf16), fp32 runs and BERT fine-tuning {fp32_peak_tflops:g} "
             f"(default: its plain FP32; lnrepro enables no TF32); set the config's `plan: {{mfu, bf16_tflops, "
             f"fp32_tflops}}` from `lnrepro bench` on your GPU",
             "- model FLOPs = 6 x parameters x tokens trained on (attention's score FLOPs left out)",
             f"- updates = epochs x ceil(training pairs x tokens per pair / tokens per update), or max_updates; "
             f"tokens per pair {TOKENS_PER_PAIR} (generated by task: {GENERATED_TOKENS_PER_PAIR}); training pairs: generated n_train less its valid share, "
             f"IWSLT14 {IWSLT14_TRAIN_PAIRS:,} (prepare-iwslt14.sh), WMT14 {WMT14_TRAIN_PAIRS:,} "
             f"(Vaswani et al. 2017 §5.1)",
             f"- vocabulary: the built dictionary where it exists, else bpe_merges + {VOCAB_EXTRA} (characters and "
             f"special symbols; BERT's: always, + <mask>): "
             + ", ".join(f"{c} {v:,} ({src})" for c, (v, src) in p["vocab"].items()),
             f"- checkpoints: every round's epochN.pt (weights, {BYTES_PER_PARAM} B per parameter) and last.pt "
             f"(weights + optimizer moments: Adam/RAdam 2, SGD without momentum 0), all kept",
             retention_line(p.get("keep", "all")),
             f"- data: binarized splits and {TEXT_STAGES} text stages of the corpora the runs train on; "
             f"downloads and BERT's pre-training text not counted",
             f"- BERT fine-tuning: every grid point and seed of every fine-tuned round, each a training of its own, "
             f"on GLUE's training pairs {GLUE_TRAIN_PAIRS} padded to max_len (an upper bound); it saves no checkpoint",
             "- a run in several figures or tables counts in each of them, once in the total", "",
             "## Per figure and table", "", header,
             *(md_row(g, t) for g, t in p["groups"].items()), md_row("**total**", total), "",
             f"## The {TOP} runs that dominate (GPU-hours)", "", header]
    top = sorted(p["runs"], key=lambda r: -r["gpu_hours"])[:TOP]
    lines += [md_row(r["run"], {"trainings": 1, **r}) for r in top]
    lines += ["", "## Every run", "", "| run | precision | parameters | updates | tokens | GPU-hours | checkpoints GB, "
              "all kept | after retention GB |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['run']} | {r['precision']} | {r['params']:,} | {r['updates']:,} | {r['tokens']:.3g} | {r['gpu_hours']:,.1f} "
              f"| {gb(r['checkpoint_bytes'])} | {gb(r['retained_bytes'])} |" for r in p["runs"]]
    return "\n".join(lines) + "\n"


def write_csv(p, path):
    fields = ["scope", "name", "trainings", "precision", "params", *SUMMED]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in p["runs"]:
            w.writerow({"scope": "run", "name": r["run"], "trainings": 1, **r})
        for g, t in p["groups"].items():
            w.writerow({"scope": "group", "name": g, **t})
        w.writerow({"scope": "total", "name": "total", **p["total"]})


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object("runs", "corpora"),
                   help="JSON: runs (resolved settings), corpora, groups {figure or table: [runs]}, bert")
    p.add_argument("--peak-tflops", type=float, default=H100_BF16_DENSE_TFLOPS,
                   help="a GPU's peak TFLOP/s (the default: an H100 SXM's dense bf16)")
    p.add_argument("--fp32-peak-tflops", type=float, default=H100_FP32_TFLOPS,
                   help="its peak TFLOP/s for fp32 runs (the default: an H100 SXM's FP32; no TF32 is enabled)")
    p.add_argument("--mfu", type=float, default=MFU, help="assumed model FLOPs utilization, 0-1")
    p.add_argument("--md", required=True, help="the plan, in Markdown")
    p.add_argument("--csv", required=True, help="one row per run, figure or table, and the total")


def run(args):
    p = plan(json.loads(args.spec), args.peak_tflops, args.mfu, args.fp32_peak_tflops)
    Path(args.md).parent.mkdir(parents=True, exist_ok=True)
    Path(args.md).write_text(markdown(p, args.peak_tflops, args.mfu, args.fp32_peak_tflops))
    write_csv(p, args.csv)
    print(f"plan: {p['total']['gpu_hours']:,.1f} GPU-hours, {gb(p['total']['checkpoint_bytes'])} GB checkpoints, "
          f"{gb(p['total']['retained_bytes'])} GB after retention; {args.md}")
