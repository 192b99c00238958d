"""The claims table: each claim of the paper, the number it reports, ours, the tolerance, pass/fail.

Claims are data (the config's ``claims:`` section); each names a kind, the inputs it compares
and an accepted range ``[min, max]`` for our number. Kinds:
- ``gap``: metric(a) - metric(b) of two runs (|...| with ``abs: true``), at the final or best epoch
  or at a given epoch (``at: 1``: how fast each run starts);
- ``sooner``: the first epoch at which run a is as good as run b's final value, over b's epochs
  (NaN when b has no value: nothing to reach, no epochs to count);
- ``dominates``: |metric(a) - metric(b)| / |metric(c) - metric(d)|, one change against another;
- ``table``: a statistic of selected rows of a results table (``fig3``, ``theory``): value, mean,
  last_over_first, max_over_min, fit_exponent, cv (coefficient of variation: sd / mean, how
  unequal the values are whatever their scale); ``divide_by`` divides by the same statistic of
  other rows.
A run's missing value (it diverged before any checkpoint) counts as the worst: BLEU 0, loss inf.

``paper_range: [lo, hi]`` is the range a reproduction at the paper's scale must meet (default: the
claim's own); a claim checked with another range, or in another setting, says why in ``scaled``.
"""
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

HIGHER_IS_BETTER = {"bleu": True, "valid_loss": False, "valid_nll": False, "train_loss": False, "train_nll": False}
# CSV columns and the markdown's headers; `tolerance` and `detail` keep their names for readers of the CSV
COLUMNS = ["claim", "figure", "paper", "paper_value", "paper_range", "ours", "tolerance", "scaled", "result", "detail"]
HEADERS = ["claim", "figure", "the paper says", "paper value", "paper's range", "ours", "our range (accepted)",
           "scaled", "result", "how"]
RUN_KEYS = ("a", "b", "c", "d")


def curve(runs_dir, run, metric):
    """(epochs, values) of one run's metric, diverged rows and missing values dropped. A BERT
    pre-training run (results/pretrain/) counts its rounds as epochs."""
    runs_dir = Path(runs_dir)
    if metric == "bleu":
        table = pd.read_csv(runs_dir / "eval" / run / "bleu.csv")
    elif (runs_dir / "pretrain" / run / "metrics.csv").exists():
        table = pd.read_csv(runs_dir / "pretrain" / run / "metrics.csv")
    else:
        table = pd.read_csv(runs_dir / "train" / run / "metrics.csv")
    table = table[table[metric].notna()]
    return table.epoch.to_numpy(), table[metric].to_numpy(dtype=float)


def worst(metric):
    return 0.0 if HIGHER_IS_BETTER[metric] else math.inf


def run_value(runs_dir, run, metric, at="final"):
    """The run's value at its final or best epoch, or at epoch `at` (a number: the worst if the run
    has no value there, e.g. it diverged before it)."""
    epochs, values = curve(runs_dir, run, metric)
    if isinstance(at, int):
        values = values[epochs == at]
    if len(values) == 0:
        return worst(metric)
    if at == "best":
        return float(values.max() if HIGHER_IS_BETTER[metric] else values.min())
    return float(values[-1])


def at_text(at):
    return f"epoch {at}" if isinstance(at, int) else at


def gap(spec, runs_dir, tables):
    metric, at = spec["metric"], spec.get("at", "final")
    a, b = run_value(runs_dir, spec["a"], metric, at), run_value(runs_dir, spec["b"], metric, at)
    value = abs(a - b) if spec.get("abs") else a - b
    return value, f"{metric} ({at_text(at)}): {spec['a']} {a:.3g}, {spec['b']} {b:.3g}"


