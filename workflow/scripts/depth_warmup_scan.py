"""Liu et al.'s depth x warm-up scan at the demo's scale: which depth makes Post-LN fail WITH warm-up.

Trains Post-LN, Pre-LN, Admin and the Table 1 hybrid (Post-LN encoder, Pre-LN decoder; FixUp and
LookLinear where asked) as a config's template run trains (default: config/demo.yaml's
liu_wmt_post_18L, Liu et al.'s WMT14 recipe at the demo's width), at every depth, warm-up, lr and seed
asked, as many at once as --jobs says. Each run is a real `lnrepro train` (Admin's after its
`lnrepro admin-profile`) with the template's own flags but those the scan varies; its status is
lnrepro.analyses.outcomes's, the one the tables and claims print. Writes OUT/scan.csv (a row per run,
rewritten as runs finish, so a killed scan keeps what it measured) and OUT/scan.md (status counts over
seeds per cell). A run already trained in OUT resumes where it stopped (nothing, when it finished).

    python workflow/scripts/depth_warmup_scan.py --data results/data/deen/bpe1000/bin --out scan \\
        --depths 6 12 18 --warmups 146 292 584 --seeds 1 2 3 --jobs 16
"""
import argparse
import concurrent.futures
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
from lnrepro.analyses.outcomes import diverged_reason, metrics_status  # noqa: E402
from lnrepro.settings import merged_run_settings, trainer_flags  # noqa: E402

# name: (encoder norm, decoder norm, init); Liu §5.2's other initializations beside the LayerNorms
NORMS = {"post": ("post", "post", "standard"), "pre": ("pre", "pre", "standard"), "admin": ("admin", "admin", "standard"),
         "hybrid": ("post", "pre", "standard"), "fixup": ("fixup", "fixup", "standard"),
         "looklinear": ("post", "post", "looklinear")}
COLUMNS = ["norm", "layers", "warmup", "lr", "seed", "epochs", "status", "final_valid", "best_valid", "valid_by_epoch",
           "diverged_reason", "wall_s"]


def lnrepro(*args):
    return [sys.executable, "-m", "lnrepro.cli", *map(str, args)]


def name(norm, layers, warmup, lr, seed):
    return f"{norm}_L{layers}_w{warmup}_lr{lr:g}_s{seed}"


def epochs_for(warmup, updates_per_epoch, after):
    """Epochs to pass the warm-up's peak and train `after` epochs beyond it."""
    return -(-warmup // updates_per_epoch) + after


def train(args, template, norm, layers, warmup, lr, seed):
    """One run, trained in its own folder (resumed where a killed scan left it); its row."""
    out = args.out / "runs" / name(norm, layers, warmup, lr, seed)
    enc, dec, init = NORMS[norm]
    settings = {**template, "enc_layers": layers, "dec_layers": layers, "enc_norm": enc, "dec_norm": dec,
                "init": init, "lr": lr, "warmup": warmup, "seed": seed,
                "epochs": epochs_for(warmup, args.updates_per_epoch, args.after), "threads": 1}
    flags = ["--data", args.data, *shlex.split(trainer_flags(settings))]
    start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "log.txt", "a") as log:
        if norm == "admin" and not (out / "omega.json").exists():
            subprocess.run(lnrepro("admin-profile", *flags, "--out", out / "profile", "--method", "clinic-running",
                                   "--omega-out", out / "omega.json"), stdout=log, stderr=subprocess.STDOUT, check=True)
        admin = ["--admin-omega", out / "omega.json"] if norm == "admin" else []
        subprocess.run(lnrepro("train", *flags, *admin, "--out", out / "train"), stdout=log, stderr=subprocess.STDOUT,
                       check=True)
    return row(out / "train" / "metrics.csv", args.converged_below, norm=norm, layers=layers, warmup=warmup, lr=lr,
               seed=seed, wall_s=round(time.time() - start, 1))


def row(metrics_csv, converged_below, **cell):
    metrics = pd.read_csv(metrics_csv)
    status, final = metrics_status(metrics, converged_below)
    valid = metrics[metrics.diverged == 0].valid_loss
    return {**cell, "epochs": int(metrics.epoch.max()), "status": status, "final_valid": final,
            "best_valid": float(valid.min()) if len(valid) else float("nan"),
            "valid_by_epoch": " ".join(f"{v:.3f}" for v in valid), "diverged_reason": diverged_reason(metrics)}


def summary(table):
    """Per norm, depth and warm-up: how many seeds failed, and the final validation losses."""
    lines = ["| norm | layers | warm-up | lr | failed / seeds | final valid (bits), by seed | epochs |",
             "|---|---|---|---|---|---|---|"]
    keys = ["norm", "layers", "warmup", "lr"]
    for key, cell in table.sort_values(keys + ["seed"]).groupby(keys, sort=False):
        failed = int((cell.status != "converged").sum())
        losses = " / ".join(f"{v:.2f}" + ("" if s == "converged" else f" ({s})") for v, s in zip(cell.final_valid, cell.status))
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]:g} | {failed} / {len(cell)} | {losses} | "
                     f"{int(cell.epochs.max())} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a binarized corpus (lnrepro binarize's folder)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--config", type=Path, default=ROOT / "config" / "demo.yaml", help="the config of the template run")
    p.add_argument("--template", default="liu_wmt_post_18L",
                   help="the run whose settings every scanned run takes but norms, depth, warm-up, lr, seed, epochs")
    p.add_argument("--norms", nargs="+", default=["post", "pre", "admin", "hybrid"], choices=list(NORMS))
    p.add_argument("--depths", nargs="+", type=int, default=[6, 12, 18], help="layers per side")
    p.add_argument("--warmups", nargs="+", type=int, default=[146], help="warm-up updates")
    p.add_argument("--long-warmups-for", nargs="*", default=["post"],
                   help="norms trained at every warm-up; the others at the first only")
    p.add_argument("--lrs", nargs="+", type=float, default=[1e-3])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--updates-per-epoch", type=int, default=81, help="the corpus's updates per epoch (deen: 81)")
    p.add_argument("--after", type=int, default=3, help="epochs trained after the warm-up's peak")
    p.add_argument("--converged-below", type=float, default=None,
                   help="bits/token; default: the config's admin.converged_below")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    config = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    template = merged_run_settings(config, args.template)
    if args.converged_below is None:
        args.converged_below = config.get("admin", {}).get("converged_below")
    cells = [(n, L, w, lr, s) for n in args.norms for L in args.depths for lr in args.lrs for s in args.seeds
             for w in (args.warmups if n in args.long_warmups_for else args.warmups[:1])]
    cells.sort(key=lambda c: -c[1] * epochs_for(c[2], args.updates_per_epoch, args.after))  # longest first
    rows, table = [], args.out / "scan.csv"
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(train, args, template, *c): c for c in cells}
        for future in concurrent.futures.as_completed(futures):
            try:
                rows.append(future.result())
            except subprocess.CalledProcessError as e:
                print(f"{name(*futures[future])}: failed ({e}); see its log.txt", file=sys.stderr)
                continue
            done = pd.DataFrame(rows, columns=COLUMNS)
            done.to_csv(table, index=False)
            (args.out / "scan.md").write_text(summary(done))
            print(f"[{len(rows)}/{len(cells)}] {name(*futures[future])}: {rows[-1]['status']} "
                  f"{rows[-1]['final_valid']:.3f} ({rows[-1]['wall_s']} s)", flush=True)
    print(summary(pd.DataFrame(rows, columns=COLUMNS)))


if __name__ == "__main__":
    main()
