"""A cost plan before anything trains: per run, per figure and table, and in total, the trainings,
updates, model FLOPs, GPU-hours and CPU core-hours of every training, decoding, fine-tuning and probe
job of the config's DAG, each job's wall time (the runtime a SLURM job asks for), and the disk of
checkpoints and data.

Everything here is an estimate from the config's settings (the workflow passes them as --spec);
nothing is built, and of the data only a corpus's dict.txt is read where it exists (its vocabulary,
for the parameter counts and disk; the times use the config's estimate, as the DAG does).
What is assumed is written into the plan beside the numbers.

- parameters: counted from the settings as lnrepro.core.model / lnrepro.core.bert build them
  (tests/test_plan.py checks the count against the real modules); the vocabulary, until the
  dictionary is built, is estimated as bpe_merges + VOCAB_EXTRA;
- updates: epochs x updates per epoch, where updates per epoch = the corpus's training tokens / the
  run's tokens per update (max_tokens x gpus x nodes x update_freq), or max_updates where set (BERT);
  training_cap as the trainers apply it; BERT fine-tuning: every grid point, seed and fine-tuned round;
- FLOPs: 6 x parameters x tokens trained on (forward and backward; attention's own FLOPs left out);
- time (Throughput): a forward/backward pass of one process takes the longer of a host-bound time
  (the measured step of `lnrepro train` at 6+6 layers, d 512: docs/gpu/2026-11-28_h200_gpu_check.csv,
  scaled by the number of layers) and a compute-bound one (its FLOPs at peak x MFU, the config's
  `plan:`); decoding: the measured beam-5 sentences/s, scaled by layers x d^2, beam and sentence
  length; CPU jobs (runs on device cpu, the probes, which ask for no GPU): FLOPs at an assumed rate
  per thread. A job's estimate adds the first round's warm-up and the process's start; the runtime it
  asks for is SAFETY x that (lnrepro.pipeline.resources uses the same functions at parse time);
- checkpoints: what lnrepro.core.checkpoint.save_round writes: one epochN.pt per round (the weights, fp32)
  and last.pt (the weights and the optimizer's moments), every one kept; after retention
  (`checkpoints: {keep: needed}`): last.pt and the rounds lnrepro.retention.needed_epochs keeps
  for the run's consumers (the spec's checkpoints.needs), their updates estimated as the run's;
- data: the binarized splits (int32 tokens, int64 offsets) and the text stages before them;
  downloaded archives and BERT's Wikipedia/books text are not counted.
"""
import csv
import json
import math
from pathlib import Path

from lnrepro.args import json_object
from lnrepro.settings import DECODE_DEFAULTS, LAUNCH_DEFAULTS, PRETRAIN_DEFAULTS, TRAIN_DEFAULTS
from lnrepro.retention import needed_epochs

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
# model FLOPs utilization where a job is compute-bound (the ceiling of the time model): our reading. The
# bench (not the trainer) reached 56% of the FP32 datasheet peak at the WMT-base size (98,015 tokens/s,
# 72.9% of a measured 51.2 TFLOP/s: docs/measurements.md) and the trainer ran at 0.49x the bench at the
# IWSLT size; in bf16/fp16 no size measured was compute-bound (the bench's WMT base: 10% of peak)
MFU = 0.30
TOP = 5
# GLUE training pairs (Wang et al. 2019, GLUE, Table 1); a fine-tuning batch pads to its longest pair,
# so max_len x pairs bounds an epoch's tokens from above
GLUE_TRAIN_PAIRS = {"mrpc": 3_668, "rte": 2_490}

# ---- the time model's measurements (docs/gpu/2026-11-28_h200_gpu_check.csv: `lnrepro gpu-check` on one
# NVIDIA H200, torch 2.11+cu130) and assumptions ----
MEASURED_ON = "measured H200 2026-11-28"
# `lnrepro train` of Liu et al.'s IWSLT recipe: 6+6 layers, d 512, FFN 1024, 4 heads, 4,096-token batches,
# median of rounds 2-3: 13.61 updates/s in bf16 (53,568 tokens/s), 12.92 in fp16 (50,862): ~1.1% MFU,
# host-bound (the step takes about as long in fp32 as in bf16), so a pass's time does not follow its FLOPs
MEASURED_SIZE = {"layers": 12, "d_model": 512, "ffn_dim": 1024, "max_tokens": 4096}
MEASURED_UPDATES_PER_S = {"bf16": 13.61, "fp16": 12.921}
FP32_AS = "bf16"  # fp32 at the measured size: bf16's rate (host-bound), our reading
PRECISIONS = ("bf16", "fp16", "fp32")
# `lnrepro evaluate`, beam 5, batches of 128 sentences, decoding in fp32: 6,750 test sentences in 13.2 s
# (fp16's run: 512.7 sentences/s) and 9.8 s (bf16's: 685.5); the slower is assumed. The check's corpus was
# a generated IWSLT-size one (task deen: ~17 tokens per sentence, GENERATED_TOKENS_PER_PAIR)
MEASURED_DECODE = {"sentences_per_s": 512.7, "beam": 5, "tokens": 17}
# the check's first round (150 updates) took 3x as long as the later ones: a job's warm-up is 2 x 150
# passes more (compilation, allocator, cuDNN's autotuning), once per process start
WARMUP_PASSES = 2 * 150
STARTUP_MINUTES = 2.0  # our reading: Python and torch imports, CUDA context, loading the data
CHECKPOINT_S = 5.0  # our reading: loading one checkpoint (decoding, averaging, fine-tuning, probes)
# CPU jobs: FLOPs at this rate per thread, our reading. The demo's 44 trainings (d 64, one thread each) did
# 1.0e14 model FLOPs in 2,512 job-seconds on the 2-core development machine (docs/measurements.md,
# 2026-11-29): 40 GFLOP/s; `lnrepro bench --device cpu --threads 1` (d 64: 5.6 MFLOP per token) 3,982-8,191
# tokens/s, 22-46 GFLOP/s. 30: between, as that machine's speed varies up to 2x
CPU_GFLOPS_PER_THREAD = 30.0
SAFETY = 1.5  # a job's runtime request: SAFETY x its estimate, in whole minutes
MIN_RUNTIME_MINUTES = 10
# decode splits' sentences where the corpus's expected_counts do not say (prepare-iwslt14.sh; newstest2014,
# newstest2013)
DECODE_SENTENCES = {"iwslt14": {"test": 6_750, "valid": 7_283}, "wmt14": {"test": 3_003, "valid": 3_000}}

