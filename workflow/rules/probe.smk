# Fig 3 (Xiong et al. §3.4): FFN gradient norms of N-N models at initialization, one probe job per
# norm placement and depth (no training), and of the Post-LN run's checkpoint after its warm-up.
# The section is optional: without it, Fig 3 is simply not in `rule all`.


def probed_warmup(run):
    """The run's T_warmup as it trains: the trainer's default where it sets none."""
    return run_settings(run).get("warmup", TRAIN_DEFAULTS["warmup"])


def check_probe_config():
    probe = config.get("gradient_probe")
    if probe:
        run = probe["run"]
        if run not in config["runs"]:
            unknown_name("gradient_probe.run", run, "a run", "runs", config["runs"])
        if probed_warmup(run) <= 1 or run_norms(run) != ("post", "post"):  # as it trains: the trainer's defaults too
            config_error(f"gradient_probe.run: '{run}' must be a Post-LN run with a warm-up (Fig 3: after warm-up)")


check_probe_config()


def probe_targets():
    return ["results/figures/fig3.pdf"] if config.get("gradient_probe") else []


def probe_cfg():
    if not config.get("gradient_probe"):
        config_error("Fig 3 (results/figures/fig3.pdf, results/probe/) needs a 'gradient_probe' section")
    return config["gradient_probe"]


def probe_settings():
    """The probed run's settings: corpus, width, batch size, label smoothing; its depth is drawn in (a,b)."""
    return run_settings(probe_cfg()["run"])


def probed_depth():
    """The probed run's decoder depth: probed at init beside the configured depths, and drawn in Fig 3."""
    return probe_settings().get("dec_layers", TRAIN_DEFAULTS["dec_layers"])


def probe_layers():
    """Depths probed at init: the configured model sizes and the probed run's own depth."""
    return sorted(set(probe_cfg()["depths"]) | {probed_depth()})


def probe_data(wildcards):
    files = bin_files(probe_settings()["corpus"])
    return {"dict": files["dict"], "train": files["train"]}


def probe_bin_dir(wildcards):
    return f"{bpe_dir(probe_settings()['corpus'])}/bin"


def probe_common_flags():
    p = probe_cfg()
    return cli_flags({"seeds": p.get("seeds", 10), "batches": p.get("batches", 4)})


def probe_flags(wildcards):
    """At init: the probed run's width and batches; its depth and norm come from the wildcards."""
    s = probe_settings()
    return f"{probe_common_flags()} {picked_flags(s, PROBE_KEYS)}"


def warmup_probe_inputs(wildcards):
    return {**probe_data(wildcards), "metrics": f"results/train/{wildcards.run}/metrics.csv"}


def warmup_probe_flags(wildcards):
    """After warm-up: the checkpoint of the first epoch past the run's T_warmup updates."""
    s = run_settings(wildcards.run)
    batches = {k: s[k] for k in WARMUP_PROBE_KEYS if k in s}
    return f"{probe_common_flags()} {cli_flags({**batches, 'after_updates': probed_warmup(wildcards.run)})}"


def probe_files(kind):
    init = expand("results/probe/init/{norm}_{layers}L/{kind}.csv", norm=["post", "pre"], layers=probe_layers(), kind=kind)
    return [*init, f"results/probe/after_warmup/{probe_cfg()['run']}/{kind}.csv"]


def gradient_figure_inputs(wildcards):
    return {"grads": probe_files("grads"), "concentration": probe_files("concentration")}


def gradient_figure_spec(wildcards):
    p = probe_cfg()
    return json.dumps({"title": p["title"], "panel_layers": probed_depth()}, sort_keys=True)


rule probe_gradients:
    input:
        unpack(probe_data),
    output:
        grads="results/probe/init/{norm}_{layers}L/grads.csv",
        concentration="results/probe/init/{norm}_{layers}L/concentration.csv",
    wildcard_constraints:
        norm="post|pre",
        layers="[0-9]+",
    params:
        flags=probe_flags,
        data_dir=probe_bin_dir,
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/probe/init/{norm}_{layers}L.log",
    benchmark:
        "benchmarks/probe/init/{norm}_{layers}L.tsv"
    shell:
        "lnrepro probe-gradients --data {params.data_dir} --norm {wildcards.norm} --layers {wildcards.layers}"
        " {params.flags} --threads {threads} --grads-out {output.grads}"
        " --concentration-out {output.concentration} > {log} 2>&1"


rule probe_after_warmup:
    input:
        unpack(warmup_probe_inputs),
    output:
        grads="results/probe/after_warmup/{run}/grads.csv",
        concentration="results/probe/after_warmup/{run}/concentration.csv",
    params:
        flags=warmup_probe_flags,
        data_dir=probe_bin_dir,
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/probe/after_warmup/{run}.log",
    benchmark:
        "benchmarks/probe/after_warmup/{run}.tsv"
    shell:
        "lnrepro probe-gradients --data {params.data_dir} --checkpoint-metrics {input.metrics}"
        " {params.flags} --threads {threads} --grads-out {output.grads}"
        " --concentration-out {output.concentration} > {log} 2>&1"


rule plot_gradient_norms:
    input:
        unpack(gradient_figure_inputs),
    output:
        pdf="results/figures/fig3.pdf",
        png=report("results/figures/fig3.png", caption="../report/fig3.rst", category="Figures"),
        csv=report("results/figures/fig3.csv", caption="../report/table.rst", category="Tables"),
        summary="results/figures/fig3_summary.csv",
    params:
        spec=gradient_figure_spec,
        scale_note=scale_note_flag(),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/figures/fig3.log",
    shell:
        "lnrepro plot-gradients --spec {params.spec:q} --grads {input.grads} --concentration {input.concentration}"
        " --pdf {output.pdf} --csv {output.csv} --summary {output.summary} {params.scale_note} > {log} 2>&1"
