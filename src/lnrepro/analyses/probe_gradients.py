"""Gradient norms of every FFN weight over training mini-batches (Xiong et al. 2020 §3.4, Fig 3).

For each seed: a model initialized as the trainer does with that seed (or a trained checkpoint),
K training batches drawn with that seed, and for W^1 (fc1) and W^2 (fc2) of every FFN sub-layer:
- ``expected_grad_norm``: ||mean over the K batches of dL/dW||_F, the paper's "scale of the
  expected gradient" (Fig 3a,b);
- ``mean_grad_norm``: the mean over the K batches of ||dL/dW||_F, the gradient norm (Fig 3c,d).
The loss and its gradient are the trainer's: label-smoothed, per target token, dropout on.

It also records ||h||^2 of every target position at the input of the last LayerNorm before the
softmax (x^{post,5}_L, or Pre-LN's x^{pre}_{L+1}) and how concentrated it is (§3.4: "(0.1, 0.125)-bounded").
"""
import csv
import math
import sys
from pathlib import Path

import torch

from ..core.batching import collate, make_batches
from ..core.data import PAD, ParallelData, vocab_sizes
from ..core.device import pick_device
from ..core.model import ModelConfig, Transformer, label_smoothed_loss
from ..core.translation import load_model
from ..settings import TRAIN_DEFAULTS
from .probing import EPSILONS, add_model_arguments, concentration, pick_batches

GRAD_COLUMNS = ["state", "norm", "layers", "seed", "side", "layer", "index", "matrix",
                "expected_grad_norm", "mean_grad_norm", "batches"]
CONC_COLUMNS = ["state", "norm", "layers", "seed", "epsilon", "delta_hat", "mean_sq_norm_over_d", "positions"]


def ffn_sublayers(model):
    """(side, layer number from 1, FeedForward) in forward order: encoder, then decoder."""
    return [(side, i, layer.ffn) for side, stack in (("enc", model.encoder), ("dec", model.decoder))
            for i, layer in enumerate(stack.layers, start=1)]


def last_norm_input(model):
    """The LayerNorm whose input is ||x^{post,5}_L|| (Post-LN) or x^{pre}_{L+1} (Pre-LN): the decoder's last."""
    dec = model.decoder
    return dec.final_norm if dec.final_norm is not None else dec.layers[-1].ffn_block.layer_norm


def only_ffn_weights_need_grad(model):
    """Backward still runs through every layer, but skips the weight gradients nobody reads."""
    for p in model.parameters():
        p.requires_grad_(False)
    for _, _, ffn in ffn_sublayers(model):
        ffn.fc1.weight.requires_grad_(True)
        ffn.fc2.weight.requires_grad_(True)


def probe(model, data, batches, label_smoothing, device="cpu"):
    """Gradient statistics of every FFN weight over `batches`, and ||h||^2 at the last LayerNorm input."""
    only_ffn_weights_need_grad(model)
    model.train()  # the gradients the trainer sees: dropout on
    weights = {(side, i, name): getattr(ffn, name).weight
               for side, i, ffn in ffn_sublayers(model) for name in ("fc1", "fc2")}
    grad_sum = {k: torch.zeros_like(w) for k, w in weights.items()}
    norm_sum = {k: 0.0 for k in weights}
    captured, sq_norms = [], []
    hook = last_norm_input(model).register_forward_pre_hook(lambda _m, args: captured.append(args[0].detach()))
    try:
        for idx in batches:
            src, prev, tgt = (t.to(device) for t in collate(data, idx))
            loss, _ = label_smoothed_loss(model(src, prev), tgt, label_smoothing)
            (loss / (tgt != PAD).sum()).backward()  # per target token, as the trainer's update
            for k, w in weights.items():
                grad_sum[k] += w.grad
                norm_sum[k] += w.grad.norm().item()
                w.grad = None
            sq_norms.append(captured.pop().pow(2).sum(-1)[tgt != PAD])
    finally:
        hook.remove()
    n = len(batches)
    stats = {k: ((grad_sum[k] / n).norm().item(), norm_sum[k] / n) for k in weights}
    return stats, torch.cat(sq_norms).float().cpu().numpy()