# where a run sets no value: the trainers' defaults (lnrepro.settings: TRAIN_DEFAULTS, PRETRAIN_DEFAULTS)


# ---- parameters ------------------------------------------------------------------------------
def attention_params(d, fixup=False):
    return 4 * d * d + 4 * d + fixup  # stacked in_proj (3d x d + 3d), out_proj (d x d + d); FixUp's bias


def ffn_params(d, f, fixup=False):
    return 2 * d * f + f + d + 2 * fixup  # fc1, fc2; FixUp's two scalar biases


def norm_params(d, norm_fn="layernorm"):
    """One normalization layer's (lnrepro.core.norms.make_norm): LayerNorm's gain and bias, RMSNorm's
    gain, DyT's gain, bias and scalar alpha."""
    return {"layernorm": 2 * d, "rmsnorm": d, "dyt": 2 * d + 1}[norm_fn]


def sublayer_params(d, norm, norm_fn="layernorm"):
    """A residual sublayer's own: its normalization layer(s) (Sandwich-LN two, T-Fixup none), Admin's
    omega, FixUp's multiplier and bias."""
    if norm == "fixup":
        return 2
    layers = {"tfixup": 0, "sandwich": 2}.get(norm, 1)
    return layers * norm_params(d, norm_fn) + (d if norm == "admin" else 0)


def translation_params(settings, vocab, tgt_vocab=0):
    """lnrepro.core.model.Transformer's parameter count: the decoder's embedding is also the output
    projection; share_all_embeddings makes it the encoder's too; Pre-LN, Sandwich-LN and ResiDual add a
    final normalization layer (lnrepro.core.model.final_norm). tgt_vocab: the target dictionary's where
    the sides have their own (0: vocab is the joined one's)."""
    s = {**TRAIN_DEFAULTS, **settings}
    d, f, fn = s["d_model"], s["ffn_dim"], s["norm_fn"]
    enc, dec = (settings.get(side, settings.get("norm", TRAIN_DEFAULTS[side])) for side in ("enc_norm", "dec_norm"))
    enc_layer = attention_params(d, enc == "fixup") + ffn_params(d, f, enc == "fixup") + 2 * sublayer_params(d, enc, fn)
    dec_layer = (2 * attention_params(d, dec == "fixup") + ffn_params(d, f, dec == "fixup")
                 + 3 * sublayer_params(d, dec, fn))
    embeddings = vocab * d if s["share_all_embeddings"] else (vocab + (tgt_vocab or vocab)) * d
    finals = norm_params(d, fn) * sum(norm in ("pre", "sandwich", "resi_dual") for norm in (enc, dec))
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


def decode_sentences(corpus, split):
    """Sentences of the decoded split: expected_counts where the config states it, the generator's n_test,
    a generated corpus's valid share, the real corpora's known sizes; 0 where the config cannot tell (local)."""
    if split in corpus.get("expected_counts", {}):
        return corpus["expected_counts"][split]
    if corpus["source"] == "generated":
        g = corpus["generator"]
        return g["n_test"] if split == "test" else g["n_train"] // corpus.get("valid_every", 23)
    return DECODE_SENTENCES.get(corpus["source"], {}).get(split, 0)


def time_vocab(corpus):
    """The vocabulary the times assume: the config's estimate, never a built dictionary, so that a job's
    runtime (planned at parse time from the config alone) does not depend on results/."""
    return corpus_vocab(corpus)[0]


# ---- time: the throughput assumed per model size -------------------------------------------
class Throughput:
    """What the plan assumes a job runs at (the config's `plan:` section; lnrepro plan's flags win).

    A forward/backward pass of one process over a batch of `tokens` takes the longer of
    - host-bound: the measured pass of the 12-layer model (1 / updates_per_s) x layers / 12: at d 512 the
      trainer is bound by the host (kernel launches, Python), whose work grows with the layers, not
      with d or the batch (our reading for every size but the measured one);
    - compute-bound: 6 x parameters x tokens / (peak x mfu).
    Decoding: the measured beam-5 sentences/s, scaled by layers x d^2 (d below 512 counts as 512), by
    the beam and by the target sentence's length. CPU: FLOPs at cpu_gflops_per_thread per thread
    (decoding: 2 x parameters per hypothesis token)."""

    def __init__(self, cfg=None, peak_tflops=None, mfu=None, fp32_peak_tflops=None, max_runtime=None):
        cfg = dict(cfg or {})
        self.max_runtime = max_runtime  # resources.max_runtime: no job asks for more (minutes)
        self.mfu = mfu if mfu is not None else cfg.get("mfu", MFU)
        bf16 = peak_tflops if peak_tflops is not None else cfg.get("bf16_tflops", H100_BF16_DENSE_TFLOPS)
        fp32 = fp32_peak_tflops if fp32_peak_tflops is not None else cfg.get("fp32_tflops", H100_FP32_TFLOPS)
        self.peak_tflops = {"bf16": bf16, "fp16": bf16, "fp32": fp32}
        own = cfg.get("updates_per_s", {})
        self.updates_per_s, self.source = {}, {}
        for precision in PRECISIONS:
            if precision in own:
                self.updates_per_s[precision], self.source[precision] = own[precision], "config plan.updates_per_s"
            elif precision in MEASURED_UPDATES_PER_S:
                self.updates_per_s[precision], self.source[precision] = MEASURED_UPDATES_PER_S[precision], MEASURED_ON
        self.updates_per_s["fp32"] = self.updates_per_s.get("fp32", self.updates_per_s[FP32_AS])
        self.source.setdefault("fp32", f"our reading: {FP32_AS}'s rate (host-bound: the step takes about as long in "
                                       f"fp32), {self.source[FP32_AS]}")
        own_decode = cfg.get("decode_sentences_per_s")
        self.decode_rate = own_decode or MEASURED_DECODE["sentences_per_s"]
        self.decode_source = "config plan.decode_sentences_per_s" if own_decode else MEASURED_ON
        self.cpu_gflops = cfg.get("cpu_gflops_per_thread", CPU_GFLOPS_PER_THREAD)
        self.safety = cfg.get("safety", SAFETY)

    def host_pass_s(self, layers, precision):
        return layers / MEASURED_SIZE["layers"] / self.updates_per_s[precision]

    def compute_pass_s(self, params, tokens, precision):
        return 6 * params * tokens / (self.peak_tflops[precision] * 1e12 * self.mfu)

    def train_pass(self, layers, params, tokens, precision, cpu_threads=0):
        """(seconds, bound) of one forward/backward pass of `tokens` on one process; cpu_threads: on the CPU."""
        if cpu_threads:
            return 6 * params * tokens / (self.cpu_gflops * 1e9 * cpu_threads), "cpu"
        host, compute = self.host_pass_s(layers, precision), self.compute_pass_s(params, tokens, precision)
        return (host, "host") if host >= compute else (compute, "compute")

    def decode_s(self, layers, d, params, beam, tokens, sentences, cpu_threads=0):
        """Seconds to decode `sentences` of `tokens` target tokens with one checkpoint."""
        if cpu_threads:
            return 2 * params * beam * tokens * sentences / (self.cpu_gflops * 1e9 * cpu_threads)
        size = layers * max(d, MEASURED_SIZE["d_model"]) ** 2 / (MEASURED_SIZE["layers"] * MEASURED_SIZE["d_model"] ** 2)
        return (sentences / self.decode_rate * size * beam / MEASURED_DECODE["beam"]
                * tokens / MEASURED_DECODE["tokens"])

    def cpu_s(self, flops, threads):
        return flops / (self.cpu_gflops * 1e9 * threads)

    def runtime(self, minutes, attempt=1):
        """The minutes a job asks for (SLURM's --time) at an attempt: attempt x SAFETY x its estimate, at least
        MIN_RUNTIME_MINUTES, at most max_runtime."""
        asked = attempt * max(MIN_RUNTIME_MINUTES, math.ceil(self.safety * minutes))
        return min(asked, self.max_runtime) if self.max_runtime else asked


