"""The claims table: each claim of the papers, the number it reports, ours, and two verdicts.

Claims are data (config/claims.yaml); each names a kind, the inputs it compares and the paper's
range ``[min, max]`` for our number. Kinds:
- ``gap``: metric(a) - metric(b) of two runs (|...| with ``abs: true``), at the final or best epoch
  or at a given epoch (``at: 1``: how fast each run starts); runs of different lengths are read up to
  the last epoch all of them trained (as ``dominates``'s);
- ``level``: metric(a) itself, at the final or best epoch or a given one (a paper's own number);
- ``sooner``: how much sooner run a reaches a target than run b: with ``target: final`` (default) a's
  first epoch at b's final value over b's epochs; ``target: N`` (an int) b's value at its epoch N, a's
  first epoch there over N; ``target: X`` (a float) a level both must reach, a's first epoch over
  b's (b never reaching it: over b's epochs, an upper bound);
- ``dominates``: |metric(a) - metric(b)| / |metric(c) - metric(d)|, one change against another;
- ``outcome``: 1 if run a failed (diverged, or not converged: its final validation loss at or above
  ``converged_below``, the config's admin.converged_below) and run b (optional) converged, else 0:
  Liu et al.'s "diverges" as a status (lnrepro.analyses.outcomes), never a loss gap;
- ``table``: a statistic of selected rows of a results table (``fig3``, ``theory``, ...): value, mean,
  min, max, last_over_first, max_over_min, fit_exponent, cv (coefficient of variation: sd / mean),
  share_positive, monotone (with ``toward``: the share of ordered pairs of rows whose y does not rise
  toward that corner of the x columns); ``divide_by`` divides by the same statistic of other rows, ``minus`` subtracts rows
  paired on x (a column or a list; ``minus_covers``: the minus rows may hold more than the selected).
A run's missing value where it diverged counts as the worst: BLEU 0, loss inf.

Two verdicts per claim. The **paper** verdict measures as the paper does and judges on its range.
A config whose scale cannot reach that range overrides the claim under ``scale`` (its own
``claims:`` entry): another range or setting and why (``scaled``), giving the **scaled** verdict;
``not_at_this_scale`` (a level such as BLEU ~34 at d=64) gives none. A claim the config cannot
measure (a run it lacks, an epoch its runs do not reach, a table row it lacks) says so in its
verdict: it is never dropped and never passes.
"""
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..settings import CLAIM_SCALE_WORDS
from .outcomes import status_and_why

HIGHER_IS_BETTER = {"bleu": True, "valid_loss": False, "valid_nll": False, "train_loss": False, "train_nll": False}
COLUMNS = ["claim", "figure", "place", "paper", "paper_value", "paper_range", "ours", "paper_result", "scaled_range",
           "scaled_ours", "scaled_result", "scaled", "seed_spread", "note", "detail", "scaled_detail"]
HEADERS = ["claim", "where", "the paper says", "paper value", "paper's range", "ours", "paper verdict",
           "scaled range", "ours (scaled)", "scaled verdict", "why scaled (seed spread)", "how"]
RUN_KEYS = ("a", "b", "c", "d")
PASS, FAIL = "PASS", "FAIL"
NOT_AT_THIS_SCALE = "not at this scale"


class NotMeasured(Exception):
    """This config cannot take the claim's measurement: an epoch its run does not reach, a row it lacks."""


def metrics_path(files, run, metric):
    """The table a run's metric is in, as given (files: lnrepro.args.RunFiles): its --bleu for BLEU, else
    its --metrics (a translation run's metrics.csv, or a BERT run's pre-training one: rounds count as epochs)."""
    return files("bleu" if metric == "bleu" else "metrics", run)


def read_metrics(files, run, metric):
    return pd.read_csv(metrics_path(files, run, metric))


def curve(files, run, metric):
    """(epochs, values) of one run's metric, diverged rows and missing values dropped."""
    table = read_metrics(files, run, metric)
    table = table[table[metric].notna()]
    return table.epoch.to_numpy(), table[metric].to_numpy(dtype=float)


def diverged(files, run):
    table = read_metrics(files, run, "valid_loss")
    return bool("diverged" in table and (table.diverged == 1).any())


def worst(metric):
    return 0.0 if HIGHER_IS_BETTER[metric] else math.inf


