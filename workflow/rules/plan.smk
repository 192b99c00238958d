# The cost plan (lnrepro plan): trainings, updates, FLOPs, GPU-hours and disk of the config's runs
# (checkpoints all kept and after retention: retention.smk's needs), per figure and table. Not in
# `rule all`: `snakemake results/plan.md` before submitting. It reads only the config, so it runs
# without any data or GPU.

rule plan:
    output:
        md="results/plan.md",
        csv="results/plan.csv",
    params:
        spec=P.plan_spec,
        throughput=P.throughput_flags,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/plan.log",
    shell:
        "lnrepro plan --spec {params.spec:q} {params.throughput} --md {output.md:q} --csv {output.csv:q} > {log:q} 2>&1"
