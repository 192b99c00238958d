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
