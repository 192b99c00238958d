"""`lnrepro claims`: the claims table (lnrepro.analyses.claims measures each claim) as CSV and Markdown, with
what made each input and, for a sweep's claims, the claims matrix (lnrepro.analyses.claims_matrix)."""
import json
from pathlib import Path

import pandas as pd

from ..args import RunFiles, add_run_files_argument, json_object
from ..core import provenance
from .claims import evaluate, input_files, markdown
from .claims_matrix import markdown as matrix_markdown, matrix


def add_arguments(p):
    p.add_argument("--spec", required=True, type=json_object(), help="JSON: {claim: {kind, paper, ..., scale, paper_missing, ...}}")
    add_run_files_argument(p, "metrics", "the metrics.csv of every run a measured claim reads: a translation run's "
                           "(lnrepro train's) or a BERT run's pre-training one (lnrepro pretrain's)")
    add_run_files_argument(p, "bleu", "the bleu.csv of every run a measured claim compares by BLEU (lnrepro evaluate's)")
    p.add_argument("--tables", nargs="*", default=[], help="NAME=CSV results tables the table claims read")
    p.add_argument("--title", default="Claims of Xiong et al. 2020 and Liu et al. 2020, checked on our numbers",
                   help="table title")
    p.add_argument("--csv", required=True, help="the claims table as CSV")
    p.add_argument("--md", required=True, help="the claims table as Markdown")
    p.add_argument("--capped", action="store_true", help="the runs are capped (training_cap): say the verdicts are no results")
    p.add_argument("--matrix-csv", default=None,
                   help="CSV: each scheme's claim measured for every scheme of its sweep table (the lab's claims matrix); "
                        "the Markdown gains it as a section")
    p.add_argument("--provenance-csv", default=None,
                   help="CSV: what made each input given (--metrics, --bleu, --tables: commit, versions, settings digest) and "
                        "each one not made by this commit's clean code")


def run(args):
    claims = json.loads(args.spec)
    tables_given = dict(t.split("=", 1) for t in args.tables)
    tables = {name: pd.read_csv(path) for name, path in tables_given.items()}
    files = RunFiles("claims", metrics=args.metrics, bleu=args.bleu)
    table = evaluate(claims, files, tables).assign(capped=args.capped)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    inputs = provenance.table(input_files(files, tables_given.values()), provenance.current()["commit"])
    if args.provenance_csv:
        pd.DataFrame(inputs, columns=provenance.TABLE_COLUMNS).to_csv(args.provenance_csv, index=False)
    md = markdown(table, args.title, args.capped) + "\n"
    if args.matrix_csv:
        grid = matrix(claims, files, tables)
        grid.to_csv(args.matrix_csv, index=False)
        md += matrix_markdown(grid) + "\n"
    md += provenance.markdown_section(inputs, provenance.current())
    Path(args.md).write_text(md, encoding="utf-8")
    print(md)
    return 0