def on_cpu(s, threads):
    """The threads per process of a run on device cpu, 0 for one on a GPU (device cuda or auto)."""
    return threads if s.get("device", "auto") == "cpu" else 0


def job(rule, name, work_s, th, processes=1, cpu_threads=0, warm_s=0.0, known=True, **extra):
    """A job's estimate: its work, a warm-up, the start; the runtime it asks for (None where the config cannot
    tell its size: a local corpus without expected_counts; resources.smk then asks for its kind's default);
    its GPU-hours (every GPU it holds, for as long) or CPU core-hours."""
    minutes = (work_s + warm_s) / 60 + STARTUP_MINUTES
    hours = minutes / 60 * processes
    return {"rule": rule, "job": name, "device": "cpu" if cpu_threads else "gpu", "processes": processes,
            "threads": cpu_threads, "minutes": minutes, "runtime": th.runtime(minutes) if known else None,
            "gpu_hours": 0.0 if cpu_threads else hours, "cpu_hours": hours * cpu_threads, **extra}


def layers_of(s, kind="translation"):
    if kind == "bert":
        return {**PRETRAIN_DEFAULTS, **s}["layers"]
    return s.get("enc_layers", TRAIN_DEFAULTS["enc_layers"]) + s.get("dec_layers", TRAIN_DEFAULTS["dec_layers"])


def training_time(s, params, passes, tokens_per_pass, precision, th, cpu_threads, kind="translation"):
    """(work seconds, warm-up seconds, seconds per pass, bound) of one process's passes."""
    pass_s, bound = th.train_pass(layers_of(s, kind), params, tokens_per_pass, precision, cpu_threads)
    return passes * pass_s, warmup_s(passes, pass_s, cpu_threads), pass_s, bound


def warmup_s(passes, pass_s, cpu_threads=0):
    """The first round's extra time on a GPU (measured: 3x the later rounds' over its 150 updates); none on the CPU."""
    return 0.0 if cpu_threads else min(WARMUP_PASSES, 2 * passes) * pass_s


# ---- runs and their jobs ---------------------------------------------------------------------
def processes(s):
    return s.get("gpus", LAUNCH_DEFAULTS["gpus"]) * s.get("nodes", LAUNCH_DEFAULTS["nodes"])


def translation_updates(s, corpus):
    """(updates, rounds, tokens per update) of a translation run as its trainer runs it (training_cap too)."""
    tokens_per_update = s.get("max_tokens", TRAIN_DEFAULTS["max_tokens"]) * processes(s) * s.get("update_freq", 1)
    pairs = train_pairs(corpus)
    rounds = min(s.get("epochs", TRAIN_DEFAULTS["epochs"]), s.get("max_rounds") or math.inf)  # training_cap: the trainer's flags
    if s.get("max_updates"):
        updates = s["max_updates"]
    elif pairs is None:
        updates = 0
    else:
        per_epoch = math.ceil(pairs * tokens_per_pair(corpus) / tokens_per_update)
        updates = rounds * min(per_epoch, s.get("max_round_updates") or math.inf)
    return updates, rounds, tokens_per_update


def train_job(name, s, corpus, th, threads=1):
    """The `train` job of a translation run, from the config alone (its runtime is planned at parse time):
    each process passes max_tokens update_freq times per update."""
    updates, rounds, tokens_per_update = translation_updates(s, corpus)
    params = translation_params(s, time_vocab(corpus))
    cpu = on_cpu(s, threads)
    precision = s.get("precision", TRAIN_DEFAULTS["precision"])
    max_tokens = s.get("max_tokens", TRAIN_DEFAULTS["max_tokens"])
    work, warm, pass_s, bound = training_time(s, params, updates * s.get("update_freq", 1), max_tokens, precision, th, cpu)
    known = bool(s.get("max_updates")) or train_pairs(corpus) is not None
    return job("train", name, work, th, processes(s), cpu, warm, known, updates=updates, rounds=rounds,
               tokens_per_update=tokens_per_update, pass_s=pass_s, bound=bound, precision=precision, params=params,
               size=size_key(s, "translation", max_tokens, precision, cpu))


def bert_vocab(corpus):
    return corpus["bpe_merges"] + VOCAB_EXTRA + 1  # + <mask>


def bert_updates(s):
    """(updates, rounds, tokens per update, updates of the short first phase) of a BERT pre-training."""
    s = {**PRETRAIN_DEFAULTS, **s}
    long_tokens = s["max_tokens"]
    short = s.get("short_max_tokens") or long_tokens
    frac = s.get("short_fraction", 0) if s.get("short_block_size") else 0
    tokens_per_update = (frac * short + (1 - frac) * long_tokens) * processes(s) * s.get("update_freq", 1)
    rounds = min(math.ceil(s["max_updates"] / s["valid_interval"]), s.get("max_rounds") or math.inf)
    updates = min(s["max_updates"], rounds * min(s["valid_interval"], s.get("max_round_updates") or math.inf))
    return updates, rounds, tokens_per_update, min(updates, round(frac * s["max_updates"]))


