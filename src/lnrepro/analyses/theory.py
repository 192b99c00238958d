"""Check Xiong et al. 2020 §3.3 numerically: Lemma 2, Lemma 3, Theorem 1 and the concentration property.

The paper's simplified setting (§3.3, "Parameter Initialization"): single-head attention, every
matrix d x d, W^Q = W^K = 0 (attention is uniform), every other matrix Xavier-Gaussian N(0, 1/d),
zero biases, LayerNorm with gamma = 1 and beta = 0, and i.i.d. N(0, I_d) input vectors. The
layers are lnrepro.core.model's own EncoderLayer, re-initialized that way, so the check covers our model.

Indexing: x^{pre}_l here is the hidden state after l layers (x^{pre}_0 is the input, E||x||^2 = d),
the reading under which Lemma 2's bounds (1 + l/2)d <= E||x^{pre}_l||^2 <= (1 + 3l/2)d hold for
l >= 1; x^{pre}_L is what Pre-LN's final LayerNorm normalizes (the paper's x^{pre}_{L+1}).
x^{post,5}_l is the input of the last LayerNorm of layer l (Table 1), E||x^{post,5}_l||^2 = 3d/2.
"""
import json
import math

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..args import add_scale_note_argument
from ..core.device import pick_device
from ..core.model import EncoderLayer, ModelConfig
from .probing import concentration

LN_EPS = 1e-5


def paper_init_(layer, generator):
    """W^Q = W^K = 0, every other matrix N(0, 2/(fan_in + fan_out)), zero biases. The stacked
    attention in_proj [W^Q; W^K; W^V] counts as three d x d matrices."""
    for name, module in layer.named_modules():
        if isinstance(module, nn.Linear):
            fan_out, fan_in = module.weight.shape
            with torch.no_grad():
                if name.endswith("in_proj"):
                    module.weight[:2 * fan_in].zero_()
                    module.weight[2 * fan_in:].normal_(0.0, math.sqrt(1.0 / fan_in), generator=generator)
                else:
                    module.weight.normal_(0.0, math.sqrt(2.0 / (fan_in + fan_out)), generator=generator)
                module.bias.zero_()
    return layer


def simplified_stack(d, layers, norm, seed, device="cpu"):
    """`layers` encoder layers of lnrepro.core.model (single head, FFN d x d, no dropout) in the paper's init."""
    cfg = ModelConfig(vocab_size=4, d_model=d, ffn_dim=d, heads=1, enc_layers=layers, dropout=0.0,
                      enc_norm=norm, dec_norm=norm)
    gen = torch.Generator().manual_seed(seed)
    return nn.ModuleList(paper_init_(EncoderLayer(cfg), gen) for _ in range(layers)).to(device)


def hidden_sq_norms(stack, x, norm):
    """Per layer l = 1..L, ||x^{post,5}_l||^2 (post) or ||x^{pre}_l||^2 (pre) of every position,
    and the stack's output (for pre: before the final LayerNorm)."""
    recorded = []
    hooks = []
    if norm == "post":  # x^{post,5}_l is the input of the FFN sublayer's LayerNorm
        hooks = [layer.ffn_block.layer_norm.register_forward_pre_hook(
            lambda _m, args: recorded.append(args[0].detach().pow(2).sum(-1))) for layer in stack]
    for layer in stack:
        x = layer(x, None)
        if norm == "pre":
            recorded.append(x.detach().pow(2).sum(-1))
    for h in hooks:
        h.remove()
    return torch.stack(recorded), x  # (L, B, n), (B, n, d)


