# Decode every epoch checkpoint of a run and score BLEU. Its own rule: a new beam size reruns
# decoding and figures, never training. It reads the checkpoints its metrics.csv lists and declares
# none (retention deletes most of them after it: lnrepro.pipeline.checkpoint_reads says why).


rule evaluate:
    input:
        unpack(P.evaluate.eval_inputs),
    output:
        paths.bleu("{run}"),
    params:
        flags=P.evaluate.decode_flags,
        data_dir=P.runs.run_bin_dir,
    threads: P.resources.threads("evaluate")
    resources:
        mem_mb=P.resources.mem_mb("evaluate"),
        runtime=P.plan.runtime("evaluate", "evaluate"),
        gpu=P.resources.eval_gpu,
        gpu_model=P.resources.eval_gpu_model,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/eval/{run}.log",
    benchmark:
        "benchmarks/eval/{run}.tsv"
    shell:
        "lnrepro evaluate --metrics {input.metrics:q} --data {params.data_dir:q} --reference {input.reference:q}"
        " {params.flags} --threads {threads} --out {output:q} > {log:q} 2>&1"


# The BLEU of the average of a run's last N epoch checkpoints (the Admin recipes: N = 10), declared
# as its inputs; the per-epoch bleu.csv and its figures are untouched.
rule evaluate_averaged:
    input:
        unpack(P.evaluate.eval_inputs),
        checkpoints=P.checkpoint_reads.last_checkpoints,
    output:
        paths.bleu("{run}", "{n}"),
    wildcard_constraints:
        n="[0-9]+",
    params:
        flags=P.evaluate.decode_flags,
        average=P.evaluate.average_flag,
        data_dir=P.runs.run_bin_dir,
    threads: P.resources.threads("evaluate")
    resources:  # evaluate's: it decodes on the run's device (decode_flags) as evaluate does
        mem_mb=P.resources.mem_mb("evaluate"),
        runtime=P.plan.runtime("evaluate", "evaluate_averaged"),
        gpu=P.resources.eval_gpu,
        gpu_model=P.resources.eval_gpu_model,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/eval/{run}_avg{n}.log",
    benchmark:
        "benchmarks/eval/{run}_avg{n}.tsv"
    shell:
        "lnrepro evaluate --metrics {input.metrics:q} --data {params.data_dir:q} --reference {input.reference:q}"
        " {params.flags} {params.average} --threads {threads} --out {output:q} > {log:q} 2>&1"
