"""Speed of our Transformer against torch.nn.Transformer configured identically, in one process.

Three measurements, ours and the reference interleaved repetition by repetition (so machine
noise hits both) and reported as the median repetition: training throughput (target tokens/s
of forward + label-smoothed loss + backward + AdamW step), decoding speed (our cached beam
search against a beam search that recomputes the whole decoder prefix every step) and achieved
FLOP/s of the training step as a fraction of the measured matmul peak (MFU), with where the
step's time goes (matmul, attention, dropout kernels) and how fast its matmuls run at its shapes.
"""
import csv
import statistics
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import DeviceType

from ..core.beam import beam_search
from ..core.data import BOS, EOS, PAD
from ..core.device import pick_device
from ..core.loop import build_optimizer
from ..core.model import ModelConfig, Transformer, label_smoothed_loss, sinusoidal_table, token_embedding
from ..core.precision import AUTOCAST_DTYPES, PRECISIONS, Precision
from ..core.translation import TrainConfig

COLUMNS = ["metric", "ours", "reference", "ratio", "unit", "device", "threads", "config"]


def add_arguments(p):
    p.add_argument("--device", default="auto", help="cpu | cuda | auto")
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads; 0 = torch's default")
    for flag, default, help_text in (("--d-model", 64, "model width d"), ("--ffn-dim", 256, "FFN inner width"),
                                     ("--heads", 4, "attention heads"), ("--vocab", 1000, "vocabulary size")):
        p.add_argument(flag, type=int, default=default, help=help_text)
    p.add_argument("--layers", type=int, default=6, help="encoder layers = decoder layers")
    p.add_argument("--dropout", type=float, default=0.3, help="dropout on embeddings and sublayer outputs")
    p.add_argument("--norm", choices=("pre", "post"), default="pre", help="residual sublayers of both models")
    p.add_argument("--batch-tokens", type=int, default=1000, help="B = batch_tokens // src_len sentences")
    p.add_argument("--src-len", type=int, default=24, help="length of every source and target sentence")
    p.add_argument("--steps", type=int, default=20, help="timed training steps per model, over all repetitions")
    p.add_argument("--warmup-steps", type=int, default=3, help="untimed training steps per model first")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repetitions; the median is reported")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="both models' arithmetic as a run's (lnrepro.core.precision): bf16 autocast, or fp16 autocast "
                        "with fairseq's dynamic loss scaling; the peak matmul in the same dtype")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile both models' training forward (as train --compile does); decoding stays eager")
    p.add_argument("--decode-sentences", type=int, default=128, help="per model and beam size, over all repetitions")
    p.add_argument("--beam", type=int, default=5, help="beam size decoded (greedy, beam 1, always too)")
    p.add_argument("--peak-size", type=int, default=0,
                   help="n of the n x n x n matmul whose FLOP/s is the peak; 0: 8192 on a GPU, 1024 on the CPU")
    p.add_argument("--out", default="results/bench.csv", help="CSV of every metric, ours vs the reference")


