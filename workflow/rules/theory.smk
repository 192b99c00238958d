# Lemmas 2-3, Theorem 1 and the concentration property of Xiong et al. §3.3, measured in the
# paper's simplified setting (W^Q = W^K = 0, Gaussian inputs) on model.py's layers. No data.


THEORY_KEYS = ("d_model", "layers", "seeds", "sequences", "positions", "vocab_size", "device")


def theory_targets():
    return ["results/figures/theory.pdf"] if config.get("theory") else []


def theory_flags(wildcards):
    if not config.get("theory"):
        config_error("the theory checks (results/figures/theory.pdf) need a 'theory' section")
    t = config["theory"]
    flags = cli_flags({k: t[k] for k in THEORY_KEYS if k in t})
    depths = " ".join(str(int(L)) for L in t["depths"])
    return f"{flags} --depths {depths} --title {shlex.quote(t['title'])}"


rule check_theory:
    output:
        pdf="results/figures/theory.pdf",
        png=report("results/figures/theory.png", caption="../report/theory.rst", category="Figures"),
        csv=report("results/figures/theory.csv", caption="../report/table.rst", category="Tables"),
        checks=report("results/figures/theory_checks.csv", caption="../report/table.rst", category="Tables"),
    params:
        flags=theory_flags,
        scale_note=scale_note_flag(),
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/theory/check_theory.log",
    benchmark:
        "benchmarks/theory/check_theory.tsv"
    shell:
        "lnrepro theory {params.flags} --threads {threads} --pdf {output.pdf} --csv {output.csv}"
        " --checks {output.checks} {params.scale_note} > {log} 2>&1"
