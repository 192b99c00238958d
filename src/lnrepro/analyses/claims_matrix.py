"""The lab's claims matrix (issue 45): each scheme's headline claim, measured again for every scheme of
its table, so a reader sees whether the criterion singles out the scheme its paper names (DeepNorm
trains at 18 layers: do Pre-LN and T-Fixup too?). A claim selects its scheme by one axis of its sweep
table (`norm` or `norm_fn`); its row takes each value of that axis in turn, with the claim's own range,
pairing and statistic (lnrepro.analyses.claims). The claim's own scheme is its verdict in
results/lab_claims.md; the other cells are context, not claims of any paper (our reading)."""
import copy

import pandas as pd

from .claims import PASS, evaluate, fmt, range_of, range_text

SCHEME_AXES = ("norm", "norm_fn")  # the sweep table columns that name a scheme
COLUMNS = ["claim", "axis", "scheme", "own", "reference", "ours", "result", "detail", "range"]


def scheme_axis(claim):
    """The axis whose value in the claim's `select` names its scheme, or None (not a scheme's claim)."""
    return next((a for a in SCHEME_AXES if a in (claim.get("select") or {})), None)


def matrix(claims, files, tables):
    """One row per claim and scheme of its table: the claim measured with that scheme selected. The
    scheme a claim subtracts (`minus`: ResiDual - Pre-LN) is its reference: a row that says so."""
    rows = []
    for name, claim in sorted(claims.items()):
        axis = scheme_axis(claim)
        if claim.get("kind") != "table" or axis is None or claim["source"] not in tables:
            continue
        own, reference = claim["select"][axis], (claim.get("minus") or {}).get(axis)
        for scheme in dict.fromkeys(tables[claim["source"]][axis]):
            row = {"claim": name, "axis": axis, "scheme": scheme, "own": scheme == own, "reference": scheme == reference,
                   "range": range_text(*range_of(claim))}
            if scheme == reference:
                rows.append({**row, "ours": float("nan"), "result": "", "detail": "the claim's reference"})
                continue
            spec = copy.deepcopy({k: v for k, v in claim.items() if k not in ("scale", "paper_missing", "scaled_missing")})
            spec["select"][axis] = scheme
            measured = evaluate({name: spec}, files, tables).iloc[0]
            rows.append({**row, "ours": measured.ours, "result": measured.paper_result, "detail": measured.detail})
    return pd.DataFrame(rows, columns=COLUMNS)


def cell(r):
    if r.reference:
        return "(reference)"
    text = f"{fmt(r.ours)} {'✓' if r.result == PASS else '✗' if r.result else ''}".strip()
    return f"**{text}**" if r.own else text


def markdown(table):
    """Claims as rows, schemes as columns (one block per axis): the claim's own scheme in bold."""
    lines = ["## The claims matrix: each claim measured for every scheme (our reading)", "",
             "Each row is a claim of results/lab_claims.md measured again with every scheme of its sweep table in "
             "place of its own (bold: the claim's own scheme, its verdict; ✓ inside the claim's range, ✗ outside; "
             "(reference): the scheme the claim compares with). Only the bold cells are claims of a paper.", ""]
    for axis, block in table.groupby("axis", sort=False):
        schemes = list(dict.fromkeys(block.scheme))
        lines += [f"| claim ({axis}) | range | " + " | ".join(schemes) + " |", "|" + "---|" * (len(schemes) + 2)]
        for name, row in block.groupby("claim", sort=False):
            cells = {r.scheme: cell(r) for r in row.itertuples()}
            lines.append(f"| {name} | {row.range.iloc[0].replace('|', chr(92) + '|')} | "
                         + " | ".join(cells.get(s, "") for s in schemes) + " |")
        lines.append("")
    return "\n".join(lines)