class Reference(nn.Module):
    """torch.nn.Transformer with our embeddings (scaled, sinusoidal positions, tied output projection),
    our dropout placement and our final-LayerNorm rule (Pre-LN only), so both compute the same function."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, pre = cfg.d_model, cfg.enc_norm == "pre"
        self.src_emb, self.tgt_emb = token_embedding(cfg, cfg.vocab_size), token_embedding(cfg, cfg.vocab_size)
        self.scale, self.dropout = d ** 0.5, cfg.dropout
        self.register_buffer("positions", sinusoidal_table(cfg.max_positions + PAD + 1, d), persistent=False)
        layer = dict(d_model=d, nhead=cfg.heads, dim_feedforward=cfg.ffn_dim, dropout=cfg.dropout,
                     activation="relu", batch_first=True, norm_first=pre)
        # nn.Transformer always adds final LayerNorms; ours has them only with Pre-LN
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), cfg.enc_layers,
                                        norm=nn.LayerNorm(d) if pre else None, enable_nested_tensor=False)
        decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer), cfg.dec_layers,
                                        norm=nn.LayerNorm(d) if pre else None)
        self.core = nn.Transformer(d, cfg.heads, custom_encoder=encoder, custom_decoder=decoder, batch_first=True)
        # torch uses one dropout rate everywhere; ours has separate attention and activation rates
        for m in self.modules():
            if isinstance(m, nn.MultiheadAttention):
                m.dropout = cfg.attn_dropout
            if isinstance(m, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
                m.dropout.p = cfg.act_dropout

    def embed(self, emb, tokens):
        pos = torch.arange(tokens.size(1), device=tokens.device) + PAD + 1
        return F.dropout(self.scale * emb(tokens) + self.positions[pos], self.dropout, self.training)

    def encode(self, src):
        pad = src == PAD
        return self.core.encoder(self.embed(self.src_emb, src), src_key_padding_mask=pad), pad

    def decode(self, prev, memory, pad):
        T = prev.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=prev.device)
        x = self.core.decoder(self.embed(self.tgt_emb, prev), memory, tgt_mask=causal, tgt_is_causal=True,
                              memory_key_padding_mask=pad)
        return F.linear(x, self.tgt_emb.weight)

    def forward(self, src, prev):
        return self.decode(prev, *self.encode(src))


@torch.no_grad()
def recompute_beam(ref, src, beam, max_len):
    """Naive beam search: every step re-runs the decoder over the whole prefix (no cache). </s> is
    masked until the last step, where it is forced, so every hypothesis has max_len + 1 tokens.
    Beam 1 is greedy decoding. Returns the number of generated tokens (counting </s>)."""
    B, k = src.size(0), beam
    memory, pad = ref.encode(src)
    memory, pad = memory.repeat_interleave(k, 0), pad.repeat_interleave(k, 0)
    tokens = torch.full((B * k, 1), EOS, dtype=torch.long, device=src.device)
    scores = torch.zeros(B, k, device=src.device)
    scores[:, 1:] = float("-inf")  # beams start identical: expand only the first
    base = (torch.arange(B, device=src.device) * k)[:, None]
    V = ref.tgt_emb.num_embeddings
    banned = torch.zeros(V, dtype=torch.bool, device=src.device)
    banned[[BOS, PAD, EOS]] = True
    all_but_eos = torch.arange(V, device=src.device) != EOS
    for step in range(max_len + 1):
        lprobs = ref.decode(tokens, memory, pad)[:, -1].float().log_softmax(-1)  # the whole prefix, again
        lprobs = lprobs.masked_fill(all_but_eos if step == max_len else banned, float("-inf"))
        scores, idx = (scores.view(-1, 1) + lprobs).view(B, k * V).topk(k, dim=1)
        tokens = torch.cat([tokens[(base + idx // V).view(-1)], (idx % V).view(-1, 1)], dim=1)
    return B * (max_len + 1)


def training_flops(cfg: ModelConfig, batch, src_len, tgt_len):
    """Matmul FLOPs of one training step (forward + backward = 3 x forward), 2*m*n*k per matmul.

    Per source token and encoder layer: q,k,v,out projections 4*2d^2, scores QK^T and AV 2*2*S*d,
    FFN 2*2*d*f. Per target token and decoder layer: self-attention 8d^2 + 4Td (the full T x T
    square, as the kernels compute it, mask or not), cross-attention q/out projections 4d^2 plus
    scores/AV 4Sd, FFN 4df; cross-attention k/v projections 4d^2 per source token. Output
    projection 2dV per target token. Embeddings, LayerNorm, softmax, loss: no matmuls, not counted."""
    d, f, V, S, T = cfg.d_model, cfg.ffn_dim, cfg.vocab_size, src_len, tgt_len
    encoder = cfg.enc_layers * S * (8 * d * d + 4 * S * d + 4 * d * f)
    self_attn, cross_attn = T * (8 * d * d + 4 * T * d), T * (4 * d * d + 4 * S * d) + S * 4 * d * d
    decoder = cfg.dec_layers * (self_attn + cross_attn + T * 4 * d * f)
    return 3 * batch * (encoder + decoder + T * 2 * d * V)


def timed(fn, device):
    """(seconds, result of fn), the device's queued work included."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return time.perf_counter() - t0, out


