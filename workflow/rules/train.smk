# One training job per named run. Resumable state lives in results/train/{run}/checkpoints/,
# outside the declared output, so a failed or killed job keeps it and the retry resumes.


rule train:
    input:
        unpack(train_data),
    output:
        "results/train/{run}/metrics.csv",
    params:
        flags=train_flags,
        data_dir=run_bin_dir,
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/train/{run}.log",
    benchmark:
        "benchmarks/train/{run}.tsv"
    shell:
        "lnrepro train --data {params.data_dir} --out results/train/{wildcards.run} {params.flags}"
        " --threads {threads} > {log} 2>&1"


rule admin_profile:
    input:
        unpack(run_data),
    output:
        "results/admin/{run}/omega.json",
    params:
        flags=model_flags,
        data_dir=run_bin_dir,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/{run}.log",
    shell:
        "lnrepro admin-profile --data {params.data_dir} {params.flags} --omega-out {output} > {log} 2>&1"