def last_ffn_grad_norm(stack, x, norm, vocab_size, generator):
    """||dL/dW^{2,L}||_F of the loss averaged over all positions: softmax over W^emb x_final with
    W^emb ~ N(0, 1/d) (fairseq's embedding init) and uniformly drawn targets."""
    d = x.size(-1)
    w_emb = (torch.randn(vocab_size, d, generator=generator) / math.sqrt(d)).to(x.device)
    targets = torch.randint(vocab_size, x.shape[:-1], generator=generator).to(x.device)
    fc2 = stack[-1].ffn.fc2.weight
    fc2.grad = None
    h = x
    for layer in stack:
        h = layer(h, None)
    if norm == "pre":  # Pre-LN's final LayerNorm before the softmax
        h = F.layer_norm(h, (d,), eps=LN_EPS)
    loss = F.cross_entropy((h @ w_emb.T).reshape(-1, vocab_size), targets.reshape(-1))
    loss.backward()
    return fc2.grad.norm().item()


def ln_jacobian_spectral_norm(x):
    """||J_LN(x)||_2 of LayerNorm without scale and bias (Lemma 3)."""
    jac = torch.autograd.functional.jacobian(lambda v: F.layer_norm(v, v.shape, eps=LN_EPS), x)
    return torch.linalg.matrix_norm(jac, ord=2).item()


def fitted_exponent(x, y):
    """Least-squares slope of log y against log x: y ~ x^slope."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def lemma2_rows(d, layers, seeds, sequences, positions, device="cpu"):
    """Mean E||x||^2 / d per layer over seeds, sequences and positions; and the samples of the
    last layer (Theorem 1's assumption variables) for the concentration property."""
    rows, last = [], {}
    for norm in ("post", "pre"):
        per_layer, samples = [], []
        for seed in range(1, seeds + 1):
            gen = torch.Generator().manual_seed(10_000 + seed)
            stack = simplified_stack(d, layers, norm, seed, device)
            x = torch.randn(sequences, positions, d, generator=gen).to(device)
            with torch.no_grad():
                sq, _ = hidden_sq_norms(stack, x, norm)
            per_layer.append(sq.mean(dim=(1, 2)).cpu() / d)
            samples.append(sq[-1].flatten().cpu())
        mean = torch.stack(per_layer).mean(0)
        for l, value in enumerate(mean.tolist(), start=1):
            low, high = (1.5, 1.5) if norm == "post" else (1 + l / 2, 1 + 3 * l / 2)
            rows.append({"check": "lemma2", "norm": norm, "x": l, "measured": value, "std": float("nan"),
                         "expected_low": low, "expected_high": high})
        last[norm] = torch.cat(samples).numpy()
    return rows, last


def lemma3_rows(d, seeds, scales=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)):
    """||J_LN(x)||_2 against sqrt(d)/||x|| for centered x = scale * g, g ~ N(0, I) centered."""
    rows = []
    for scale in scales:
        ratios, norms = [], []
        for seed in range(1, seeds + 1):
            g = torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
            x = scale * (g - g.mean())
            ratios.append(ln_jacobian_spectral_norm(x) * x.norm().item() / math.sqrt(d))
            norms.append(x.norm().item())
        rows.append({"check": "lemma3", "norm": "", "x": float(np.mean(norms)) / math.sqrt(d),
                     "measured": float(np.mean(ratios)), "std": float(np.std(ratios)),
                     "expected_low": 1.0, "expected_high": 1.0})
    return rows


def theorem1_rows(d, depths, seeds, sequences, positions, vocab_size, device="cpu"):
    rows = []
    for norm in ("post", "pre"):
        for L in depths:
            grads = []
            for seed in range(1, seeds + 1):
                gen = torch.Generator().manual_seed(20_000 + seed)
                stack = simplified_stack(d, L, norm, seed, device)
                x = torch.randn(sequences, positions, d, generator=gen).to(device)
                grads.append(last_ffn_grad_norm(stack, x, norm, vocab_size, gen))
            rows.append({"check": "theorem1", "norm": norm, "x": L, "measured": float(np.mean(grads)),
                         "std": float(np.std(grads)), "expected_low": float("nan"), "expected_high": float("nan")})
    return rows


