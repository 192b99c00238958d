# The cost plan (lnrepro plan): trainings, updates, FLOPs, GPU-hours (training, fine-tuning, decoding),
# CPU core-hours (probes) and disk of the config's runs (checkpoints all kept and after retention:
# retention.smk's needs), per figure and table, and every job's estimated wall time with the runtime it
# asks SLURM for (plan_jobs.csv: resources.smk asks for the same, computed at parse time by the same
# functions). Not in `rule all`: `snakemake results/plan.md` before submitting. It reads only the config,
# so it runs without any data or GPU.

rule plan:
    output:
        md=paths.plan(".md"),
        csv=paths.plan(".csv"),
        jobs=paths.plan("_jobs.csv"),
    params:
        spec=P.plan.plan_spec,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/plan.log",
    shell:
        "lnrepro plan --spec {params.spec:q} --md {output.md:q} --csv {output.csv:q} --jobs-csv {output.jobs:q} > {log:q} 2>&1"