def run_value(files, run, metric, at="final", until=None):
    """The run's value at its final or best epoch, or at epoch `at` (a number). A run that diverged
    before it has the worst value; one that did not but stopped sooner cannot be measured there.
    `until` ends the run there for `final` and `best` (see shared_end)."""
    epochs, values = curve(files, run, metric)
    if until is not None:
        epochs, values = epochs[epochs <= until], values[epochs <= until]
    if isinstance(at, int):
        values = values[epochs == at]
        if len(values) == 0 and not diverged(files, run):
            last = int(epochs.max()) if len(epochs) else 0
            raise NotMeasured(f"{run} has no {metric} at epoch {at} (its last: {last})")
    if len(values) == 0:
        return worst(metric)
    if at == "best":
        return float(values.max() if HIGHER_IS_BETTER[metric] else values.min())
    return float(values[-1])


def at_text(at, until=None):
    if until is not None:
        return f"{at} up to epoch {until}, the last all of them trained"
    return f"epoch {at}" if isinstance(at, int) else at


def shared_end(files, runs, metric, at):
    """Where runs of different lengths are compared at their final or best epoch, the last epoch every
    one of them that did not diverge reached (None where their lengths agree): the papers compare runs
    trained equally long, so a run the demo trains longer (Fig 4's two converging runs) is read up to
    where the others stop. A diverged run's length is not a horizon: it stopped by failing."""
    if isinstance(at, int):
        return None
    lengths = {r: curve(files, r, metric)[0] for r in runs if not diverged(files, r)}
    ends = {int(epochs.max()) for epochs in lengths.values() if len(epochs)}
    return min(ends) if len(ends) > 1 else None


def gap(spec, files, tables):
    metric, at = spec["metric"], spec.get("at", "final")
    until = shared_end(files, (spec["a"], spec["b"]), metric, at)
    a, b = (run_value(files, spec[k], metric, at, until) for k in ("a", "b"))
    value = abs(a - b) if spec.get("abs") else a - b
    return value, f"{metric} ({at_text(at, until)}): {spec['a']} {a:.3g}, {spec['b']} {b:.3g}"


def level(spec, files, tables):
    metric, at = spec["metric"], spec.get("at", "final")
    value = run_value(files, spec["a"], metric, at)
    return value, f"{metric} ({at_text(at)}) of {spec['a']}"


def first_reaching(epochs, values, target, metric):
    reached = values >= target if HIGHER_IS_BETTER[metric] else values <= target
    return int(epochs[reached.argmax()]) if reached.any() else None


def sooner(spec, files, tables):
    metric, target = spec["metric"], spec.get("target", "final")
    a, b = spec["a"], spec["b"]
    b_epochs, b_values = curve(files, b, metric)
    a_epochs, a_values = curve(files, a, metric)
    if len(b_values) == 0:  # b diverged before its first checkpoint: nothing to reach, no epochs to count
        return math.nan, f"{b} has no {metric}: it diverged before its first checkpoint"
    if target == "final":
        value, b_epoch, what = b_values[-1], int(b_epochs[-1]), f"{b}'s final {metric}"
    elif isinstance(target, int):
        if target not in b_epochs:
            raise NotMeasured(f"{b} has no {metric} at epoch {target} (its last: {int(b_epochs[-1])})")
        value, b_epoch, what = b_values[b_epochs == target][0], target, f"{b}'s {metric} at epoch {target}"
    else:
        value, what = float(target), f"{metric} {target:g}"
        b_epoch = first_reaching(b_epochs, b_values, value, metric)
    a_epoch = first_reaching(a_epochs, a_values, value, metric)
    if a_epoch is None:
        return math.inf, f"{a} never reaches {what} ({value:.3g})"
    if b_epoch is None:  # b never gets there in its epochs: a's epoch over all of b's bounds the ratio
        return a_epoch / int(b_epochs[-1]), (f"{a} reaches {what} at epoch {a_epoch}; {b} never does in its "
                                             f"{int(b_epochs[-1])} epochs (the ratio is at most this)")
    return a_epoch / b_epoch, f"{a} reaches {what} ({value:.3g}) at epoch {a_epoch}, {b} at epoch {b_epoch}"


