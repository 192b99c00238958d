# The claims table: every claim of the config's `claims:` whose inputs are configured, our number
# against the paper's and the accepted range. Editing a tolerance reruns only this job.
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
