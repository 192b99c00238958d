# Decode every epoch checkpoint of a run and score BLEU. Its own rule: a new beam size reruns
# decoding and figures, never training.


rule evaluate:
    input:
        unpack(eval_inputs),
    output:
        "results/eval/{run}/bleu.csv",
    params:
        flags=decode_flags,
        data_dir=run_bin_dir,
    threads: threads("evaluate")
    resources:
        mem_mb=mem_mb("evaluate"),
        runtime=runtime("evaluate"),
        gpu=eval_gpu,
        gpu_model=eval_gpu_model,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/eval/{run}.log",
    benchmark:
        "benchmarks/eval/{run}.tsv"
    shell:
        "lnrepro evaluate --metrics {input.metrics} --data {params.data_dir} --reference {input.reference}"
        " {params.flags} --threads {threads} --out {output} > {log} 2>&1"