def pretrain_job(name, s, vocab, th, threads=1):
    """The `pretrain` job of a BERT run: the short phase's passes at short_max_tokens, then max_tokens."""
    s = {**PRETRAIN_DEFAULTS, **s}
    updates, rounds, tokens_per_update, short_updates = bert_updates(s)
    params = bert_params(s, vocab)
    cpu = on_cpu(s, threads)
    freq, precision = s.get("update_freq", 1), s["precision"]
    short = training_time(s, params, short_updates * freq, s.get("short_max_tokens") or s["max_tokens"], precision, th,
                          cpu, "bert")
    long = training_time(s, params, (updates - short_updates) * freq, s["max_tokens"], precision, th, cpu, "bert")
    first = short if short_updates else long
    return job("pretrain", name, short[0] + long[0], th, processes(s), cpu, first[1], updates=updates, rounds=rounds,
               tokens_per_update=tokens_per_update, pass_s=long[2], bound=long[3], precision=precision, params=params,
               size=size_key(s, "bert", s["max_tokens"], precision, cpu))


def glue_pairs(task, glue=None):
    """Training pairs of a GLUE task: a generated one's n_train (the config's glue.TASK), else GLUE's."""
    if glue and glue.get("source") == "generated":
        return glue["generator"]["n_train"]
    return GLUE_TRAIN_PAIRS.get(task, 0)


def finetune_job(name, s, vocab, ft, task, rnd, th, cap=0, threads=1, glue=None):
    """One `finetune` job (a run's round on a task): every grid point (batch x lr x epochs) and seed trains
    afresh from the round's checkpoint, in fp32 (finetune.py: no autocast), batches of batch x max_len
    tokens at most (padded to the longest pair). cap: training_cap.finetune_updates; glue: the config's task."""
    s = {**PRETRAIN_DEFAULTS, **s}
    pairs = glue_pairs(task, glue)
    per_point = len(ft["lr"]) * ft["seeds"]  # the lr and seed axes repeat each batch x epochs
    params = bert_params(s, vocab)
    cpu = on_cpu(s, threads)
    work, warm, updates, tokens, trainings = 0.0, None, 0, 0, 0
    for b in ft["batch"]:
        pass_s, _ = th.train_pass(layers_of(s, "bert"), params, b * ft["max_len"], "fp32", cpu)
        for e in ft["epochs"]:
            n = min(e * math.ceil(pairs / b), cap or math.inf)
            work += per_point * (n * pass_s + CHECKPOINT_S)
            updates += per_point * n
            tokens += per_point * min(n * b, e * pairs) * ft["max_len"]
            trainings += per_point
            warm = warmup_s(n, pass_s, cpu) if warm is None else warm
    return job("finetune", f"{name} {task} round{rnd}", work, th, 1, cpu, warm or 0.0, updates=updates, tokens=tokens,
               trainings=trainings, params=params)


def decode_job(run, s, corpus, decode, average, th, threads=1):
    """An `evaluate` job (average 0: every epoch's checkpoint decoded) or an `evaluate_averaged` one (the
    average of the last `average` checkpoints decoded once), on the run's device."""
    _, rounds, _ = translation_updates(s, corpus)
    decode = {**DECODE_DEFAULTS, **decode}
    sentences = decode_sentences(corpus, decode["split"])
    params = translation_params(s, time_vocab(corpus))
    cpu = on_cpu(s, threads)
    one = th.decode_s(layers_of(s), s.get("d_model", TRAIN_DEFAULTS["d_model"]), params, decode["beam"],
                      tokens_per_pair(corpus), sentences, cpu)
    decoded = 1 if average else rounds
    work = one + average * CHECKPOINT_S if average else rounds * (one + CHECKPOINT_S)  # averaged: n loaded, one decoded
    rule, name = ("evaluate_averaged", f"{run} avg{average}") if average else ("evaluate", run)
    return job(rule, name, work, th, 1, cpu, known=sentences > 0, run=run, checkpoints=decoded,
               sentences=decoded * sentences,
               beam=decode["beam"], decode_s=one,
               size=("decode", layers_of(s), s.get("d_model", TRAIN_DEFAULTS["d_model"]), decode["beam"],
                     tokens_per_pair(corpus), "cpu" if cpu else "gpu"))


def probe_job(probe, corpora, th, threads=1):
    """A probe job (Fig 3's gradient probes, Liu's Figs 2/5 at init, Figs 7-8, Figs 3/11): its models'
    forward and forward/backward passes of one batch of the run's max_tokens each, and checkpoints loaded,
    on the CPU: the probe rules ask for no GPU (threads.train threads)."""
    flops, loads = 0, 0
    for m in probe["models"]:
        s = m["settings"]
        params = translation_params(s, time_vocab(corpora[s["corpus"]]))
        tokens = s.get("max_tokens", TRAIN_DEFAULTS["max_tokens"])
        flops += (6 * m.get("fwd_bwd", 0) + 2 * m.get("forward", 0)) * params * tokens
        loads += m.get("checkpoints", 0)
    return job(probe["rule"], probe["job"], th.cpu_s(flops, threads) + loads * CHECKPOINT_S, th, 1, threads,
               group=probe["group"], flops=flops, passes=sum(m.get("fwd_bwd", 0) for m in probe["models"]),
               forwards=sum(m.get("forward", 0) for m in probe["models"]))


def size_key(s, kind, tokens, precision, cpu):
    """A row of the throughput table: kind, layers (encoder+decoder), d, FFN, batch tokens, precision, device."""
    defaults = PRETRAIN_DEFAULTS if kind == "bert" else TRAIN_DEFAULTS
    layers = layers_of(s, kind)
    shape = f"{layers}" if kind == "bert" else (f"{s.get('enc_layers', defaults['enc_layers'])}+"
                                                 f"{s.get('dec_layers', defaults['dec_layers'])}")
    return (kind, shape, layers, s.get("d_model", defaults["d_model"]), s.get("ffn_dim", defaults["ffn_dim"]), tokens,
            precision, "cpu" if cpu else "gpu")


def plan_translation(name, s, corpus, vocab, th, needs=None, threads=1):
    j = train_job(name, s, corpus, th, threads)
    params = translation_params(s, vocab)
    return run_row(name, "translation", s, params, j, round_updates(j["rounds"], j["updates"]), needs)