def matmul_peak(device, dtype, n, tries=10):
    """Best FLOP/s of an n x n x n torch.mm: the practical ceiling for MFU."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    torch.mm(a, b)  # warm-up: kernel selection, allocation
    return max(2 * n ** 3 / timed(lambda: torch.mm(a, b), device)[0] for _ in range(tries))


def interleaved(fns, repeats, device):
    """fns: name -> fn(rep) returning a count. Alternates which goes first, so neither always runs
    on a cooler or hotter machine; returns name -> [(seconds, count) per repetition]."""
    runs = {name: [] for name in fns}
    for rep in range(repeats):
        for name in (list(fns) if rep % 2 == 0 else list(fns)[::-1]):
            runs[name].append(timed(lambda: fns[name](rep), device))
    return runs


def median_rate(runs, count=None):
    """Median over repetitions of count per second (count defaults to what each run returned)."""
    return statistics.median((n if count is None else count) / s for s, n in runs)


def random_batch(n, length, vocab, device, gen):
    """Full-length sentences of ordinary tokens (no specials), </s>-shifted decoder input."""
    tgt = torch.randint(4, vocab, (n, length), generator=gen).to(device)
    src = torch.randint(4, vocab, (n, length), generator=gen).to(device)
    prev = torch.cat([torch.full_like(tgt[:, :1], EOS), tgt[:, :-1]], dim=1)
    return src, prev, tgt


def build_pair(cfg, device, seed=1):
    torch.manual_seed(seed)
    ours = Transformer(cfg).to(device)
    torch.manual_seed(seed)
    return ours, Reference(cfg).to(device)


def train_steps(model, batches, device, precision, compile=False):
    """An update as the trainer makes it (lnrepro.core.loop): the run's autocast, its loss factor (fp16:
    the loss scale), then unscaling, the overflow check (fp16: one host sync) and a skipped step on
    an overflow; clipping off, as the papers' runs."""
    cfg = TrainConfig(precision=precision)
    optimizer = build_optimizer(cfg, model.parameters())  # the pipeline's AdamW
    mixed = Precision(cfg, device, world=1)
    params = list(model.parameters())
    forward = torch.compile(model) if compile else model

    def run(n, start=0):
        for i in range(n):
            src, prev, tgt = batches[(start + i) % len(batches)]
            with mixed.autocast():
                loss, _ = label_smoothed_loss(forward(src, prev), tgt, 0.1)
            normalizer = 1 / tgt.numel()
            (loss * mixed.loss_factor(normalizer)).backward()
            if mixed.finish(params, normalizer, 0)[1]:
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return n * batches[0][2].numel()  # target tokens
    run.precision = mixed  # its loss scaler's state, for a test
    return run


