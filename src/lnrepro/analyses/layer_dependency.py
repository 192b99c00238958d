"""Figs 7-8 of Liu et al. 2020: beta_{i,j}, how much sublayer i's output depends on branch j.

Liu et al. §4.1 write the normalized output of sublayer i as x_i = sum_{j<=i} beta_{i,j} a_j/std(a_j),
a_j the output of residual branch j (j = 0: the embeddings), so beta_{i,j} is the share of branch j
in x_i. We measure it exactly instead of from variances: one forward pass (dropout off) records
every sublayer's input x, branch output a and omega; the residual stream is carried as a sum of
components, one per branch. A Post-LN/Admin LayerNorm LN(a + omega x) is linear once its per-token
mean and std are fixed, so it maps each component c to g (c - mean(c)) / std(stream) and the
components still add up to the sublayer output; Pre-LN only appends a. Then
beta_{i,j} = sqrt(sum over tokens of Var_d(component j) / sum over tokens of Var_d(stream)).
Each row also carries var_x, sublayer i's output variance (Var_d of x_i, the mean over real tokens):
§4.1's "Var[x_i] increases as i becomes larger" for Pre-LN, whose x_i no LayerNorm rescales.
"""
import json
from dataclasses import fields
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from ..args import RunFiles  # noqa: E402
from ..core.data import PAD, ParallelData, vocab_sizes  # noqa: E402
from ..core.model import ModelConfig, Transformer  # noqa: E402
from ..core.translation import load_model  # noqa: E402
from ..settings import TRAIN_DEFAULTS  # noqa: E402
from .plotting import NORM_LABELS, save_figure  # noqa: E402
from .probing import (add_trained_probe_arguments, epoch_checkpoints, init_model, probe_batches,  # noqa: E402
                      use_threads, write_probe)

LN_EPS = 1e-5


def record_sublayers(model: Transformer, src, prev):
    """[(side, module, x, a)] for every residual sublayer in forward order, and the stacks' inputs."""
    records, inputs = [], {}

    def keep(module, args, _out):
        x, fn = args
        records.append((module, x.detach(), fn(x).detach()))  # eval mode: the branch recomputes exactly

    def stack_input(side):
        return lambda _m, _a, out: inputs.__setitem__(side, out.detach())

    hooks = [s.register_forward_hook(keep) for s in model.residual_sublayers()]
    hooks += [model.encoder.embed.register_forward_hook(stack_input("encoder")),
              model.decoder.embed.register_forward_hook(stack_input("decoder"))]
    try:
        model.eval()
        with torch.no_grad():
            model(src, prev)
    finally:
        for h in hooks:
            h.remove()
    n_enc = 2 * model.cfg.enc_layers
    return {"encoder": (inputs["encoder"], records[:n_enc]), "decoder": (inputs["decoder"], records[n_enc:])}


def token_var(c):
    return c.var(-1, unbiased=False)


@torch.no_grad()
def dependency_matrix(x0, sublayers, mask):
    """(beta (M x (M+1)), var_x (M)) of one stack: beta's row i = sublayer i's output, column j =
    branch j (0: input); var_x[i] = sublayer i's output variance. sublayers: [(module, x, a)]; mask
    (B, T): the real tokens."""
    comps, const = [x0], torch.zeros_like(x0)
    beta = torch.zeros(len(sublayers), len(sublayers) + 1)
    var_x = torch.zeros(len(sublayers))
    for i, (module, _x, a) in enumerate(sublayers):
        if module.norm == "pre":
            comps.append(a)
        else:
            omega = module.omega if module.norm == "admin" else 1.0
            comps, const = [omega * c for c in comps] + [a], omega * const
            z = sum(comps) + const
            std = (token_var(z) + LN_EPS).sqrt().unsqueeze(-1)
            ln = module.layer_norm
            comps = [ln.weight * (c - c.mean(-1, keepdim=True)) / std for c in comps]
            const = ln.weight * (const - const.mean(-1, keepdim=True)) / std + ln.bias
        total = token_var(sum(comps))[mask].sum()
        for j, c in enumerate(comps):
            beta[i, j] = (token_var(c)[mask].sum() / total).sqrt()
        var_x[i] = token_var(sum(comps) + const)[mask].mean()
    return beta, var_x


def layer_dependency(model, src, prev):
    """{'encoder': (beta, var_x), 'decoder': (beta, var_x)} of one batch."""
    stacks = record_sublayers(model, src, prev)
    masks = {"encoder": src != PAD, "decoder": prev != PAD}
    return {side: dependency_matrix(x0, subs, masks[side]) for side, (x0, subs) in stacks.items()}


