# Liu et al. 2020 (Admin): Tables 1-2, Fig 2 (output change), Fig 5 (gradient vanishing at init)
# and Fig 10 (no-warm-up lr x beta2 grid); helpers in admin_common.smk. Training and decoding are
# the ordinary `train`/`evaluate` jobs of the named runs; these rules probe at initialization
# (seconds) and assemble.


rule gradient_vanishing:
    input:
        unpack(vanishing_data),
    output:
        pdf=report("results/figures/liu_fig5.pdf", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_fig5.csv", caption="../report/admin.rst", category="Admin"),
        summary="results/figures/liu_fig5_vanishing.csv",
    params:
        flags=vanishing_flags,
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig5.log",
    benchmark:
        "benchmarks/admin/liu_fig5.tsv"
    shell:
        "lnrepro gradient-vanishing {params.flags} --threads {threads} --pdf {output.pdf} --csv {output.csv}"
        " --summary {output.summary} > {log} 2>&1"


rule output_change:
    input:
        unpack(output_change_data),
    output:
        pdf=report("results/figures/liu_fig2.pdf", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_fig2.csv", caption="../report/admin.rst", category="Admin"),
        fits="results/figures/liu_fig2_fits.csv",
    params:
        flags=output_change_flags,
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig2.log",
    benchmark:
        "benchmarks/admin/liu_fig2.tsv"
    shell:
        "lnrepro output-change {params.flags} --threads {threads} --pdf {output.pdf} --csv {output.csv}"
        " --fits {output.fits} > {log} 2>&1"


# The BLEU of the average of a run's last N epoch checkpoints (the Admin recipes: N = 10); the
# per-epoch bleu.csv and its figures are untouched.
rule evaluate_averaged:
    input:
        unpack(eval_inputs),
    output:
        "results/eval/{run}/bleu_avg{n}.csv",
    wildcard_constraints:
        n="[0-9]+",
    params:
        flags=decode_flags,
        average=average_flag,
        data_dir=run_bin_dir,
    threads: threads("evaluate")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/eval/{run}_avg{n}.log",
    benchmark:
        "benchmarks/eval/{run}_avg{n}.tsv"
    shell:
        "lnrepro evaluate --metrics {input.metrics} --data {params.data_dir} --reference {input.reference}"
        " {params.flags} {params.average} --threads {threads} --out {output} > {log} 2>&1"


rule admin_table1:
    input:
        unpack(table1_inputs),
    output:
        md="results/tables/admin_table1.md",
        csv=report("results/tables/admin_table1.csv", caption="../report/admin.rst", category="Admin"),
    params:
        spec=table1_spec,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/admin_table1.log",
    shell:
        "lnrepro admin-tables --table 1 --spec {params.spec:q} --runs-dir results --vanishing {input.vanishing}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule admin_table2:
    input:
        unpack(table2_inputs),
    output:
        md="results/tables/admin_table2.md",
        csv=report("results/tables/admin_table2.csv", caption="../report/admin.rst", category="Admin"),
    params:
        spec=table2_spec,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/admin_table2.log",
    shell:
        "lnrepro admin-tables --table 2 --spec {params.spec:q} --runs-dir results"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule lr_grid:
    input:
        unpack(lr_grid_inputs),
    output:
        pdf=report("results/figures/liu_fig10.pdf", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_fig10.csv", caption="../report/admin.rst", category="Admin"),
    params:
        spec=lr_grid_spec,
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig10.log",
    shell:
        "lnrepro lr-grid --spec {params.spec:q} --runs-dir results --pdf {output.pdf} --csv {output.csv} > {log} 2>&1"


# Figs 7-8: beta_{i,j} of the named runs at initialization and at their last checkpoint.
rule layer_dependency:
    input:
        unpack(dependency_inputs),
    output:
        pdf=report("results/figures/liu_{ldfig}.pdf", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_{ldfig}.csv", caption="../report/admin.rst", category="Admin"),
    wildcard_constraints:
        ldfig="fig7|fig8",
    params:
        spec=dependency_spec,
        data_dir=dependency_data_dir,
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_{ldfig}.log",
    benchmark:
        "benchmarks/admin/liu_{ldfig}.tsv"
    shell:
        "lnrepro layer-dependency --spec {params.spec:q} --data {params.data_dir} --runs-dir results"
        " --threads {threads} --pdf {output.pdf} --csv {output.csv} > {log} 2>&1"