def plan_bert(name, s, vocab, th, needs=None, threads=1):
    j = pretrain_job(name, s, vocab, th, threads)
    return run_row(name, "bert", {**PRETRAIN_DEFAULTS, **s}, j["params"], j, round_updates(j["rounds"], j["updates"]),
                   needs)


def plan_finetune(name, s, vocab, ft, tasks, rounds, th, cap=0, threads=1, glue=None):
    """Every fine-tuning of a BERT run's rounds (bert.smk: one job per run, task and round); nothing is saved.
    rounds: the fine-tuned rounds (a count: every round's jobs are alike); glue: {task: its config}."""
    jobs = [finetune_job(name, s, vocab, ft, task, r, th, cap, threads, (glue or {}).get(task))
            for r in range(1, rounds + 1) for task in tasks]
    params = bert_params({**PRETRAIN_DEFAULTS, **s}, vocab)  # the pre-trained model's count: the classifier's to a few d x d
    tokens = sum(j["tokens"] for j in jobs)
    return {"run": f"{name} fine-tuning", "kind": "finetune", "params": params, "updates": sum(j["updates"] for j in jobs),
            "tokens": tokens, "flops": 6 * params * tokens, "gpu_hours": sum(j["gpu_hours"] for j in jobs),
            "decode_gpu_hours": 0.0, "cpu_hours": sum(j["cpu_hours"] for j in jobs), "checkpoints": 0,
            "checkpoint_bytes": 0, "retained_checkpoints": 0, "retained_bytes": 0,
            "trainings": sum(j["trainings"] for j in jobs), "precision": "fp32", "jobs": jobs}  # finetune.py: no autocast


def round_updates(rounds, updates):
    """[(round, updates done at its end)]: the run's updates spread evenly over its rounds."""
    per_round = math.ceil(updates / rounds) if rounds else 0
    return [(r, min(r * per_round, updates)) for r in range(1, rounds + 1)]


def retained_rounds(rounds_done, needs):
    """The rounds whose checkpoints retention keeps; every one where nothing is known of the run's readers
    (a run no target trains)."""
    return len(rounds_done) if needs is None else len(needed_epochs(needs, rounds_done))


def run_row(name, kind, s, params, j, rounds_done, needs=None):
    tokens = j["updates"] * j["tokens_per_update"]
    flops = 6 * params * tokens
    optimizer = s.get("optimizer", TRAIN_DEFAULTS["optimizer"])
    epoch_ckpt, last_ckpt = checkpoint_bytes(params, optimizer, s.get("momentum", 0.0))
    kept = retained_rounds(rounds_done, needs)
    return {"run": name, "kind": kind, "params": params, "updates": j["updates"], "tokens": tokens, "flops": flops,
            "gpu_hours": j["gpu_hours"], "decode_gpu_hours": 0.0, "cpu_hours": j["cpu_hours"],
            "checkpoints": len(rounds_done) + 1, "precision": j["precision"],
            "checkpoint_bytes": len(rounds_done) * epoch_ckpt + last_ckpt, "retained_checkpoints": kept + 1,
            "retained_bytes": kept * epoch_ckpt + last_ckpt, "jobs": [j]}


def plan(spec, peak_tflops=None, mfu=None, fp32_peak_tflops=None):
    """{'runs': [row per run], 'groups': {name: sums}, 'total': sums, 'data_bytes': int, 'jobs': [every job
    estimated], 'probes': [probe jobs], 'throughput': Throughput}. The throughput: the spec's `plan` (the
    config's section), where a flag given here does not replace it."""
    th = Throughput(spec.get("plan"), peak_tflops, mfu, fp32_peak_tflops, spec.get("max_runtime"))
    threads = {"train": 1, "evaluate": 1, **spec.get("threads", {})}
    used = sorted({s["corpus"] for s in spec["runs"].values()})
    vocabs = {c: corpus_vocab(spec["corpora"][c], spec.get("dicts", {}).get(c)) for c in used}
    needs = spec.get("checkpoints", {}).get("needs", {})
    rows = {name: plan_translation(name, s, spec["corpora"][s["corpus"]], vocabs[s["corpus"]][0], th, needs.get(name),
                                   threads["train"])
            for name, s in spec["runs"].items()}
    bert = spec.get("bert", {})
    for name, s in bert.get("runs", {}).items():
        vocab = bert_vocab(bert["corpora"][s["corpus"]])
        rows[name] = plan_bert(name, s, vocab, th, needs.get(name), threads["train"])
        if bert.get("finetune") and bert.get("tasks") and name in bert["finetune_rounds"]:  # the DAG fine-tunes Fig 5's
            ft = plan_finetune(name, s, vocab, bert["finetune"], bert["tasks"], bert["finetune_rounds"][name], th,
                               bert.get("finetune_updates", 0), threads["evaluate"], bert.get("glue"))
            rows[ft["run"]] = ft
    for d in spec.get("decodes", []):  # the DAG's evaluate and evaluate_averaged jobs
        s = spec["runs"][d["run"]]
        j = decode_job(d["run"], s, spec["corpora"][s["corpus"]], d.get("decode", {}), d.get("average", 0), th,
                       threads["evaluate"])
        row = rows[d["run"]]
        row["decode_gpu_hours"] += j["gpu_hours"]
        row["cpu_hours"] += j["cpu_hours"]
        row["jobs"].append(j)
    probes = [probe_job(p, spec["corpora"], th, threads["train"]) for p in spec.get("probes", [])]
    groups = {group: totals([rows[r] for r in dict.fromkeys(runs)], [j for j in probes if j["group"] == group])
              for group, runs in spec.get("groups", {}).items()}
    for group in dict.fromkeys(j["group"] for j in probes):  # a figure of probes only (Fig 3, Liu's Figs 2 and 5)
        groups.setdefault(group, totals([], [j for j in probes if j["group"] == group]))
    data = sum(corpus_data_bytes(spec["corpora"][c]) for c in used)
    jobs = [j for r in rows.values() for j in r["jobs"]] + probes
    for j in jobs:
        j["asked"] = asked_runtime(j, spec.get("runtimes", {}))
    return {"runs": list(rows.values()), "groups": groups, "total": totals(list(rows.values()), probes),
            "data_bytes": data, "vocab": vocabs, "keep": spec.get("checkpoints", {}).get("keep", "all"), "jobs": jobs,
            "probes": probes, "throughput": th}


# the config's resources kind whose runtime a rule's jobs ask for (resources.smk); the probe rules ask for none
RESOURCE_KIND = {"train": "train", "pretrain": "train", "evaluate": "evaluate", "evaluate_averaged": "evaluate",
                 "finetune": "evaluate"}


