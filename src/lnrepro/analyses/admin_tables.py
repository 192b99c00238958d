"""Tables 1 and 2 of Liu et al. 2020 from the runs' own metrics and BLEU tables.

Each cell is a run's outcome (lnrepro.analyses.outcomes). Table 1 joins each norm combination's
outcome with the gradient-vanishing verdict measured at initialization (lnrepro gradient-vanishing).
Table 2 may add a block of the other initializations Liu et al. §5.2 compare with (FixUp, LookLinear).
"""
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..args import RunFiles, json_object, usage_error
from ..core import provenance
from .outcomes import add_outcome_arguments, outcome
from .plotting import NORM_LABELS

NORMS = ("post", "pre", "admin")  # row order of the tables
INIT_LABELS = {"fixup": "FixUp", "looklinear": "LookLinear"}  # Table 2's §5.2 block, in this order
INIT_BLOCK = "Other initializations (Liu §5.2)"
# seeds: converged seeds of a seed row, out of seeds_run; averaged: checkpoints the BLEU's model really
# averaged, out of average_last asked; note: what a reader must know beside the number
COLUMNS = ["table", "row", "column", "run", "status", "diverged_reason", "bleu", "bleu_std", "seeds", "seeds_run",
           "valid_loss", "epochs", "averaged", "average_last", "capped", "note", "vanishing", "decoder_bottom_over_top"]


def marks(o):
    """' [avg of 4 of 10 checkpoints: ...; CAPPED]': what the number is not, or ''."""
    said = [o["note"]] if o["note"] else []
    said += ["CAPPED"] if o["capped"] else []
    return f" [{'; '.join(said)}]" if said else ""


def number(x):
    return "n/a" if math.isnan(x) else f"{x:.2f}"


def cell_text(o):
    """BLEU and the final validation loss (bits/token), or the run's failure."""
    if o["status"] == "diverged":
        return "diverged" + marks(o)
    if o["status"] == "not converged":
        return f"not converged ({number(o['bleu'])}, valid {number(o['valid_loss'])})" + marks(o)
    return f"{number(o['bleu'])} (valid {number(o['valid_loss'])})" + marks(o)


def table1(spec, files, vanishing):
    """Rows: encoder, decoder, gradient vanishing at init, training outcome."""
    verdict = {r.combination: r for r in vanishing.itertuples()}
    rows = []
    for r in spec["table1"]["rows"]:
        combo = f"{r['enc']}/{r['dec']}"
        o = outcome(spec, files, r["run"])
        v = verdict[combo]
        rows.append({"table": 1, "row": NORM_LABELS[r["enc"]], "column": NORM_LABELS[r["dec"]], "run": r["run"], **o,
                     "vanishing": int(v.vanishing), "decoder_bottom_over_top": float(v.decoder_bottom_over_top)})
    return rows


def table2(spec, files):
    """One row per norm: a cell per depth, then the mean +- std over the seeds of the second corpus."""
    t2 = spec["table2"]
    rows = []
    for norm in (n for n in NORMS if n in t2["runs"]):
        for layers, run in zip(t2["depths"], t2["runs"][norm]):
            rows.append({"table": 2, "row": NORM_LABELS[norm], "column": f"{t2['corpus_label']} {layers}L", "run": run,
                         **outcome(spec, files, run)})
    seed_runs = t2.get("seed_runs", {})
    for norm, runs in ((n, seed_runs[n]) for n in NORMS if n in seed_runs):
        outs = [outcome(spec, files, run) for run in runs]
        ok = [o["bleu"] for o in outs if o["status"] == "converged"]
        failed = len(outs) - len(ok)
        rows.append({"table": 2, "row": NORM_LABELS[norm], "column": t2.get("seed_label", "seeds"),
                     "run": " ".join(runs),
                     "status": "converged" if not failed else f"{failed}/{len(outs)} failed",
                     "bleu": float(np.mean(ok)) if ok else math.nan,
                     "valid_loss": float(np.mean([o["valid_loss"] for o in outs])),
                     # one seed has no spread: NaN, not a std of 0 that reads as a measured one
                     "bleu_std": float(np.std(ok, ddof=1)) if len(ok) > 1 else math.nan, "seeds": len(ok),
                     "seeds_run": len(outs), "epochs": max(o["epochs"] for o in outs),
                     "averaged": min(o["averaged"] for o in outs), "average_last": outs[0]["average_last"],
                     "capped": max(o["capped"] for o in outs),
                     "note": "; ".join(f"{run}: {o['note']}" for run, o in zip(runs, outs) if o["note"])})
    return rows