def training_rates(cfg, batches, args, device):
    """Median target tokens/s of a full training step, ours and the reference."""
    ours, ref = build_pair(cfg, device)
    steps = {name: train_steps(model.train(), batches, device, args.precision, args.compile)
             for name, model in (("ours", ours), ("ref", ref))}
    for run in steps.values():
        run(args.warmup_steps)
    per_rep = max(1, args.steps // args.repeats)
    fns = {k: (lambda rep, run=run: run(per_rep, rep * per_rep)) for k, run in steps.items()}
    return {k: median_rate(v) for k, v in interleaved(fns, args.repeats, device).items()}


# kernels by what they do, for the breakdown of a training step's time (names as torch.profiler reports them)
MATMUL_KERNELS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
MATMUL_OPS = tuple(getattr(torch.ops.aten, name.split("::")[1]) for name in MATMUL_KERNELS)  # as FlopCounterMode keys them
KERNEL_GROUPS = {"matmul": lambda name: name in MATMUL_KERNELS,
                 "attention": lambda name: "scaled_dot_product" in name or "attention" in name,
                 "dropout_rng": lambda name: name in ("aten::bernoulli_", "aten::native_dropout", "aten::random_")}


def group_times(prof, device):
    """(the step's time, {group: its time}) in microseconds. On the CPU an op's self time is its work.
    On a GPU the work is its kernels' time, which the profiler gives an op as device time in total:
    counted for the outermost op of a group only (aten::scaled_dot_product_attention, not also the
    aten::_scaled_dot_product_efficient_attention it calls)."""
    if device.type != "cuda":
        ops = [(e.key, e.self_cpu_time_total) for e in prof.key_averages()]
        return sum(t for _, t in ops), {group: sum(t for k, t in ops if match(k)) for group, match in KERNEL_GROUPS.items()}
    total = sum(e.self_device_time_total for e in prof.key_averages())
    group_us = dict.fromkeys(KERNEL_GROUPS, 0.0)
    for event in prof.events():
        if event.device_type != DeviceType.CPU:  # a kernel: its time is in its op's
            continue
        for group, match in KERNEL_GROUPS.items():
            if match(event.name) and not any(match(a.name) for a in ancestors(event)):
                group_us[group] += event.device_time_total
    if not any(group_us.values()):  # seen on an H200 VM (2026-11-28): kernels not linked to their ops
        group_us = dict.fromkeys(KERNEL_GROUPS, float("nan"))
    return total, group_us


def ancestors(event):
    while event.cpu_parent is not None:
        event = event.cpu_parent
        yield event


def step_breakdown(cfg, batches, args, device):
    """Why MFU is what it is: per model, the share of a training step's (self) time in matmul
    kernels, attention kernels and dropout's random numbers (torch.profiler), and the FLOP/s the
    matmul kernels themselves reach at this model's shapes (FLOPs from torch's FlopCounterMode)."""
    from torch.profiler import ProfilerActivity, profile
    from torch.utils.flop_counter import FlopCounterMode
    activity = ProfilerActivity.CUDA if device.type == "cuda" else ProfilerActivity.CPU
    result = {}
    for name, model in zip(("ours", "ref"), build_pair(cfg, device)):
        run = train_steps(model.train(), batches, device, args.precision)
        run(args.warmup_steps)
        with FlopCounterMode(display=False) as counter:
            run(1)
        flops = sum(n for op, n in counter.get_flop_counts()["Global"].items() if op in MATMUL_OPS)
        steps = max(1, args.steps // args.repeats)
        with profile(activities=[activity]) as prof:
            timed(lambda: run(steps), device)
        total, group_us = group_times(prof, device)
        matmul_s = group_us["matmul"] / 1e6
        result[name] = {**{group: t / total for group, t in group_us.items()},
                        "matmul_gflops": flops * steps / matmul_s / 1e9 if matmul_s else float("nan")}
    return result


def decoding_rates(cfg, args, device, autocast, gen, beam):
    """Median sentences/s and generated tokens/s: our cached beam search vs the recomputing one.
    Fresh untrained weights with the </s> row of the tied embedding zeroed: its logit is exactly 0,
    about the median of the untrained logits, so </s> never reaches the top 2*beam and our search
    runs to max_len like the reference; counting generated tokens keeps it fair regardless."""
    ours, ref = build_pair(cfg, device, seed=2)
    with torch.no_grad():
        ours.decoder.embed.tokens.weight[EOS] = 0
        ref.tgt_emb.weight[EOS] = 0
    ours.eval(), ref.eval()
    L, chunk = args.src_len, max(1, args.decode_sentences // args.repeats)
    srcs = [random_batch(chunk, L, args.vocab, device, gen)[0] for _ in range(args.repeats)]

    def ours_decode(rep):
        with autocast():
            return sum(len(h) + 1 for h in beam_search(ours, srcs[rep], beam, 1.0, 0, L))

    def ref_decode(rep):
        with autocast():
            return recompute_beam(ref, srcs[rep], beam, L)
    ours_decode(0), ref_decode(0)  # warm-up
    runs = interleaved({"ours": ours_decode, "ref": ref_decode}, args.repeats, device)
    return {k: median_rate(v, chunk) for k, v in runs.items()}, {k: median_rate(v) for k, v in runs.items()}


def bench(args):
    device = pick_device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    cfg = ModelConfig(vocab_size=args.vocab, d_model=args.d_model, ffn_dim=args.ffn_dim, heads=args.heads,
                      enc_layers=args.layers, dec_layers=args.layers, dropout=args.dropout,
                      enc_norm=args.norm, dec_norm=args.norm)
    autocast = Precision(TrainConfig(precision=args.precision), device, world=1).autocast  # decoding's
    B, L = max(1, args.batch_tokens // args.src_len), args.src_len
    gen = torch.Generator().manual_seed(1)
    batches = [random_batch(B, L, args.vocab, device, gen) for _ in range(4)]
    config = (f"d{args.d_model} ffn{args.ffn_dim} h{args.heads} L{args.layers}+{args.layers} V{args.vocab} "
              f"B{B}xS{L} {args.norm}-LN {args.precision}{' compiled' if args.compile else ''}")
    rows = []

    def row(metric, ours, ref, unit):
        rows.append({"metric": metric, "ours": ours, "reference": ref, "ratio": ours / ref if ref else "",
                     "unit": unit, "device": str(device), "threads": torch.get_num_threads(), "config": config})

    tok_s = training_rates(cfg, batches, args, device)
    row("train_tokens_per_s", tok_s["ours"], tok_s["ref"], "target tokens/s")
    # achieved FLOP/s (same FLOP count for both: they compute the same function) against the peak
    flops_per_token = training_flops(cfg, B, L, L) / (B * L)
    dtype = AUTOCAST_DTYPES.get(args.precision, torch.float32)
    peak = matmul_peak(device, dtype, args.peak_size or (8192 if device.type == "cuda" else 1024))
    achieved = {k: v * flops_per_token for k, v in tok_s.items()}
    row("matmul_peak_gflops", peak / 1e9, "", "GFLOP/s")
    row("train_gflops", achieved["ours"] / 1e9, achieved["ref"] / 1e9, "GFLOP/s")
    row("train_mfu", achieved["ours"] / peak, achieved["ref"] / peak, "fraction of peak")
    split = step_breakdown(cfg, batches, args, device)
    for group in KERNEL_GROUPS:
        row(f"step_share_{group}", split["ours"][group], split["ref"][group], "fraction of step time (profiler)")
    row("matmul_kernel_gflops", split["ours"]["matmul_gflops"], split["ref"]["matmul_gflops"],
        "GFLOP/s inside mm/addmm/bmm at the model's shapes")
    row("matmul_kernel_fraction_of_peak", split["ours"]["matmul_gflops"] * 1e9 / peak,
        split["ref"]["matmul_gflops"] * 1e9 / peak, "the MFU ceiling if the step were only its matmuls")
    for beam in dict.fromkeys((args.beam, 1)):  # beam 1 = greedy, the apples-to-apples row
        sent, tok = decoding_rates(cfg, args, device, autocast, gen, beam)
        name = "greedy" if beam == 1 else f"beam{beam}"
        row(f"decode_{name}_sentences_per_s", sent["ours"], sent["ref"], "sentences/s (ref recomputes prefix)")
        row(f"decode_{name}_tokens_per_s", tok["ours"], tok["ref"], "generated tokens/s, </s> included")
    return rows


def cell(value, width):
    return f"{value:{width}.4g}" if value != "" else " " * width


def write_report(rows, out):
    print(f"{'metric':32s} {'ours':>12s} {'reference':>12s} {'ratio':>7s}  unit")
    for r in rows:
        print(f"{r['metric']:32s} {cell(r['ours'], 12)} {cell(r['reference'], 12)} {cell(r['ratio'], 7)}  {r['unit']}")
    print(f"device {rows[0]['device']}, {rows[0]['threads']} thread(s), {rows[0]['config']}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def run(args):
    write_report(bench(args), args.out)
    return 0