def dominates(spec, files, tables):
    metric, at = spec["metric"], spec.get("at", "final")
    until = shared_end(files, {spec[k] for k in RUN_KEYS}, metric, at)
    v = {k: run_value(files, spec[k], metric, at, until) for k in RUN_KEYS}
    big, small = abs(v["a"] - v["b"]), abs(v["c"] - v["d"])
    ratio = big / small if small > 0 else math.inf
    return ratio, (f"{metric} ({at_text(at, until)}): abs({spec['a']} - {spec['b']}) = {big:.3g} vs "
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


def monotone_share(rows, keys, y, toward):
    """Of every pair of rows (a, b) where b lies at least as far as a in the `toward` direction of each
    x column (+1: larger, -1: smaller) and further in one, the share with y(b) <= y(a): 1 when y only
    falls toward that corner (Fig 10: converged cells give way to failed ones at larger lr and smaller
    beta2, never the other way round). NaN without such a pair."""
    if toward is None or len(toward) != len(keys):
        raise ValueError(f"statistic monotone needs `toward`, one direction per x column {keys}")
    at = rows[keys].to_numpy(dtype=float) * np.asarray(toward, dtype=float)
    values = rows[y].to_numpy(dtype=float)
    pairs = [(i, j) for i in range(len(rows)) for j in range(len(rows))
             if i != j and (at[j] >= at[i]).all() and (at[j] > at[i]).any()]
    return float(np.mean([values[j] <= values[i] for i, j in pairs])) if pairs else math.nan


def statistic(rows, name, x, y, toward=None):
    keys = [x] if isinstance(x, str) else list(x)
    rows = rows.sort_values(keys, kind="stable") if set(keys) <= set(rows) else rows
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
    if name == "share_positive":  # e.g. the share of cells where one norm's BLEU beats the other's
        return float((values > 0).mean())
    if name == "cv":
        return float(values.std() / values.mean())  # population sd: the rows are all there is
    if name == "monotone":  # Fig 10: does y only fall toward the harsh corner of the x columns?
        return monotone_share(rows, keys, y, toward)
    if name == "fit_exponent":  # y ~ x^k
        return float(np.polyfit(np.log(rows[x].to_numpy(dtype=float)), np.log(values), 1)[0])
    raise ValueError(f"unknown statistic {name!r}")


def selected(table, where, spec, y, key="select"):
    """The rows a claim reads, its y as numbers: with `equals`, 1 where y equals that label, else 0
    (so `mean` is the share of rows with that label: the converged cells of a grid, say)."""
    rows = select(table, where)
    if rows.empty:
        raise NotMeasured(f"no rows of {spec['source']} match {key} {where}")
    if "equals" in spec:
        return rows.assign(**{y: (rows[y].astype(str) == str(spec["equals"])).astype(float)})
    return rows


def paired_difference(rows, other, x, y, covers=False):
    """y of rows minus y of other at the same x, a column or a list of them (two curves compared point
    by point; Fig 10's grid cells by lr and beta2). With `covers`, other may hold more rows than rows
    (Pre-LN's every cell against Post-LN's converged ones); each row still needs exactly one partner."""
    keys = [x] if isinstance(x, str) else list(x)
    if other.duplicated(keys).any():
        raise ValueError(f"minus: several rows share the same {keys}")
    both = rows.merge(other[keys + [y]], on=keys, suffixes=("", "_minus"))
    if len(both) != len(rows) or (not covers and len(both) != len(other)):
        raise ValueError(f"minus: the rows are not paired one to one on {x} ({len(rows)} vs {len(other)} rows, "
                         f"{len(both)} shared)")
    return both.assign(**{y: both[y] - both[f"{y}_minus"]})


def ratio(a, b):
    """a / b as IEEE floats: x / 0 is +-inf, 0 / 0 NaN (a run scoring BLEU 0 is a number, not a crash)."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


def table_claim(spec, files, tables):
    table = tables[spec["source"]]
    x, y, stat = spec.get("x", "x"), spec.get("y", "mean" if "mean" in table else "measured"), spec["statistic"]
    rows = selected(table, spec.get("select", {}), spec, y)
    what = f"({y} == {spec['equals']})" if "equals" in spec else y
    detail = f"{stat} of {what} over {len(rows)} rows of {spec['source']}"
    if spec.get("minus"):
        rows = paired_difference(rows, selected(table, spec["minus"], spec, y, "minus"), x, y, spec.get("minus_covers"))
        detail += f" minus the rows {spec['minus']}, paired on {x}"
    if "toward" in spec:
        detail += f", ordered toward {dict(zip(x, spec['toward']))}"
    value = statistic(rows, stat, x, y, spec.get("toward"))
    if spec.get("divide_by"):
        denominator = statistic(selected(table, spec["divide_by"], spec, y, "divide_by"), stat, x, y, spec.get("toward"))
        detail += f": {value:.3g} / {denominator:.3g}"
        value = ratio(value, denominator)
    return value, detail


def outcome_claim(spec, files, tables):
    """1 if a failed and b (where given) converged, by the same status Liu et al.'s tables print (a BERT
    run's from its pre-training metrics: Xiong et al.'s Post-LN BERT at lr 3e-4)."""
    expected = {spec["a"]: "failed", **({spec["b"]: "converged"} if spec.get("b") else {})}
    said, held = [], True
    for run, want in expected.items():
        status, _, why = status_and_why(read_metrics(files, run, "valid_loss"), spec.get("converged_below"))
        held &= (status == "converged") == (want == "converged")
        said.append(f"{run} {status} ({why}; must have {want})")
    return float(held), "; ".join(said)


KINDS = {"gap": gap, "level": level, "sooner": sooner, "dominates": dominates, "table": table_claim,
         "outcome": outcome_claim}




def range_of(spec):
    return [spec.get("min"), spec.get("max")]


def range_text(lo, hi, unbounded="(reported only)"):
    if lo is not None and hi is not None:
        return f"in [{lo:g}, {hi:g}]"
    return f">= {lo:g}" if lo is not None else f"<= {hi:g}" if hi is not None else unbounded


def passes(value, spec):
    lo, hi = range_of(spec)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def scaled_spec(claim):
    """The claim as this config measures it at its scale: the paper's, with its `scale` entry's changes."""
    scale = claim.get("scale") or {}
    return {**claim, **{k: v for k, v in scale.items() if k not in CLAIM_SCALE_WORDS}}


def verdict(name, spec, missing, files, tables):
    """(value, result, detail) of one measurement: PASS/FAIL, or why this config cannot take it."""
    if missing:
        return math.nan, "NOT CONFIGURED", missing
    try:
        value, detail = KINDS[spec["kind"]](spec, files, tables)
    except NotMeasured as e:
        return math.nan, "NOT MEASURED", str(e)
    except (KeyError, ValueError) as e:
        raise SystemExit(f"claims.{name}: {e}") from e
    return value, PASS if passes(value, spec) else FAIL, detail


def evaluate(claims, files, tables):
    """One row per claim, grouped by figure, then by name. A claim's `paper_missing`/`scaled_missing`
    (set by the workflow) says which of its runs or tables this config does not define."""
    rows = []
    for name, claim in sorted(claims.items(), key=lambda kv: (kv[1].get("figure", ""), kv[0])):
        scale = claim.get("scale") or {}
        ours, result, detail = verdict(name, claim, claim.get("paper_missing"), files, tables)
        row = {"claim": name, "figure": claim.get("figure", ""), "place": claim.get("place", ""),
               "paper": claim["paper"], "paper_value": claim.get("paper_value", ""),
               "paper_range": range_text(*range_of(claim)), "ours": ours, "paper_result": result, "detail": detail,
               "scaled": scale.get("scaled", scale.get("not_at_this_scale", "")),
               "seed_spread": scale.get("seed_spread", ""), "note": scale.get("note", "")}
        if "not_at_this_scale" in scale:
            row.update(scaled_range="", scaled_ours=math.nan, scaled_result=NOT_AT_THIS_SCALE, scaled_detail="")
        elif set(scale) - set(CLAIM_SCALE_WORDS):
            spec = scaled_spec(claim)
            s_ours, s_result, s_detail = verdict(name, spec, claim.get("scaled_missing"), files, tables)
            row.update(scaled_range=range_text(*range_of(spec)), scaled_ours=s_ours, scaled_result=s_result,
                       scaled_detail=s_detail)
        else:  # checked at the paper's range here too
            row.update(scaled_range=row["paper_range"], scaled_ours=ours, scaled_result=result, scaled_detail="")
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def input_files(files, table_paths):
    """Every file the claims were given, each once (the runs' --metrics and --bleu, the --tables): the
    inputs its provenance lists. The command reads no other."""
    return sorted({*map(Path, files.paths()), *map(Path, table_paths)})


def fmt(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else "inf" if math.isinf(v) else f"{v:.3g}"
    return str(v)


def reproduced(table):
    """(claims PASS on the paper's range, those of them this config declares NOT AT THIS SCALE): a level of
    another scale or a noise-level ordering that lands in the paper's range is a coincidence, not counted."""
    passed = table.paper_result == PASS
    coincidence = passed & (table.scaled_result == NOT_AT_THIS_SCALE)
    return int((passed & ~coincidence).sum()), int(coincidence.sum())


def headline(table):
    """The paper verdict first ("N of M as the paper states"), then the scaled one."""
    counted, coincidences = reproduced(table)
    also = (f"; {coincidences} more land in it where this config says its scale cannot be compared with the paper's "
            f"({NOT_AT_THIS_SCALE}: a level of another scale, a noise-level ordering): coincidences, not counted"
            if coincidences else "")
    lines = [f"**{counted} of {len(table)} claims reproduced as the paper states** (each on the paper's range{also})."]
    other = table[~table.paper_result.isin([PASS, FAIL])]
    if len(other):
        lines.append(f"{len(other)} of them could not be measured in this config (NOT CONFIGURED / NOT MEASURED: "
                     f"a run, epoch or table it lacks): they count as not reproduced.")
    scaled = table[table.scaled_result != NOT_AT_THIS_SCALE]
    rescaled = int(((table.scaled != "") & (table.scaled_result != NOT_AT_THIS_SCALE)).sum())
    if rescaled or len(scaled) < len(table):
        lines.append(f"**At this config's scale: {int((scaled.scaled_result == PASS).sum())} of {len(scaled)} "
                     f"claims pass**, {rescaled} of them on a scaled range or setting (column *why scaled*, with "
                     f"the seed spread it was set from); {len(table) - len(scaled)} have no scaled verdict: "
                     f"{NOT_AT_THIS_SCALE} (why: column *why scaled*).")
    else:
        lines.append("Every claim is checked at the paper's range: this config has no scaled verdicts.")
    return lines


def row_cells(r):
    why = r.scaled + (f" (seed spread {r.seed_spread})" if r.seed_spread else "")
    why += (f" Fails here: {r.note}" if r.note else "")
    return [r.claim, r.place or r.figure, r.paper, fmt(r.paper_value), r.paper_range, fmt(r.ours), f"**{r.paper_result}**",
            r.scaled_range, fmt(r.scaled_ours), f"**{r.scaled_result}**", why.strip(),
            r.detail + (f"; scaled: {r.scaled_detail}" if r.scaled_detail else "")]


CAPPED_LINE = ("CAPPED build (training_cap): every run stopped after a few updates, a smoke test of the "
               "configuration. These verdicts are not results.")
CAPPED = f"**{CAPPED_LINE}**"


TABLE_HEADING = "## Every claim in full"  # the report's caption shows claims.md up to here (workflow/report/claims.rst)


def summary_line(r):
    """'- NAME: ours 8.98 (paper 25.5, range >= 15): FAIL; scaled >= 5: PASS': one short line a claim."""
    paper = f"paper {fmt(r.paper_value)}, " if r.paper_value != "" else ""
    line = f"- {r.claim}: ours {fmt(r.ours) or '-'} ({paper}range {r.paper_range or '-'}): {r.paper_result}"
    if r.scaled_result == NOT_AT_THIS_SCALE:
        return line + f"; scaled: {NOT_AT_THIS_SCALE}"
    if r.scaled:  # judged on another range or measure at this scale
        return line + f"; scaled {r.scaled_range or '-'}: ours {fmt(r.scaled_ours) or '-'}: {r.scaled_result}"
    return line


def by_figure(table):
    """claims.md's first part: per figure, one short line per claim (the table below has the detail)."""
    lines = ["## By figure", ""]
    for place, group in table.groupby("place", sort=False):
        lines += [f"### {place}", "", *map(summary_line, group.itertuples()), ""]
    return lines


def markdown(table, title, capped=False):
    table = table.fillna("")
    lines = [f"# {title}", "", *([CAPPED, ""] if capped else []), *headline(table), "", *by_figure(table),
             TABLE_HEADING, "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for r in table.itertuples():
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row_cells(r)) + " |")
    return "\n".join(lines) + "\n"
