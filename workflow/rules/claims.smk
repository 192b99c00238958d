# The claims table: every claim of config/claims.yaml (the papers' claims, one file for every config),
# judged twice: on the paper's range (the paper verdict) and at this config's scale (its `claims:`
# entries: another range or setting and why). A claim whose runs or results table this config does
# not define is a row that says so, never left out. Editing a range reruns only this job.

import functools

import yaml

CLAIMS_FILE = "config/claims.yaml"  # relative to the Snakefile's folder
CLAIM_SOURCES = {  # table claims read these results tables; each exists when its config section does
    "fig3": (("gradient_probe",), "results/figures/fig3.csv"),
    "theory": (("theory",), "results/figures/theory_checks.csv"),
    "fig5": (("bert", "fig5"), "results/figures/fig5.csv"),
    "liu_fig10": (("admin", "lr_grid"), "results/figures/liu_fig10.csv"),
    "liu_fig3": (("admin", "update_norms", "fig3"), "results/figures/liu_fig3.csv"),
    "liu_fig11": (("admin", "update_norms", "fig11"), "results/figures/liu_fig11.csv"),
    "liu_table2": (("admin", "table2"), "results/tables/admin_table2.csv"),
    "liu_table1": (("admin", "table1"), "results/tables/admin_table1.csv"),
    "liu_fig5_vanishing": (("admin", "gradients"), "results/figures/liu_fig5_vanishing.csv"),
    "liu_fig2": (("admin", "output_change"), "results/figures/liu_fig2.csv"),
    "liu_fig2_fits": (("admin", "output_change"), "results/figures/liu_fig2_fits.csv"),
    "liu_fig7": (("admin", "layer_dependency", "fig7"), "results/figures/liu_fig7.csv"),
    "liu_fig8": (("admin", "layer_dependency", "fig8"), "results/figures/liu_fig8.csv"),
}
CLAIM_RUN_KEYS = ("a", "b", "c", "d")


def load_claims_file():
    """The papers' claims, validated against the schema's claims_file (an error names the key)."""
    path = os.path.join(workflow.basedir, CLAIMS_FILE)
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    with open(os.path.join(workflow.basedir, SCHEMA), encoding="utf-8") as f:
        defs = yaml.safe_load(f)["$defs"]
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator({"$defs": defs, **defs["claims_file"]}).iter_errors(data))
    if error is not None:
        msg, detail = schema_error_lines(error)
        stop(f"{CLAIMS_FILE}: {msg}", detail)
    for name, claim in data["claims"].items():
        if claim.get("figure") not in data["places"]:
            stop(f"{CLAIMS_FILE}: claims.{name}.figure: '{claim.get('figure')}' has no entry in places"
                 f"{did_you_mean(claim.get('figure'), data['places'])}")
    return data


PAPER_CLAIMS = load_claims_file()


def check_claims_config():
    claims = PAPER_CLAIMS["claims"]
    for name, scale in (config.get("claims") or {}).items():
        if name not in claims:
            config_error(f"claims.{name}: not a claim of {CLAIMS_FILE}{did_you_mean(name, list(claims))}")
        changes = sorted(set(scale) - set(CLAIM_SCALE_WORDS))
        if "not_at_this_scale" in scale and ("scaled" in scale or changes):
            config_error(f"claims.{name}: not_at_this_scale gives no scaled verdict; it takes no `scaled` range or setting")
        if changes and "scaled" not in scale:  # claims.md shows why beside the scaled verdict
            config_error(f"claims.{name}: {', '.join(changes)} differ from {CLAIMS_FILE}'s claim; say why in `scaled`")
        if "scaled" in scale and not changes:
            config_error(f"claims.{name}: `scaled` says why, but nothing differs from {CLAIMS_FILE}'s claim")
    for name, claim in claims.items():
        if claim["kind"] == "table" and claim["source"] not in CLAIM_SOURCES:
            stop(f"{CLAIMS_FILE}: claims.{name}.source: '{claim['source']}' is not one of "
                 f"{', '.join(sorted(CLAIM_SOURCES))}{did_you_mean(claim['source'], CLAIM_SOURCES)}")