def asked_runtime(j, runtimes):
    """The minutes the DAG's job asks SLURM for at attempt 1 (lnrepro.pipeline.resources): the config's
    `resources.KIND.runtime` where set, else the planned runtime, else (a size the config does not state) the
    kind's default; None for a rule that asks for none (the profile's default-resources)."""
    kind = RESOURCE_KIND.get(j["rule"])
    if kind is None:
        return None
    given = runtimes.get(kind, {})
    return given.get("explicit") or j["runtime"] or given.get("default")


SUMMED = ("updates", "tokens", "flops", "gpu_hours", "decode_gpu_hours", "cpu_hours", "checkpoints", "checkpoint_bytes",
          "retained_checkpoints", "retained_bytes")


def totals(rows, probes=()):
    """Sums of runs (with their decoding) and of probe jobs (CPU core-hours)."""
    t = {"trainings": sum(r.get("trainings", 1) for r in rows), **{k: sum(r[k] for r in rows) for k in SUMMED}}
    t["cpu_hours"] += sum(j["cpu_hours"] for j in probes)
    t["probe_jobs"] = len(probes)
    return t


def throughput_rows(p):
    """One row per model size, batch, precision and device of the plan's trainings: what a pass is assumed to
    take and why (the measured size, scaled by layers, or compute-bound at the assumed MFU)."""
    th, seen = p["throughput"], {}
    for j in p["jobs"]:
        if j["rule"] in ("train", "pretrain") and j["size"] not in seen:
            seen[j["size"]] = {"job": j, "runs": 0}
        if j["rule"] in ("train", "pretrain"):
            seen[j["size"]]["runs"] += 1
    rows = []
    for (kind, shape, layers, d, ffn, tokens, precision, device), v in seen.items():
        j = v["job"]
        mfu = 6 * j["params"] * tokens / j["pass_s"] / (th.peak_tflops[precision] * 1e12)
        if device == "cpu":
            source = f"our reading: {th.cpu_gflops:g} GFLOP/s per thread x {j['threads']} (CPU)"
        elif j["bound"] == "compute":
            source = f"our reading: compute-bound at {th.mfu:.0%} of {th.peak_tflops[precision]:g} TFLOP/s"
        elif (kind, layers, d, ffn, tokens) == ("translation", *MEASURED_SIZE.values()):
            source = th.source[precision]
        else:
            source = f"our reading: host-bound, the measured 6+6 d 512 pass x {layers}/12 layers ({th.source[precision]})"
        rows.append({"kind": kind, "layers": shape, "d": d, "ffn": ffn, "tokens": tokens, "precision": precision,
                     "device": device, "pass_s": j["pass_s"], "tokens_per_s": tokens / j["pass_s"],
                     "mfu": mfu if device == "gpu" else None, "runs": v["runs"], "source": source})
    return rows


def decode_rows(p):
    th, seen = p["throughput"], {}
    for j in p["jobs"]:
        if j["rule"] in ("evaluate", "evaluate_averaged"):
            seen.setdefault(j["size"], {"job": j, "jobs": 0, "checkpoints": 0, "hours": 0.0})
            v = seen[j["size"]]
            v["jobs"] += 1
            v["checkpoints"] += j["checkpoints"]
            v["hours"] += j["gpu_hours"] + j["cpu_hours"]
    rows = []
    for (_, layers, d, beam, tokens, device), v in seen.items():
        j = v["job"]
        rate = j["sentences"] / j["checkpoints"] / j["decode_s"] if j["decode_s"] else 0
        if device == "cpu":
            source = f"our reading: 2 x parameters per hypothesis token at {th.cpu_gflops:g} GFLOP/s per thread"
        elif (layers, d, beam, tokens) == (MEASURED_SIZE["layers"], MEASURED_SIZE["d_model"], MEASURED_DECODE["beam"],
                                           MEASURED_DECODE["tokens"]):
            source = th.decode_source
        else:
            source = (f"our reading: {th.decode_rate:g} sentences/s ({th.decode_source}; 12 layers, d 512, beam 5, "
                      f"{MEASURED_DECODE['tokens']} tokens) x 12 x 512^2 / (layers x d^2) x 5 / beam x "
                      f"{MEASURED_DECODE['tokens']} / tokens")
        rows.append({"layers": layers, "d": d, "beam": beam, "tokens": tokens, "device": device, "rate": rate,
                     "jobs": v["jobs"], "checkpoints": v["checkpoints"], "hours": v["hours"], "source": source})
    return rows


# ---- output ----------------------------------------------------------------------------------
def gb(n):
    return f"{n / 1e9:,.1f}"


def md_row(name, t):
    return (f"| {name} | {t['trainings']:,} | {t['updates']:,} | {t['flops']:.3g} | {t['gpu_hours']:,.1f} "
            f"| {t['decode_gpu_hours']:,.1f} | {t['cpu_hours']:,.1f} | {gb(t['checkpoint_bytes'])} "
            f"| {gb(t['retained_bytes'])} |")


def retention_line(keep):
    """What the 'after retention' column means under the config's checkpoints.keep."""
    what = ("last.pt and the epochs a configured step reads again, by lnrepro.retention.needed_epochs: "
            "the last admin.average_last, the probe's after warm-up, Figs 3/11's pairs, Figs 7-8's last, BERT's "
            "fine-tuned rounds; the rest is deleted once the run's readers, per-epoch decoding too, finish, so "
            "until then a run holds every epoch")
    if keep == "needed":
        return f"- after retention (`checkpoints: {{keep: needed}}`, this config's): {what}"
    return (f"- after retention: what `checkpoints: {{keep: needed}}` would leave: {what}. This config keeps "
            f"all (`keep: {keep}`): its disk is the 'all kept' column")


def hours(minutes):
    return f"{minutes / 60:,.1f} h" if minutes >= 90 else f"{minutes:,.0f} min"