def checkpoint_after(metrics_csv, updates):
    """The epoch checkpoint of the first epoch that ended with at least `updates` updates done."""
    with open(metrics_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if int(r["updates"]) >= updates:
            if not r["checkpoint"]:
                raise SystemExit(f"{metrics_csv}: epoch {r['epoch']} ended warm-up ({updates} updates) "
                                 "but the run diverged there: no checkpoint")
            return Path(metrics_csv).parent / r["checkpoint"], int(r["epoch"])
    done = [r for r in rows if r["checkpoint"]]
    if done and done[-1].get("capped") == "1":  # training_cap: the run stopped long before its warm-up
        print(f"{metrics_csv}: a capped run (training_cap) ended before warm-up ({updates} updates): "
              f"its last checkpoint instead", file=sys.stderr)
        return Path(metrics_csv).parent / done[-1]["checkpoint"], int(done[-1]["epoch"])
    raise SystemExit(f"{metrics_csv}: the run ended after {rows[-1]['updates'] if rows else 0} updates, "
                     f"before warm-up ended ({updates})")


def write_csv(rows, columns, path):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def add_arguments(p):
    p.add_argument("--data", required=True, help="binarized data dir (its dictionaries, train.pt)")
    p.add_argument("--norm", choices=["post", "pre"], default="post", help="at init: the norm placement")
    p.add_argument("--layers", type=int, default=6, help="at init: N for an N-N model")
    p.add_argument("--checkpoint-metrics", default=None,
                   help="probe a trained run instead: its metrics.csv (lists its epoch checkpoints); left out: "
                        "probe at init")
    p.add_argument("--after-updates", type=int, default=0,
                   help="with --checkpoint-metrics: the first epoch checkpoint with at least this many updates")
    add_model_arguments(p, TRAIN_DEFAULTS,  # the trainer's: Xiong et al.'s IWSLT model
                        seeds=10, seeds_help="seeds 1..N: initialization, batches drawn, dropout")
    p.add_argument("--batches", type=int, default=4, help="mini-batches per expectation")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda (fp32: gradients are the measurement)")
    p.add_argument("--grads-out", required=True, help="CSV: FFN weight gradient norms per layer, seed and state")
    p.add_argument("--concentration-out", required=True,
                   help="CSV: the concentration property's delta_hat per epsilon (Xiong et al. Lemma 1)")


def run(args):
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    data_dir = Path(args.data)
    vocab_size, tgt_vocab_size = vocab_sizes(data_dir)
    train = ParallelData.load(data_dir / "train.pt")
    all_batches = make_batches(train, args.max_tokens, seed=1)
    checkpoint, state = None, "init"
    if args.checkpoint_metrics:
        checkpoint, epoch = checkpoint_after(args.checkpoint_metrics, args.after_updates)
        state = "after_warmup"
        print(f"probing {checkpoint} (epoch {epoch}, warm-up ended after {args.after_updates} updates)", file=sys.stderr)
    grad_rows, conc_rows = [], []
    for seed in range(1, args.seeds + 1):
        torch.manual_seed(seed)  # the trainer's init for this seed
        if checkpoint is None:
            cfg = ModelConfig(vocab_size=vocab_size, tgt_vocab_size=tgt_vocab_size, d_model=args.d_model, ffn_dim=args.ffn_dim, heads=args.heads,
                              enc_layers=args.layers, dec_layers=args.layers, dropout=args.dropout,
                              attn_dropout=args.attn_dropout, act_dropout=args.act_dropout, enc_norm=args.norm,
                              dec_norm=args.norm, share_all_embeddings=args.share_all_embeddings)
            model = Transformer(cfg).to(device)
        else:
            model = load_model(checkpoint, device)
        cfg = model.cfg
        norm = cfg.dec_norm
        stats, sq = probe(model, train, pick_batches(all_batches, args.batches, seed), args.label_smoothing, device)
        n_enc = cfg.enc_layers
        for (side, layer, name), (expected, mean) in stats.items():
            grad_rows.append({"state": state, "norm": norm, "layers": cfg.dec_layers, "seed": seed, "side": side,
                              "layer": layer, "index": layer + (n_enc if side == "dec" else 0),
                              "matrix": {"fc1": "W1", "fc2": "W2"}[name], "expected_grad_norm": expected,
                              "mean_grad_norm": mean, "batches": args.batches})
        for eps, delta in concentration(sq, EPSILONS).items():
            conc_rows.append({"state": state, "norm": norm, "layers": cfg.dec_layers, "seed": seed, "epsilon": eps,
                              "delta_hat": delta, "mean_sq_norm_over_d": float(sq.mean()) / cfg.d_model,
                              "positions": len(sq)})
        last = max(r["index"] for r in grad_rows)
        w2 = [r["mean_grad_norm"] for r in grad_rows if r["seed"] == seed and r["index"] == last and r["matrix"] == "W2"]
        print(f"seed {seed}: {state} {norm}-LN {cfg.enc_layers}-{cfg.dec_layers}: ||dL/dW2|| of the last FFN "
              f"{w2[0]:.4g}", file=sys.stderr, flush=True)
    write_csv(grad_rows, GRAD_COLUMNS, args.grads_out)
    write_csv(conc_rows, CONC_COLUMNS, args.concentration_out)
    if any(not math.isfinite(r["expected_grad_norm"]) for r in grad_rows):
        raise SystemExit("non-finite gradients")
    return 0
