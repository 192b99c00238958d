# A sweep's table (config `sweeps:`, lnrepro.pipeline.sweeps): its cells are runs of `runs:` (trained by
# train.smk), and this one target reads each one's metrics: status, loss, seed per cell.


wildcard_constraints:
    sweep=P.names_regex(list(config.get("sweeps") or {})) or "NO_SWEEPS",


rule sweep_table:
    input:
        P.sweep_metrics_files,
    output:
        csv="results/sweeps/{sweep}.csv",
    params:
        spec=P.sweep_spec,
        metrics=P.sweep_metrics_pairs,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/sweeps/{sweep}.log",
    shell:
        "lnrepro sweep-table --spec {params.spec:q} --metrics {params.metrics} --csv {output.csv:q} > {log:q} 2>&1"
