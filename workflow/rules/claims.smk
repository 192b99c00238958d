# The claims table: every claim of the config's `claims:` whose inputs are configured, our number
# against the paper's, the paper's range and ours (a range other than the paper's must say why in
# `scaled`: analysis.smk checks it before any job). Editing a tolerance reruns only this job.
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