def measure(d, layers, depths, seeds, sequences, positions, vocab_size, device="cpu"):
    """Every plotted point (one row each) and the summary of every check."""
    torch.manual_seed(0)
    l2, last = lemma2_rows(d, layers, seeds, sequences, positions, device)
    points = l2 + lemma3_rows(d, seeds) + theorem1_rows(d, depths, seeds, sequences, positions, vocab_size, device)
    for norm, z in last.items():
        for eps, delta in concentration(z).items():
            points.append({"check": "concentration", "norm": norm, "x": eps, "measured": delta, "std": float("nan"),
                           "expected_low": float("nan"), "expected_high": float("nan")})
    points = pd.DataFrame(points)
    return points, summarize(points, d, layers)


def summarize(points, d, layers):
    """One row per (check, quantity): the numbers the claims table compares with the paper."""
    rows = []

    def add(check, quantity, measured, expected, note):
        rows.append({"check": check, "quantity": quantity, "measured": measured, "expected": expected, "note": note})

    post = points[(points.check == "lemma2") & (points.norm == "post")]
    add("lemma2_post", "mean_sq_norm_over_d", post.measured.mean(), 1.5, f"E‖x^post,5_l‖^2 / d over {len(post)} layers, d={d}")
    add("lemma2_post", "max_rel_error", (post.measured / 1.5 - 1).abs().max(), 0.0, "max over layers of abs(measured / (3/2) - 1)")
    pre = points[(points.check == "lemma2") & (points.norm == "pre")]
    inside = ((pre.measured >= pre.expected_low) & (pre.measured <= pre.expected_high)).mean()
    add("lemma2_pre", "fraction_within_bounds", inside, 1.0, "layers with (1+l/2)d <= E‖x^pre_l‖^2 <= (1+3l/2)d")
    add("lemma2_pre", "growth_per_layer", float(np.polyfit(pre.x, pre.measured, 1)[0]), float("nan"),
        "slope of E‖x^pre_l‖^2 / d over l: Lemma 2 allows 1/2 to 3/2 per layer (linear growth)")
    l3 = points[points.check == "lemma3"]
    add("lemma3", "max_abs_ratio_error", (l3.measured - 1).abs().max(), 0.0,
        "max over scales of abs(‖J_LN(x)‖₂ ‖x‖ / √d - 1), centered x")
    for norm, expected in (("post", 0.0), ("pre", -0.5)):
        t1 = points[(points.check == "theorem1") & (points.norm == norm)]
        add(f"theorem1_{norm}", "fitted_exponent", fitted_exponent(t1.x, t1.measured), expected,
            f"slope of log ‖dL/dW^2,L‖_F over log L, L in {list(t1.x.astype(int))}")
        add(f"theorem1_{norm}", "grad_norm_at_min_depth", t1.measured.iloc[0], float("nan"), f"L={int(t1.x.iloc[0])}")
    for norm in ("post", "pre"):
        c = points[(points.check == "concentration") & (points.norm == norm)]
        for _, r in c.iterrows():
            add(f"concentration_{norm}", f"delta_at_epsilon_{r.x:g}", r.measured, float("nan"),
                f"P((Z-EZ)/EZ > {r.x:g}), Z = ‖x‖^2 at the last of {layers} layers")
    return pd.DataFrame(rows)