def sooner(spec, runs_dir, tables):
    metric = spec["metric"]
    b_epochs, b_values = curve(runs_dir, spec["b"], metric)
    a_epochs, a_values = curve(runs_dir, spec["a"], metric)
    if len(b_values) == 0:  # b diverged before its first checkpoint: no final value, no epochs to compare with
        return math.nan, f"{spec['b']} has no {metric}: it diverged before its first checkpoint"
    target = b_values[-1]
    reached = a_values >= target if HIGHER_IS_BETTER[metric] else a_values <= target
    if not reached.any():
        return math.inf, f"{spec['a']} never reaches {spec['b']}'s final {metric} {target:.3g}"
    epoch = int(a_epochs[reached.argmax()])
    return epoch / int(b_epochs[-1]), (f"{spec['a']} reaches {spec['b']}'s final {metric} {target:.3g} "
                                       f"(epoch {int(b_epochs[-1])}) at epoch {epoch}")


def dominates(spec, runs_dir, tables):
    metric, at = spec["metric"], spec.get("at", "final")
    v = {k: run_value(runs_dir, spec[k], metric, at) for k in RUN_KEYS}
    big, small = abs(v["a"] - v["b"]), abs(v["c"] - v["d"])
    ratio = big / small if small > 0 else math.inf
    return ratio, (f"{metric} ({at_text(at)}): abs({spec['a']} - {spec['b']}) = {big:.3g} vs "
                   f"abs({spec['c']} - {spec['d']}) = {small:.3g}")


def select(table, where):
    """Rows whose columns equal the given values (numbers compared as numbers)."""
    keep = pd.Series(True, index=table.index)
    for col, want in where.items():
        if isinstance(want, (int, float)) and not isinstance(want, bool):
            keep &= np.isclose(pd.to_numeric(table[col], errors="coerce"), want)
        else:
            keep &= table[col].astype(str) == str(want)
    return table[keep]


def statistic(rows, name, x, y):
    rows = rows.sort_values(x, kind="stable") if x in rows else rows
    values = rows[y].to_numpy(dtype=float)
    if name == "value":
        if len(values) != 1:
            raise ValueError(f"statistic 'value' needs exactly one row, selected {len(values)}")
        return float(values[0])
    if name == "mean":
        return float(values.mean())
    if name == "min":
        return float(values.min())
    if name == "max":
        return float(values.max())
    if name == "last_over_first":
        return float(values[-1] / values[0])
    if name == "max_over_min":
        return float(values.max() / values.min())
    if name == "cv":
        return float(values.std() / values.mean())  # population sd: the rows are all there is
    if name == "fit_exponent":  # y ~ x^k
        return float(np.polyfit(np.log(rows[x].to_numpy(dtype=float)), np.log(values), 1)[0])
    raise ValueError(f"unknown statistic {name!r}")


def selected(table, where, spec, y, key="select"):
    """The rows a claim reads, its y as numbers: with `equals`, 1 where y equals that label, else 0
    (so `mean` is the share of rows with that label: the converged cells of a grid, say)."""
    rows = select(table, where)
    if rows.empty:
        raise ValueError(f"no rows of {spec['source']} match {key} {where}")
    if "equals" in spec:
        return rows.assign(**{y: (rows[y].astype(str) == str(spec["equals"])).astype(float)})
    return rows


def paired_difference(rows, other, x, y):
    """y of rows minus y of other at the same x (two curves compared point by point)."""
    both = rows.merge(other[[x, y]], on=x, suffixes=("", "_minus"))
    if not len(both) == len(rows) == len(other):
        raise ValueError(f"minus: the rows are not paired one to one on {x} ({len(rows)} vs {len(other)} rows, "
                         f"{len(both)} shared)")
    return both.assign(**{y: both[y] - both[f"{y}_minus"]})


def table_claim(spec, runs_dir, tables):
    table = tables[spec["source"]]
    x, y, stat = spec.get("x", "x"), spec.get("y", "mean" if "mean" in table else "measured"), spec["statistic"]
    rows = selected(table, spec.get("select", {}), spec, y)
    what = f"({y} == {spec['equals']})" if "equals" in spec else y
    detail = f"{stat} of {what} over {len(rows)} rows of {spec['source']}"
    if spec.get("minus"):
        rows = paired_difference(rows, selected(table, spec["minus"], spec, y, "minus"), x, y)
        detail += f" minus the rows {spec['minus']}, paired on {x}"
    value = statistic(rows, stat, x, y)
    if spec.get("divide_by"):
        denominator = statistic(selected(table, spec["divide_by"], spec, y, "divide_by"), stat, x, y)
        detail += f": {value:.3g} / {denominator:.3g}"
        value /= denominator
    return value, detail


