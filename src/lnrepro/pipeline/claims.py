"""What claims.smk's rules ask of the config (parse time; no torch)."""
import functools
import os

import jsonschema
import yaml

from lnrepro import paths
from lnrepro.pipeline.caption_verdicts import CLAIMS_CSV, LAB_CLAIMS_CSV, CaptionVerdicts
from lnrepro.pipeline.config_text import duplicate_key_error
from lnrepro.pipeline.products import CLAIM_SOURCES, LAB_SOURCES
from lnrepro.pipeline.run_pairs import flag_pairs
from lnrepro.pipeline.spec_argument import spec_argument
from lnrepro.settings import CLAIM_SCALE_WORDS


class Claims:
    CLAIMS_FILE = "config/claims.yaml"  # relative to the Snakefile's folder
    CLAIM_RUN_KEYS = ("a", "b", "c", "d")

    def __init__(self, config, workflow, checks, errors, runs, sections):
        self.config = config
        self.workflow = workflow
        self.checks = checks
        self.errors = errors
        self.runs = runs
        self.sections = sections

    @functools.cached_property
    def claims_file(self):
        return self.load_claims_file()

    @property
    def paper_claims(self):
        """config/claims.yaml, once this config's `claims:` entries are checked against it."""
        self.sections.checked("claims")
        return self.claims_file

    def load_claims_file(self):
        """The papers' claims, validated against the schema's claims_file (an error names the key)."""
        path = os.path.join(self.workflow.basedir, self.CLAIMS_FILE)
        twice = duplicate_key_error(path, self.CLAIMS_FILE)
        if twice:
            self.errors.stop(twice)
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
        defs = self.checks.schema_defs()
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator({"$defs": defs, **defs["claims_file"]}).iter_errors(data))
        if error is not None:
            msg, detail = self.checks.schema_error_lines(error)
            self.errors.stop(f"{self.CLAIMS_FILE}: {msg}", detail)
        for name, claim in data["claims"].items():
            if claim.get("figure") not in data["places"]:
                self.errors.stop(f"{self.CLAIMS_FILE}: claims.{name}.figure: '{claim.get('figure')}' has no entry in places"
                                 f"{self.errors.did_you_mean(claim.get('figure'), data['places'])}")
        return data

    def check_claims_config(self):
        claims = self.claims_file["claims"]
        for name, scale in (self.config.get("claims") or {}).items():
            if name not in claims:
                self.errors.config_error(f"claims.{name}: not a claim of {self.CLAIMS_FILE}{self.errors.did_you_mean(name, list(claims))}")
            changes = sorted(set(scale) - set(CLAIM_SCALE_WORDS))
            if "not_at_this_scale" in scale and ("scaled" in scale or changes):
                self.errors.config_error(f"claims.{name}: not_at_this_scale gives no scaled verdict; it takes no `scaled` range or setting")
            if changes and "scaled" not in scale:  # claims.md shows why beside the scaled verdict
                self.errors.config_error(f"claims.{name}: {', '.join(changes)} differ from {self.CLAIMS_FILE}'s claim; say why in `scaled`")
            if "scaled" in scale and not changes:
                self.errors.config_error(f"claims.{name}: `scaled` says why, but nothing differs from {self.CLAIMS_FILE}'s claim")
        for name, claim in claims.items():
            if claim["kind"] == "table" and claim["source"] not in CLAIM_SOURCES:
                self.errors.stop(f"{self.CLAIMS_FILE}: claims.{name}.source: '{claim['source']}' is not one of "
                                 f"{', '.join(sorted(CLAIM_SOURCES))}{self.errors.did_you_mean(claim['source'], CLAIM_SOURCES)}")

    def caption_verdicts(self, *figures, lab=False):
        """A report caption's param: the verdicts of the claims whose `figure` is one of these (a key may
        name a wildcard: "{fig}"), read from results/claims.csv (lab: results/lab_claims.csv) when the
        report renders."""
        for figure in figures:
            if "{" not in figure and figure not in self.claims_file["places"]:
                self.errors.stop(f"caption_verdicts: '{figure}' is no figure of {self.CLAIMS_FILE}'s places"
                                 f"{self.errors.did_you_mean(figure, self.claims_file['places'])}")

        def verdicts(wildcards, input, output):
            # stale where a file the claims judged is newer than them: those of the artifact's inputs and
            # outputs (fig3.csv) the claims table reads. Not its other inputs (a run's BLEU no claim reads
            # may be made after the table), nor its PDF or PNG, which a redrawn title rewrites
            judged = set(self.claims_inputs(wildcards, lab))
            numbers = [f for f in (*input, *output) if f in judged]
            return CaptionVerdicts([f.format(**dict(wildcards.items())) for f in figures], numbers,
                                   LAB_CLAIMS_CSV if lab else CLAIMS_CSV)
        return verdicts

    def claim_runs(self, claim):
        return [claim[k] for k in self.CLAIM_RUN_KEYS if k in claim]

    def source_configured(self, source):
        section = self.config
        for key in CLAIM_SOURCES[source][0]:
            section = section.get(key) or {}
        return bool(section)

    def missing_inputs(self, claim):
        """What of the claim's inputs this config does not define, in words ('' when it has them all)."""
        if claim["kind"] == "table":
            if self.source_configured(claim["source"]):
                return ""
            return f"this config has no {'.'.join(CLAIM_SOURCES[claim['source']][0])} section (table {claim['source']})"
        missing = [run for run in self.claim_runs(claim) if run not in self.config["runs"] and run not in self.runs.bert_runs()]
        return f"this config has no run {', '.join(missing)}" if missing else ""

    def scaled_claim(self, name):
        scale = (self.config.get("claims") or {}).get(name) or {}
        return {**self.paper_claims["claims"][name], **{k: v for k, v in scale.items() if k not in CLAIM_SCALE_WORDS}}

    def is_lab_claim(self, claim):
        return claim["kind"] == "table" and claim["source"] in LAB_SOURCES

    @functools.cache  # the config is fixed once parsed: spec, inputs, tables and targets share one pass
    def measured_claims(self, lab=False):
        """Each claim with this config's scale, where the paper says it, and what it cannot measure: the
        papers' claims, or (lab) the stability lab's."""
        scales = self.config.get("claims") or {}
        claims = {}
        for name, claim in self.paper_claims["claims"].items():
            if self.is_lab_claim(claim) != lab:
                continue
            scaled = self.scaled_claim(name)
            claims[name] = {**claim, "place": self.paper_claims["places"][claim["figure"]], "scale": scales.get(name, {}),
                            "paper_missing": self.missing_inputs(claim), "scaled_missing": self.missing_inputs(scaled),
                            **self.outcome_threshold(claim)}
        return claims

    def outcome_threshold(self, claim):
        """An outcome claim judges a run's status as Liu et al.'s tables print it: by admin.converged_below."""
        below = (self.config.get("admin") or {}).get("converged_below")
        return {"converged_below": below} if claim["kind"] == "outcome" and below is not None else {}

    def applicable_claims(self):
        """The claims this config can measure at least one way (a config of other experiments has none)."""
        return {name: c for name, c in self.measured_claims().items() if not (c["paper_missing"] and c["scaled_missing"])}

    def claims_spec(self, wildcards, lab=False):
        """Key order does not matter (the table groups rows by figure), so reordering the config reruns nothing."""
        return spec_argument(self.measured_claims(lab))

    def lab_claims_spec(self, wildcards):
        return self.claims_spec(wildcards, lab=True)

    @functools.cache  # one pass for the rule's input, its pairs and tables and every caption's verdicts
    def claims_files(self, lab=False):
        """{flag: {name: path}} check_claims (lab: check_lab_claims) reads, only where this config defines
        it: each run's metrics (a BERT run's pre-training ones), BLEU where a claim compares BLEU, by run;
        the results tables, by source. Its input and its command's pairs, both."""
        files = {"metrics": {}, "bleu": {}, "tables": {}}
        for name, claim in self.measured_claims(lab).items():
            for spec, missing in ((claim, claim["paper_missing"]), (self.scaled_claim(name), claim["scaled_missing"])):
                if missing:
                    continue
                if spec["kind"] == "table":
                    files["tables"][spec["source"]] = CLAIM_SOURCES[spec["source"]][1]
                for run in self.claim_runs(spec):
                    files["metrics"][run] = paths.metrics(run, "pretrain" if run in self.runs.bert_runs() else "train")
                    if spec.get("metric") == "bleu":
                        files["bleu"][run] = paths.bleu(run)
        return {flag: dict(sorted(pairs.items())) for flag, pairs in files.items()}

    def claims_inputs(self, wildcards, lab=False):
        """Only what the claims read where this config defines it: runs' metrics (and BLEU), results tables."""
        return sorted({path for pairs in self.claims_files(lab).values() for path in pairs.values()})

    def claims_pairs(self, wildcards, lab=False):
        """--metrics RUN=PATH ... --bleu RUN=PATH ... --tables NAME=CSV ...: every file of its input."""
        files = self.claims_files(lab)
        runs = flag_pairs({"metrics": files["metrics"], "bleu": files["bleu"]})
        return " ".join(filter(None, (runs, self.claims_tables(wildcards, lab))))

    def lab_claims_pairs(self, wildcards):
        return self.claims_pairs(wildcards, lab=True)

    def lab_claims_inputs(self, wildcards):
        return self.claims_inputs(wildcards, lab=True)

    def claims_tables(self, wildcards, lab=False):
        """NAME=CSV of each results table the claims read where this config defines it."""
        tables = " ".join(f"{name}={path}" for name, path in self.claims_files(lab)["tables"].items())
        return f"--tables {tables}" if tables else ""

    def lab_claims_tables(self, wildcards):
        return self.claims_tables(wildcards, lab=True)
