# What each job asks for; common.smk includes this file, so every rule file has it. A job's
# `threads:` and, for a cluster, its `resources:`, from the config's `resources` section and
# each run's `device`, `nodes` and `gpus`; a train, pretrain, evaluate, evaluate_averaged or finetune
# job's `runtime`, where the config sets none, is the cost plan's for that job (lnrepro.pipeline.plan:
# planned_job, from the config alone; results/plan_jobs.csv). The SLURM executor (--profile slurm) turns them into
# sbatch options (gpu -> --gpus, nodes, tasks, mem_mb -> --mem, runtime -> --time). A local run
# counts only threads, and `gpu` where a profile sets a limit (profiles/local: resources gpu=1).
# Every value is None unless it applies, and Snakemake leaves a None resource out.

# Run beside Snakemake instead of queueing a cluster job: single-pass line filters and plots
# (seconds even on WMT14; queueing costs more) and downloads (compute nodes often have no network).
localrules:
    plot_figure,
    download_archive,
    check_counts,
    clean_corpus,
    lowercase,
    split_valid,
    copy_tokenized,