def last_checkpoint(metrics_csv):
    """The run's last epoch checkpoint (a diverged run: the last before it diverged)."""
    checkpoints = epoch_checkpoints(metrics_csv)
    if not checkpoints:
        raise SystemExit(f"{metrics_csv}: no checkpoint (diverged in its first epoch)")
    return checkpoints[-1][1]


def run_models(settings, metrics_csv, vocabs, batch):
    """(state, model) at initialization (the run's seed; Admin profiled on the batch) and trained.
    metrics_csv: the run's metrics.csv (its checkpoints are read beside it); vocabs: the model's
    (vocab_size, tgt_vocab_size), lnrepro.core.data.vocab_sizes."""
    names = {f.name for f in fields(ModelConfig)}
    cfg = ModelConfig(vocab_size=vocabs[0], tgt_vocab_size=vocabs[1], **{k: v for k, v in settings.items() if k in names})
    yield "init", init_model(cfg, settings.get("seed", TRAIN_DEFAULTS["seed"]), batch)
    yield "trained", load_model(last_checkpoint(metrics_csv))


def measure(spec, files, data, vocabs):
    """files: the RunFiles given (lnrepro.args): each run's --metrics."""
    files.require("metrics", spec["runs"])
    rows = []
    for run, settings in spec["runs"].items():
        s = {**TRAIN_DEFAULTS, **settings}
        batch = probe_batches(data, s["max_tokens"], 1, s["seed"])[0]
        for state, model in run_models(settings, files("metrics", run), vocabs, batch):
            for side, (beta, var_x) in layer_dependency(model, *batch[:2]).items():
                for i in range(beta.shape[0]):
                    for j in range(i + 2):
                        rows.append({"run": run, "norm": settings["enc_norm"], "layers": settings["enc_layers"],
                                     "state": state, "side": side, "i": i + 1, "j": j,
                                     "lag": i + 1 - j,  # 0: sublayer i's own residual branch
                                     "beta": beta[i, j].item(), "var_x": var_x[i].item()})
    return pd.DataFrame(rows)


def draw(table, title, pdf, mark=None):
    """One row of heatmaps per run and state, encoder and decoder side by side."""
    panels = list(table.groupby(["run", "state"], sort=False))
    fig, axes = plt.subplots(len(panels), 2, figsize=(8, 3 * len(panels)), squeeze=False, layout="constrained")
    for row, ((run, state), t) in zip(axes, panels):
        for ax, side in zip(row, ("encoder", "decoder")):
            s = t[t.side == side]
            grid = s.pivot(index="i", columns="j", values="beta")
            rows, cols = grid.shape  # axes in the paper's indices: i from 1, j from 0
            im = ax.imshow(grid.to_numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto",
                           extent=(-0.5, cols - 0.5, rows + 0.5, 0.5))
            ax.set_title(f"{NORM_LABELS[s.norm.iloc[0]]} {s.layers.iloc[0]}L {state}: {side}", fontsize=9)
            ax.set_xlabel("branch j (0: embeddings)")
            ax.set_ylabel("sublayer output i")
        fig.colorbar(im, ax=row.tolist(), shrink=0.8, label="beta")
    save_figure(fig, title, pdf, tight=False, mark=mark)  # laid out by constrained layout already


def summary(table):
    """Per run, state and side, the mean beta of each sublayer's own branch (lag 0), of the branch just
    below it (lag 1) and of the embeddings (j 0): the report caption's numbers (Figs 7-8's claims
    compare the own branch's)."""
    rows = []
    for (run, norm, layers, state, side), t in table.groupby(["run", "norm", "layers", "state", "side"], sort=False):
        rows.append({"run": run, "norm": norm, "layers": layers, "state": state, "side": side,
                     "own_branch_beta": round(t[t.lag == 0].beta.mean(), 3),
                     "previous_branch_beta": round(t[t.lag == 1].beta.mean(), 3),
                     "embeddings_beta": round(t[t.j == 0].beta.mean(), 3)})
    return pd.DataFrame(rows)


def add_arguments(p):
    add_trained_probe_arguments(p, "JSON: title, runs {run: its settings}", "every beta_ij plotted")
    p.add_argument("--summary", default=None, help="CSV of each run's mean own-branch, previous-branch and embeddings "
                                                  "beta per state and side (the report caption); none if left out")


def run(args):
    use_threads(args.threads)
    spec = json.loads(args.spec)
    data_dir = Path(args.data)
    files = RunFiles("layer-dependency", metrics=args.metrics)
    table = measure(spec, files, ParallelData.load(data_dir / "train.pt"), vocab_sizes(data_dir))
    write_probe(table, spec["title"], args, draw)
    if args.summary:
        summary(table).to_csv(args.summary, index=False)
    return 0