def init_rows(spec, files):
    """Table 2's §5.2 block: each other initialization's run, converged or not as every cell is."""
    t2 = spec["table2"]
    label = f"{INIT_BLOCK}: {t2.get('init_label', '')}".rstrip(": ")
    return [{"table": 2, "row": INIT_LABELS[init], "column": label, "run": t2["init_runs"][init],
             **outcome(spec, files, t2["init_runs"][init])}
            for init in INIT_LABELS if init in t2.get("init_runs", {})]


def init_markdown(rows):
    """The block under the grid: the outcome, BLEU only where the run converged."""
    if not rows:
        return ""
    lines = [f"## {rows[0]['column']}", "", "| Initialization | Run | Training | BLEU | valid loss |", "|---|---|---|---|---|"]
    for r in rows:
        bleu = number(r["bleu"]) if r["status"] == "converged" else ""
        lines.append(f"| {r['row']} | {r['run']} | {r['status']}{marks(r)} | {bleu} | {number(r['valid_loss'])} |")
    return "\n".join(lines + ["", ""])


def seed_cell(r):
    """'35.64 ± 0.23' (sample std over the converged seeds); '35.64 ± 0.23 (n = 2 of 3 seeds converged)'
    when some failed, '35.64 (n = 1 seed)' when one is all there is to show."""
    if math.isnan(r["bleu"]):
        return r["status"] + marks(r)
    n, total = r["seeds"], r["seeds_run"]
    text = f"{r['bleu']:.2f}" if n == 1 else f"{r['bleu']:.2f} ± {r['bleu_std']:.2f}"
    if n < total:
        text += f" (n = {n} of {total} seeds converged)"
    elif n == 1:
        text += " (n = 1 seed)"
    return text + marks(r)


def markdown(rows, title, note):
    """A grid: norms down, depths (and the seed column) across; seed cells are the rows with 'seeds'."""
    columns = list(dict.fromkeys(r["column"] for r in rows))
    lines = [f"# {title}", "", "| | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for label in dict.fromkeys(r["row"] for r in rows):
        cells = {r["column"]: seed_cell(r) if "seeds" in r else cell_text(r) for r in rows if r["row"] == label}
        lines.append(f"| {label} | " + " | ".join(cells.get(c, "") for c in columns) + " |")
    return "\n".join(lines + ["", note, ""])


def table1_markdown(rows, title, note):
    lines = [f"# {title}", "", "| Encoder | Decoder | Gradient vanishing at init | Training | BLEU | valid loss |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        vanishing = "yes" if r["vanishing"] else "no"
        lines.append(f"| {r['row']} | {r['column']} | {vanishing} (decoder bottom/top gradient "
                     f"{r['decoder_bottom_over_top']:.3g}) | {r['status']}{marks(r)} | {number(r['bleu'])} | "
                     f"{number(r['valid_loss'])} |")
    return "\n".join(lines + ["", note, ""])


def add_arguments(p):
    p.add_argument("--table", type=int, choices=[1, 2], required=True, help="which of Liu et al.'s tables")
    p.add_argument("--spec", required=True, type=json_object(), help="JSON: table1 or table2, converged_below, average_last {run: N}")
    add_outcome_arguments(p, "every run the table reads")
    p.add_argument("--vanishing", default=None,
                   help="the summary CSV of lnrepro gradient-vanishing: needed by Table 1, unused by Table 2")
    p.add_argument("--csv", required=True, help="the table as CSV")
    p.add_argument("--md", required=True, help="the table as Markdown")


def run(args):
    spec = json.loads(args.spec)
    files = RunFiles("admin-tables", metrics=args.metrics, bleu=args.bleu)
    if f"table{args.table}" not in spec:  # the workflow writes both; a spec by hand may not
        usage_error("admin-tables", f"--spec has no 'table{args.table}', which --table {args.table} draws")
    if args.table == 1 and not args.vanishing:
        usage_error("admin-tables", "--table 1 needs --vanishing (the summary CSV of lnrepro gradient-vanishing)")
    if args.table == 1:
        rows = table1(spec, files, pd.read_csv(args.vanishing))
        text = table1_markdown(rows, spec["table1"]["title"], spec["table1"].get("paper", ""))
    else:
        rows, block = table2(spec, files), init_rows(spec, files)
        text = markdown(rows, spec["table2"]["title"], init_markdown(block) + spec["table2"].get("paper", ""))
        rows += block
    untrusted = provenance.untrusted_inputs_mark()
    if untrusted:  # above the table, as a figure's under its title
        text = f"**{untrusted}**\n\n{text}"
    for path in (args.csv, args.md):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=COLUMNS).to_csv(args.csv, index=False)
    Path(args.md).write_text(text, encoding="utf-8")
    print(text)
    return 0
