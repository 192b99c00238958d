# Bounded disk (`checkpoints: {keep: needed}`): once every step that reads a run's epoch checkpoints
# has finished, delete those no configured step reads again (lnrepro retain; the epochs:
# lnrepro.retention.needed_epochs, also what the cost plan counts). Which steps read a run's
# checkpoints (its consumers, whose outputs the prune job waits for) and what each needs:
# lnrepro.pipeline.retention.
# Deleting a run's files takes milliseconds: beside Snakemake, not a queued cluster job.
localrules:
    retain_checkpoints,


rule retain_checkpoints:
    input:
        unpack(P.retention.retain_inputs),
    output:
        paths.retained("{run}", "{stage}"),
    wildcard_constraints:
        stage="train|pretrain",
    params:
        needs=P.retention.retain_needs,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/retain/{stage}/{run}.log",
    shell:
        "lnrepro retain --metrics {input.metrics:q} --needs {params.needs:q} --manifest {output:q} > {log:q} 2>&1"
