"""The verdicts of a figure's claims, for its report caption.

results/claims.csv is made after the figure (the claims read the figure's numbers), so a figure job
cannot take the verdicts as an input or a param value: they are read when the report renders the
caption. The object is a job's param all the same: Snakemake serialises only builtin param values
for its params rerun trigger, so this one never makes the figure run again."""
import os

from lnrepro import paths

CLAIMS_CSV = paths.claims(".csv")
LAB_CLAIMS_CSV = paths.claims(".csv", lab=True)  # the stability lab's claims, judged apart


class CaptionVerdicts:
    def __init__(self, figures, made, claims_csv=CLAIMS_CSV):
        self.figures = tuple(figures)  # claims.yaml `figure` keys whose claims read this artifact
        self.made = tuple(made)  # the files the claims read of what it shows: claims older than them judged others
        self.claims_csv = claims_csv  # the papers' claims table, or the lab's (results/lab_claims.csv)

    def __repr__(self):
        return f"CaptionVerdicts({', '.join(self.figures)})"

    def __str__(self):
        """reStructuredText: a heading line, then the claims' one-line verdicts as a literal block (the
        papers' notation, such as |W|, is not markup there), or why there are none."""
        claims, md = self.claims_csv, self.claims_csv.removesuffix(".csv") + ".md"
        heading = f"**Verdicts of its claims** (``{claims}``; ``{md}`` has each in full)"
        if not os.path.exists(claims):
            return f"{heading}: not built yet (``snakemake {claims}``)."
        stale = [f for f in self.made if os.path.exists(f) and os.path.getmtime(f) > os.path.getmtime(claims)]
        if stale:
            return (f"{heading}: none shown: ``{claims}`` is older than ``{stale[0]}`` and judged other "
                    f"numbers (``snakemake {claims}`` brings it up to date).")
        lines = self.summary_lines()
        if not lines:
            return f"{heading}: no claim of ``config/claims.yaml`` reads it."
        return "\n".join([f"{heading}:", "", "::", "", *(f"   {line}" for line in lines)])

    def summary_lines(self):
        import pandas as pd  # report time only: parsing the workflow needs no pandas

        from lnrepro.analyses.claims import CAPPED_LINE, summary_line

        table = pd.read_csv(self.claims_csv, keep_default_na=False, na_values=[""]).fillna("")
        rows = table[table.figure.isin(self.figures)]
        capped = [CAPPED_LINE] if rows.capped.astype(str).eq("True").any() else []
        return capped + [summary_line(r) for r in rows.itertuples()]
