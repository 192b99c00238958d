# Lemmas 2-3, Theorem 1 and the concentration property of Xiong et al. §3.3, measured in the
# paper's simplified setting (W^Q = W^K = 0, Gaussian inputs) on model.py's layers. No data.


rule check_theory:
    output:
        pdf=paths.figure("theory"),
        png=report(paths.figure("theory", ".png"), caption="../report/theory.rst", category="Figures"),
        csv=report(paths.figure("theory", ".csv"), caption="../report/table.rst", category="Tables"),
        checks=report(paths.figure("theory_checks", ".csv"), caption="../report/table.rst", category="Tables"),
    params:
        caption=P.report_caption("theory"),  # its config text, shown literally in the report
        verdicts=P.claims.caption_verdicts("§3.3"),  # read when the report renders
        flags=P.theory.theory_flags,
        scale_note=P.scale_note.flag("theory"),
    threads: P.resources.threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/theory/check_theory.log",
    benchmark:
        "benchmarks/theory/check_theory.tsv"
    shell:
        "lnrepro theory {params.flags} --threads {threads} --pdf {output.pdf:q} --csv {output.csv:q}"
        " --checks {output.checks:q} {params.scale_note} > {log:q} 2>&1"