def draw(points, summary, title, pdf, d, mark=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plotting import save_figure

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    colors = {"post": "tab:red", "pre": "tab:blue"}
    labels = {"post": "Post-LN", "pre": "Pre-LN"}

    ax = axes[0][0]
    for norm in ("post", "pre"):
        p = points[(points.check == "lemma2") & (points.norm == norm)]
        what = r"$E\|x^{post,5}_l\|^2/d$" if norm == "post" else r"$E\|x^{pre}_l\|^2/d$"
        ax.plot(p.x, p.measured, "o-", color=colors[norm], label=f"{labels[norm]}: {what}")
        if norm == "post":
            ax.plot(p.x, p.expected_low, "--", color=colors[norm], label="Lemma 2: 3/2")
        else:
            ax.fill_between(p.x, p.expected_low, p.expected_high, color=colors[norm], alpha=0.15,
                            label="Lemma 2: [1+l/2, 1+3l/2]")
    ax.set(title="(a) Lemma 2: hidden-state norms at init", xlabel="layer l", ylabel="E‖x‖² / d")

    ax = axes[0][1]
    p = points[points.check == "lemma3"]
    ax.plot(p.x, p.measured, "o-", color="k", label="‖J_LN(x)‖₂ · ‖x‖ / √d (centered x)")
    ax.axhline(1.0, ls="--", color="gray", label="Lemma 3: √d/‖x‖")
    ax.set_xscale("log")
    ax.set_ylim(0.9, 1.1)
    ax.set(title="(b) Lemma 3: LayerNorm Jacobian", xlabel="‖x‖ / √d", ylabel="ratio")

    ax = axes[1][0]
    for norm in ("post", "pre"):
        p = points[(points.check == "theorem1") & (points.norm == norm)]
        k = summary[(summary.check == f"theorem1_{norm}") & (summary.quantity == "fitted_exponent")].measured.iloc[0]
        ax.errorbar(p.x, p.measured, yerr=p["std"], fmt="o-", capsize=3, color=colors[norm],
                    label=f"{labels[norm]}: fitted $L^{{{k:+.2f}}}$ (theory {'0' if norm == 'post' else '-1/2'})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(title=r"(c) Theorem 1: $\|\partial L/\partial W^{2,L}\|_F$ vs depth", xlabel="layers L", ylabel="gradient norm")

    ax = axes[1][1]
    for norm in ("post", "pre"):
        p = points[(points.check == "concentration") & (points.norm == norm)]
        ax.plot(p.x, p.measured, "o-", color=colors[norm], label=labels[norm])
    ax.plot([0.1], [0.125], "k*", ms=12, label="paper: (0.1, 0.125)-bounded")
    eps = np.linspace(0.05, 0.5, 50)
    ax.plot(eps, np.exp(-d * eps ** 2 / 8), ":", color="gray", label=r"N(0, I$_d$) example: $\delta = e^{-d\epsilon^2/8}$")
    ax.set(title=r"(d) concentration of $Z = \|x_L\|^2$ at the last layer", xlabel="ε", ylabel="δ̂ = P((Z-EZ)/EZ > ε)")

    for ax in axes.flat:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, title, pdf, mark=mark)


def add_arguments(p):
    p.add_argument("--d-model", type=int, default=64, help="model width d (the paper's setting: 512)")
    p.add_argument("--layers", type=int, default=6, help="depth measured for Lemma 2 and concentration")
    p.add_argument("--depths", type=int, nargs="+", default=[4, 8, 16, 32, 64], help="depths for Theorem 1")
    p.add_argument("--seeds", type=int, default=10, help="random initializations per measurement")
    p.add_argument("--sequences", type=int, default=16, help="Gaussian input sequences per seed")
    p.add_argument("--positions", type=int, default=16, help="positions n per sequence")
    p.add_argument("--vocab-size", type=int, default=1000, help="softmax size of Theorem 1's loss")
    p.add_argument("--title", default="Theory checks (Xiong et al. 2020, §3.3)", help="figure title")
    p.add_argument("--device", default="cpu", help="cpu | cuda | auto (the d=512 paper setting is faster on a GPU)")
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads; 0 = torch's default")
    p.add_argument("--pdf", required=True, help="the figure")
    p.add_argument("--csv", required=True, help="every plotted point")
    p.add_argument("--checks", required=True, help="one row per check: measured vs expected")
    add_scale_note_argument(p)


def run(args):
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    points, summary = measure(args.d_model, args.layers, args.depths, args.seeds, args.sequences,
                              args.positions, args.vocab_size, pick_device(args.device))
    points.to_csv(args.csv, index=False)
    summary.to_csv(args.checks, index=False)
    draw(points, summary, args.title, args.pdf, args.d_model, mark=args.scale_note)
    print(json.dumps({r.check + "." + r.quantity: round(float(r.measured), 4) for r in summary.itertuples()}, indent=1))
    return 0
