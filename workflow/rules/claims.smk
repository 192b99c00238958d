# The claims table: every claim of the config's `claims:` whose inputs are configured, our number
# against the paper's, the paper's range and ours (a range other than the paper's must say why in
# `scaled`: checked below, before any job). Editing a tolerance reruns only this job.


CLAIM_SOURCES = {  # table claims read these results tables; each exists when its config section does
    "fig3": (("gradient_probe",), "results/figures/fig3.csv"),
    "theory": (("theory",), "results/figures/theory_checks.csv"),
    "fig5": (("bert", "fig5"), "results/figures/fig5.csv"),
    "liu_fig10": (("admin", "lr_grid"), "results/figures/liu_fig10.csv"),
    "liu_fig3": (("admin", "update_norms", "fig3"), "results/figures/liu_fig3.csv"),
    "liu_fig11": (("admin", "update_norms", "fig11"), "results/figures/liu_fig11.csv"),
}
CLAIM_RUN_KEYS = ("a", "b", "c", "d")


def check_claims_config():
    for name, claim in config.get("claims", {}).items():
        if claim["kind"] == "table" and claim["source"] not in CLAIM_SOURCES:
            config_error(f"claims.{name}.source: '{claim['source']}' is not one of {sorted(CLAIM_SOURCES)}")
        own = [claim.get("min"), claim.get("max")]
        if claim.get("paper_range", own) != own and not claim.get("scaled"):  # claims.md marks it as scaled
            config_error(f"claims.{name}: its range [min, max] = {own} differs from its paper_range "
                         f"{claim['paper_range']}; say why in `scaled`")


check_claims_config()


def claims_targets():
    return ["results/claims.md", "results/claims.csv"] if applicable_claims() else []


# a claim whose runs or results table are not configured is absent
def claim_runs(claim):
    return [claim[k] for k in CLAIM_RUN_KEYS if k in claim]


def claim_is_applicable(claim):
    if claim["kind"] == "table":
        section = config
        for key in CLAIM_SOURCES[claim["source"]][0]:
            section = section.get(key) or {}
        return bool(section)
    return all(run in config["runs"] or run in bert_runs() for run in claim_runs(claim))


def applicable_claims():
    return {name: c for name, c in config.get("claims", {}).items() if claim_is_applicable(c)}


def claims_spec(wildcards):
    """Key order does not matter (the table groups rows by figure), so reordering the config reruns nothing."""
    return json.dumps(applicable_claims(), sort_keys=True)


def claims_inputs(wildcards):
    """Only what the applicable claims read: runs' metrics (and BLEU for BLEU claims), results tables."""
    files = set()
    for claim in applicable_claims().values():
        if claim["kind"] == "table":
            files.add(CLAIM_SOURCES[claim["source"]][1])
        for run in claim_runs(claim):
            files.add(f"results/{'pretrain' if run in bert_runs() else 'train'}/{run}/metrics.csv")
            if claim.get("metric") == "bleu":
                files.add(f"results/eval/{run}/bleu.csv")
    return sorted(files)


def claims_tables(wildcards):
    sources = sorted({c["source"] for c in applicable_claims().values() if c["kind"] == "table"})
    tables = " ".join(f"{s}={CLAIM_SOURCES[s][1]}" for s in sources)
    return f"--tables {tables}" if sources else ""


rule check_claims:
    input:
        claims_inputs,
    output:
        csv=report("results/claims.csv", caption="../report/claims.rst", category="Claims"),
        md="results/claims.md",
    params:
        spec=claims_spec,
        tables=claims_tables,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/claims/check_claims.log",
    shell:
        "lnrepro claims --spec {params.spec:q} --runs-dir results {params.tables}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"
