# The claims table: every claim of config/claims.yaml (the papers' claims, one file for every config),
# judged twice: on the paper's range (the paper verdict) and at this config's scale (its `claims:`
# entries: another range or setting and why). A claim whose runs or results table this config does
# not define is a row that says so, never left out. Editing a range reruns only this job.


rule check_claims:
    input:
        P.claims.claims_inputs,
    output:
        csv=report(paths.claims(".csv"), caption="../report/claims.rst", category="Claims"),
        md=paths.claims(".md"),
        provenance=report(paths.claims("_provenance.csv"), caption="../report/provenance.rst", category="Claims"),
    params:
        spec=P.claims.claims_spec,
        files=P.claims.claims_pairs,  # --metrics/--bleu RUN=PATH, --tables NAME=CSV: the files of its input
        capped=lambda wildcards: "--capped" if P.runs.training_cap() else "",
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/claims/check_claims.log",
    shell:
        "lnrepro claims --spec {params.spec:q} {params.files} {params.capped}"
        " --csv {output.csv:q} --md {output.md:q} --provenance-csv {output.provenance:q} > {log:q} 2>&1"


# The stability lab's claims (config/claims.yaml's `lab` and `lab_fn` figures): judged the same way, on
# the lab's sweep tables, by their own target, so the papers' claims table never waits for the lab; and
# its claims matrix (each claim measured for every scheme of its table: lnrepro.analyses.claims_matrix).
rule check_lab_claims:
    input:
        P.claims.lab_claims_inputs,
    output:
        csv=report(paths.claims(".csv", lab=True), caption="../report/lab_claims.rst", category="Lab"),
        md=paths.claims(".md", lab=True),
        matrix=report(paths.claims("_matrix.csv", lab=True), caption="../report/lab_claims_matrix.rst", category="Lab"),
        provenance=paths.claims("_provenance.csv", lab=True),
    params:
        spec=P.claims.lab_claims_spec,
        files=P.claims.lab_claims_pairs,  # --metrics/--bleu RUN=PATH, --tables NAME=CSV: the files of its input
        capped=lambda wildcards: "--capped" if P.runs.training_cap() else "",
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/claims/check_lab_claims.log",
    shell:
        "lnrepro claims --spec {params.spec:q} {params.files} {params.capped}"
        " --title 'Claims of the stability lab (later normalization schemes), checked on our numbers'"
        " --csv {output.csv:q} --md {output.md:q} --matrix-csv {output.matrix:q} --provenance-csv {output.provenance:q}"
        " > {log:q} 2>&1"