def markdown(p, *_):
    total, th = p["total"], p["throughput"]
    header = ("| | trainings | updates | model FLOPs | training GPU-h | decoding GPU-h | CPU core-h "
              "| checkpoints GB, all kept | after retention GB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    tunings = sum(r.get("trainings", 0) for r in p["runs"] if r["kind"] == "finetune")
    tuned = f" ({total['trainings'] - tunings:,} + {tunings:,} BERT fine-tunings)" if tunings else ""
    jobs = p["jobs"]
    decodes = [j for j in jobs if j["rule"] in ("evaluate", "evaluate_averaged")]
    longest = bool(jobs)
    gpu = total["gpu_hours"] + total["decode_gpu_hours"]
    cpu_jobs = [j for j in jobs if j["device"] == "cpu" and j["rule"] not in {q["rule"] for q in p["probes"]}]
    cpu_what = f"{total['probe_jobs']:,} probe jobs" + (f", {len(cpu_jobs):,} jobs of runs on device cpu" if cpu_jobs else "")
    over = [j for j in jobs if th.max_runtime and j["runtime"] and math.ceil(th.safety * j["minutes"]) > th.max_runtime]
    unknown = [j for j in jobs if j["runtime"] is None]
    lines = ["# Cost plan", "",
             f"**Total: {total['trainings']:,} trainings{tuned}, {total['updates']:,} updates, {total['flops']:.3g} FLOPs; "
             f"{gpu:,.1f} GPU-hours ({total['gpu_hours']:,.1f} training and fine-tuning, {total['decode_gpu_hours']:,.1f} "
             f"decoding in {len(decodes):,} jobs) and {total['cpu_hours']:,.1f} CPU core-hours ({cpu_what}); "
             f"{gb(total['checkpoint_bytes'])} GB of checkpoints "
             f"({total['checkpoints']:,} files; {gb(total['retained_bytes'])} GB, {total['retained_checkpoints']:,} "
             f"files, after retention) + {gb(p['data_bytes'])} GB of data.**", "",
             "## Assumptions (estimates, not measurements)", "",
             f"- time of a forward/backward pass of one process: the longer of host-bound (the measured `lnrepro train` "
             f"step of 6+6 layers, d 512, FFN 1024, 4,096-token batches, x layers / 12: the trainer at d 512 is bound "
             f"by the host, not its FLOPs; {MEASURED_ON}: {MEASURED_UPDATES_PER_S['bf16']} updates/s bf16, "
             f"{MEASURED_UPDATES_PER_S['fp16']} fp16, ~1.1% MFU) and compute-bound (6 x parameters x tokens at "
             f"{th.mfu:.0%} MFU of {th.peak_tflops['bf16']:g} TFLOP/s for fp16/bf16, {th.peak_tflops['fp32']:g} for "
             f"fp32 and BERT fine-tuning; lnrepro enables no TF32): the table below, per model size. Set the config's "
             f"`plan: {{updates_per_s, decode_sentences_per_s, mfu, bf16_tflops, fp32_tflops, cpu_gflops_per_thread}}` "
             f"from `lnrepro gpu-check` / `lnrepro bench` on your GPU",
             f"- decoding (every evaluate job of the DAG: each epoch's checkpoint of the runs a BLEU panel, claim or "
             f"table reads, and the averaged checkpoints of Liu's tables): {th.decode_rate:g} beam-5 sentences/s at "
             f"6+6, d 512 ({th.decode_source}, fp32 decoding, {MEASURED_DECODE['tokens']}-token sentences), scaled by "
             f"layers x d^2, beam and target length (tokens per pair below) on the split's sentences; "
             f"{CHECKPOINT_S:g} s to load each checkpoint",
             f"- probes (Fig 3's gradient probes, Liu's Figs 2 and 5 at initialization, Figs 7-8, Figs 3/11): their "
             f"forward (2 x parameters x tokens) and forward/backward (6 x) passes of one batch of the run's max_tokens, "
             f"counted from their settings, on the CPU as the rules run them (no GPU asked for; threads.train threads) "
             f"at {th.cpu_gflops:g} GFLOP/s per thread (our reading: the low end of `lnrepro bench --device cpu`); runs "
             f"on device cpu train and decode at that rate too",
             f"- a job's estimate: its passes + the first round's warm-up ({WARMUP_PASSES} passes more: the measured "
             f"first round of 150 updates took 3x as long) + {STARTUP_MINUTES:g} min to start; validation passes left "
             f"out. The runtime it asks SLURM for: {th.safety:g} x the estimate, at least {MIN_RUNTIME_MINUTES} min "
             f"(results/plan_jobs.csv; the DAG's `runtime` of train, pretrain, evaluate, evaluate_averaged and finetune "
             f"jobs where the config's `resources:` sets none; a retry asks attempt x it, and a training resumes from "
             f"its last epoch)" + (f"; at most `resources.max_runtime` {th.max_runtime:,} min: {len(over):,} jobs would ask "
                                    f"for more, each killed at it and retried (a training resumes from its last epoch)"
                                    if th.max_runtime else ""),
             "- GPU-hours: a job's estimate x the GPUs it holds (a multi-GPU run: every process passes its own batches; "
             "communication left out)",
             f"- model FLOPs = 6 x parameters x tokens trained on (attention's score FLOPs left out)",
             f"- updates = epochs x ceil(training pairs x tokens per pair / tokens per update), or max_updates; "
             f"tokens per pair {TOKENS_PER_PAIR} (generated by task: {GENERATED_TOKENS_PER_PAIR}); training pairs: generated n_train less its valid share, "
             f"IWSLT14 {IWSLT14_TRAIN_PAIRS:,} (prepare-iwslt14.sh), WMT14 {WMT14_TRAIN_PAIRS:,} "
             f"(Vaswani et al. 2017 §5.1)",
             f"- vocabulary: the built dictionary where it exists, else bpe_merges + {VOCAB_EXTRA} (characters and "
             f"special symbols; BERT's: always, + <mask>): "
             + ", ".join(f"{c} {v:,} ({src})" for c, (v, src) in p["vocab"].items())
             + "; the times always use the estimate, as the DAG's runtimes do",
             f"- checkpoints: every round's epochN.pt (weights, {BYTES_PER_PARAM} B per parameter) and last.pt "
             f"(weights + optimizer moments: Adam/RAdam 2, SGD without momentum 0), all kept",
             retention_line(p.get("keep", "all")),
             f"- data: binarized splits and {TEXT_STAGES} text stages of the corpora the runs train on; "
             f"downloads and BERT's pre-training text not counted",
             f"- BERT fine-tuning: every grid point and seed of every fine-tuned round, each a training of its own, "
             f"on GLUE's training pairs {GLUE_TRAIN_PAIRS} padded to max_len (an upper bound); it saves no checkpoint",
             "- a run in several figures or tables counts in each of them, once in the total", "",
             "## Throughput assumed per model size (training)", "",
             "| kind | layers | d | FFN | batch tokens | precision | device | s per pass | batch tokens/s | MFU | runs "
             "| source |", "|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|"]
    for r in throughput_rows(p):
        mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else ""
        lines.append(f"| {r['kind']} | {r['layers']} | {r['d']} | {r['ffn']} | {r['tokens']:,} | {r['precision']} "
                     f"| {r['device']} | {r['pass_s']:.4f} | {r['tokens_per_s']:,.0f} | {mfu} | {r['runs']} "
                     f"| {r['source']} |")
    lines += ["", "## Decoding", "", "| layers | d | beam | tokens per sentence | device | sentences/s | jobs "
              "| checkpoints decoded | hours | source |", "|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    lines += [f"| {r['layers']} | {r['d']} | {r['beam']} | {r['tokens']} | {r['device']} | {r['rate']:,.1f} "
              f"| {r['jobs']:,} | {r['checkpoints']:,} | {r['hours']:,.1f} | {r['source']} |" for r in decode_rows(p)]
    if p["probes"]:
        lines += ["", "## Probes (CPU)", "", "| job | figure | forward/backward passes | forwards | FLOPs | threads "
                  "| estimate | planned runtime | CPU core-h |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {j['rule']} {j['job']} | {j['group']} | {j['passes']:,} | {j['forwards']:,} | {j['flops']:.3g} "
                  f"| {j['threads']} | {hours(j['minutes'])} | {hours(j['runtime'])} | {j['cpu_hours']:,.2f} |"
                  for j in p["probes"]]
        lines += ["", "The probe rules ask SLURM for no time of their own (the profile's default-resources, 60 x attempt "
                  "minutes): a probe planned longer needs `--set-resources RULE:runtime=MINUTES`."]
    if longest:
        by_rule = {}
        for j in jobs:
            by_rule.setdefault(j["rule"], []).append(j)
        lines += ["", "## Jobs' wall time (results/plan_jobs.csv: every job)", "",
                  "| rule | jobs | shortest estimate | longest estimate | its planned runtime | the DAG asks for "
                  "| longest job |", "|---|---:|---:|---:|---:|---:|---|"]
        for rule, js in by_rule.items():
            top = max(js, key=lambda j: j["minutes"])
            planned = hours(top["runtime"]) if top["runtime"] else "not estimated"
            asked = hours(top["asked"]) if top["asked"] else "the profile's default"
            lines.append(f"| {rule} | {len(js):,} | {hours(min(j['minutes'] for j in js))} | {hours(top['minutes'])} "
                         f"| {planned} | {asked} | {top['job']} |")
        if unknown:
            lines += ["", f"{len(unknown):,} jobs of corpora whose size the config does not state (a local corpus "
                      f"without expected_counts): not estimated; they ask for their kind's runtime "
                      f"(`resources:`, else 240 minutes training, 120 decoding)"]
    lines += ["", "## Per figure and table", "", header,
              *(md_row(g, t) for g, t in p["groups"].items()), md_row("**total**", total), "",
              f"## The {TOP} runs that dominate (GPU-hours)", "", header]
    top = sorted(p["runs"], key=lambda r: -(r["gpu_hours"] + r["decode_gpu_hours"]))[:TOP]
    lines += [md_row(r["run"], {"trainings": 1, **r}) for r in top]
    lines += ["", "## Every run", "", "| run | precision | parameters | updates | tokens | training GPU-h | decoding GPU-h "
              "| CPU core-h | checkpoints GB, all kept | after retention GB |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['run']} | {r['precision']} | {r['params']:,} | {r['updates']:,} | {r['tokens']:.3g} "
              f"| {r['gpu_hours']:,.1f} | {r['decode_gpu_hours']:,.1f} | {r['cpu_hours']:,.1f} "
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


JOB_FIELDS = ["rule", "job", "device", "processes", "threads", "estimated_minutes", "runtime_minutes", "asked_minutes",
              "gpu_hours", "cpu_hours"]


def write_jobs_csv(p, path):
    """One row per job: its estimate, its planned runtime (safety x the estimate, at most max_runtime; empty
    where the config does not state the corpus's size) and what the DAG asks SLURM for at attempt 1 (the
    config's resources runtime where it sets one; empty for the probe rules, which ask for none: the
    profile's default)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=JOB_FIELDS, extrasaction="ignore")
        w.writeheader()
        for j in p["jobs"]:
            w.writerow({**j, "estimated_minutes": round(j["minutes"], 1), "runtime_minutes": j["runtime"],
                        "asked_minutes": j["asked"],
                        "gpu_hours": round(j["gpu_hours"], 3), "cpu_hours": round(j["cpu_hours"], 3)})


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object("runs", "corpora"),
                   help="JSON: runs (resolved settings), corpora, groups {figure or table: [runs]}, bert, decodes, "
                        "probes, threads, plan (the config's throughput section)")
    p.add_argument("--peak-tflops", type=float, default=None,
                   help="a GPU's peak TFLOP/s for fp16/bf16 runs (default: the spec's plan.bf16_tflops, else an H100 "
                        "SXM's dense bf16, 989)")
    p.add_argument("--fp32-peak-tflops", type=float, default=None,
                   help="its peak TFLOP/s for fp32 runs (default: plan.fp32_tflops, else an H100 SXM's FP32, 67; no "
                        "TF32 is enabled)")
    p.add_argument("--mfu", type=float, default=None,
                   help="model FLOPs utilization, 0-1, where a pass is compute-bound (default: plan.mfu, else 0.3)")
    p.add_argument("--md", required=True, help="the plan, in Markdown")
    p.add_argument("--csv", required=True, help="one row per run, figure or table, and the total")
    p.add_argument("--jobs-csv", help="one row per job: estimated minutes and the runtime asked for")


def run(args):
    p = plan(json.loads(args.spec), args.peak_tflops, args.mfu, args.fp32_peak_tflops)
    Path(args.md).parent.mkdir(parents=True, exist_ok=True)
    Path(args.md).write_text(markdown(p))
    write_csv(p, args.csv)
    if getattr(args, "jobs_csv", None):
        write_jobs_csv(p, args.jobs_csv)
    t = p["total"]
    print(f"plan: {t['gpu_hours'] + t['decode_gpu_hours']:,.1f} GPU-hours ({t['decode_gpu_hours']:,.1f} decoding), "
          f"{t['cpu_hours']:,.1f} CPU core-hours, {gb(t['checkpoint_bytes'])} GB checkpoints, "
          f"{gb(t['retained_bytes'])} GB after retention; {args.md}")