KINDS = {"gap": gap, "sooner": sooner, "dominates": dominates, "table": table_claim}


def own_range(spec):
    return [spec.get("min"), spec.get("max")]


def paper_range(spec):
    """The range a reproduction at the paper's scale must meet: the claim's own unless it says otherwise."""
    return list(spec.get("paper_range", own_range(spec)))


def range_text(lo, hi, unbounded):
    if lo is not None and hi is not None:
        return f"in [{lo:g}, {hi:g}]"
    return f">= {lo:g}" if lo is not None else f"<= {hi:g}" if hi is not None else unbounded


def tolerance_text(spec):
    return range_text(*own_range(spec), "(reported only)")


def passes(value, spec):
    lo, hi = own_range(spec)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def evaluate(claims, runs_dir, tables):
    """One row per claim, grouped by figure, then by name."""
    rows = []
    for name, spec in sorted(claims.items(), key=lambda kv: (kv[1].get("figure", ""), kv[0])):
        try:
            value, detail = KINDS[spec["kind"]](spec, runs_dir, tables)
        except (KeyError, ValueError) as e:
            raise SystemExit(f"claims.{name}: {e}") from e
        rows.append({"claim": name, "figure": spec.get("figure", ""), "paper": spec["paper"],
                     "paper_value": spec.get("paper_value", ""),
                     "paper_range": range_text(*paper_range(spec), "(none stated)"), "ours": value,
                     "tolerance": tolerance_text(spec), "scaled": spec.get("scaled", ""),
                     "result": "PASS" if passes(value, spec) else "FAIL", "detail": detail})
    return pd.DataFrame(rows, columns=COLUMNS)


def fmt(v):
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:.3g}"
    return str(v)


def ranges_sentence(table):
    """Which ranges these are, told from the claims themselves: the rule passes no config file name, so
    that running the same claims from another file reruns nothing."""
    scaled = int((table.scaled != "").sum())
    if not scaled:
        return ("Our ranges are the paper's, as in config/config.yaml: what a reproduction at the paper's "
                "scale should meet.")
    return (f"Our ranges are those of a config scaled down from the paper's, as config/demo.yaml is for the CPU "
            f"demo: the rows marked scaled ({scaled} of {len(table)}) use a range or setting other than the "
            f"paper's, for the reason given; the others use the paper's range.")


def row_cells(r):
    return [r.claim, r.figure, r.paper, fmt(r.paper_value), r.paper_range, fmt(r.ours), r.tolerance, r.scaled,
            f"**{r.result}**", r.detail]


def markdown(table, title):
    passed = int((table.result == "PASS").sum())
    lines = [f"# {title}", "", ranges_sentence(table), "", f"{passed} of {len(table)} claims pass.", "",
             "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for r in table.itertuples():
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row_cells(r)) + " |")
    return "\n".join(lines) + "\n"


def add_arguments(p):
    p.add_argument("--spec", required=True, help="JSON: {claim: {kind, paper, ...}} (the config's claims)")
    p.add_argument("--runs-dir", default="results", help="holds train/{run}/metrics.csv and eval/{run}/bleu.csv")
    p.add_argument("--tables", nargs="*", default=[], help="NAME=CSV results tables the table claims read")
    p.add_argument("--title", default="Claims of Xiong et al. 2020, checked on our numbers", help="table title")
    p.add_argument("--csv", required=True, help="the claims table as CSV")
    p.add_argument("--md", required=True, help="the claims table as Markdown")


def run(args):
    claims = json.loads(args.spec)
    tables = {name: pd.read_csv(path) for name, path in (t.split("=", 1) for t in args.tables)}
    table = evaluate(claims, args.runs_dir, tables)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    Path(args.md).write_text(markdown(table, args.title), encoding="utf-8")
    print(markdown(table, args.title))
    return 0