check_claims_config()


def claims_targets():
    return ["results/claims.md", "results/claims.csv"] if applicable_claims() else []


def claim_runs(claim):
    return [claim[k] for k in CLAIM_RUN_KEYS if k in claim]


def source_configured(source):
    section = config
    for key in CLAIM_SOURCES[source][0]:
        section = section.get(key) or {}
    return bool(section)


def missing_inputs(claim):
    """What of the claim's inputs this config does not define, in words ('' when it has them all)."""
    if claim["kind"] == "table":
        if source_configured(claim["source"]):
            return ""
        return f"this config has no {'.'.join(CLAIM_SOURCES[claim['source']][0])} section (table {claim['source']})"
    missing = [run for run in claim_runs(claim) if run not in config["runs"] and run not in bert_runs()]
    return f"this config has no run {', '.join(missing)}" if missing else ""


def scaled_claim(name):
    scale = (config.get("claims") or {}).get(name) or {}
    return {**PAPER_CLAIMS["claims"][name], **{k: v for k, v in scale.items() if k not in CLAIM_SCALE_WORDS}}


@functools.cache  # the config is fixed once parsed: spec, inputs, tables and targets share one pass
def measured_claims():
    """Each claim with this config's scale, where the paper says it, and what it cannot measure."""
    scales = config.get("claims") or {}
    claims = {}
    for name, claim in PAPER_CLAIMS["claims"].items():
        scaled = scaled_claim(name)
        claims[name] = {**claim, "place": PAPER_CLAIMS["places"][claim["figure"]], "scale": scales.get(name, {}),
                        "paper_missing": missing_inputs(claim), "scaled_missing": missing_inputs(scaled)}
    return claims


def applicable_claims():
    """The claims this config can measure at least one way (a config of other experiments has none)."""
    return {name: c for name, c in measured_claims().items() if not (c["paper_missing"] and c["scaled_missing"])}


def claims_spec(wildcards):
    """Key order does not matter (the table groups rows by figure), so reordering the config reruns nothing."""
    return json.dumps(measured_claims(), sort_keys=True)


def claims_inputs(wildcards):
    """Only what the claims read where this config defines it: runs' metrics (and BLEU), results tables."""
    files = set()
    for name, claim in measured_claims().items():
        for spec, missing in ((claim, claim["paper_missing"]), (scaled_claim(name), claim["scaled_missing"])):
            if missing:
                continue
            if spec["kind"] == "table":
                files.add(CLAIM_SOURCES[spec["source"]][1])
            for run in claim_runs(spec):
                files.add(f"results/{'pretrain' if run in bert_runs() else 'train'}/{run}/metrics.csv")
                if spec.get("metric") == "bleu":
                    files.add(f"results/eval/{run}/bleu.csv")
    return sorted(files)


def claims_tables(wildcards):
    """NAME=CSV of each results table the claims read where this config defines it."""
    inputs = set(claims_inputs(wildcards))
    tables = " ".join(f"{name}={path}" for name, (_, path) in sorted(CLAIM_SOURCES.items()) if path in inputs)
    return f"--tables {tables}" if tables else ""


rule check_claims:
    input:
        claims_inputs,
    output:
        csv=report("results/claims.csv", caption="../report/claims.rst", category="Claims"),
        md="results/claims.md",
        provenance=report("results/claims_provenance.csv", caption="../report/provenance.rst", category="Claims"),
    params:
        spec=claims_spec,
        tables=claims_tables,
        capped=lambda wildcards: "--capped" if training_cap() else "",
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/claims/check_claims.log",
    shell:
        "lnrepro claims --spec {params.spec:q} --runs-dir results {params.tables} {params.capped}"
        " --csv {output.csv} --md {output.md} --provenance-csv {output.provenance} > {log} 2>&1"
