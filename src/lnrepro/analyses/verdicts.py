"""The demo's verdicts as committed text: the expected verdict list the end-to-end test compares with,
and the "What the demo does not reproduce" table of docs/demo.md, both written from one results/claims.csv.

Regenerate both after a demo build (a changed verdict is then a visible diff, its reason in the commit):
    lnrepro verdicts --claims DEMO/results/claims.csv --expected tests/demo_verdicts.csv --doc docs/demo.md
"""
import math
from pathlib import Path

import pandas as pd

from .claims import reproduced

EXPECTED_COLUMNS = ["claim", "figure", "paper_result", "scaled_result", "note"]
BEGIN, END = "<!-- verdicts: begin (lnrepro verdicts writes this table) -->", "<!-- verdicts: end -->"


def expected(claims):
    """The verdicts of every claim, sorted by name: what the end-to-end test asserts."""
    return claims[EXPECTED_COLUMNS].fillna("").sort_values("claim").reset_index(drop=True)


def number(value):
    return "" if value == "" or (isinstance(value, float) and math.isnan(value)) else f"{float(value):.3g}"


def doc_table(claims):
    """The claims the demo's scale does not reproduce: each whose scaled verdict (the paper's range
    where it has no scaled one) FAILS, with its numbers and the measured reason from config/demo.yaml."""
    claims = claims.fillna("")
    failed = claims[claims.scaled_result == "FAIL"].sort_values(["figure", "claim"])
    counted, coincidences = reproduced(claims)
    lines = [BEGIN,
             f"Of {len(claims)} claims, the demo reproduces {counted} as the paper states (the paper's range; "
             f"{coincidences} more land in it only where the demo's scale cannot be compared: not counted) "
             f"and passes {int((claims.scaled_result == 'PASS').sum())} of the "
             f"{int((claims.scaled_result != 'not at this scale').sum())} with a verdict at its scale; "
             f"{int((claims.scaled_result == 'not at this scale').sum())} have none (not at this scale: levels and "
             f"comparisons of BLEU it cannot be compared to, each with its reason in claims.md). "
             f"These {len(failed)} FAIL at its scale:", "",
             "| claim | where | paper's range | ours | scaled range | why it fails here |", "|---|---|---|---|---|---|"]
    for r in failed.itertuples():
        scaled = "" if r.scaled_range == r.paper_range else r.scaled_range
        ours = number(r.ours) if number(r.scaled_ours) == number(r.ours) else \
            f"{number(r.ours)} (scaled: {number(r.scaled_ours)})"
        lines.append(f"| `{r.claim}` | {r.place} | {r.paper_range} | {ours} | {scaled} | {r.note or 'no reason recorded'} |")
    return "\n".join(lines + [END])


def replace_section(text, table, name="the doc"):
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise SystemExit(f"{name}: needs exactly one {BEGIN!r} ... {END!r} section")
    head, rest = text.split(BEGIN)
    return head + table + rest.split(END, 1)[1]


def add_arguments(p):
    p.add_argument("--claims", required=True, help="results/claims.csv of a demo build")
    p.add_argument("--expected", help="write the verdict list here (tests/demo_verdicts.csv)")
    p.add_argument("--doc", help="rewrite the verdicts section of this Markdown file (docs/demo.md)")


def run(args):
    claims = pd.read_csv(args.claims, keep_default_na=False, na_values=[""])
    if args.expected:
        expected(claims).to_csv(args.expected, index=False)
    if args.doc:
        path = Path(args.doc)
        path.write_text(replace_section(path.read_text(encoding="utf-8"), doc_table(claims), args.doc), encoding="utf-8")
    return 0
