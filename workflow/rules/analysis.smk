# Helpers of the analysis rules (probe.smk: Fig 3; theory.smk; claims.smk). Each section of the
# config is optional: without it, its targets are simply not in `rule all`.
PROBE_KEYS = ("d_model", "ffn_dim", "heads", "dropout", "attn_dropout", "act_dropout", "share_all_embeddings",
              "max_tokens", "label_smoothing", "device")
BATCH_KEYS = ("max_tokens", "label_smoothing", "device")  # what a checkpoint's probe takes from its run
THEORY_KEYS = ("d_model", "layers", "seeds", "sequences", "positions", "vocab_size", "device")
CLAIM_SOURCES = {  # table claims read these results tables; each exists when its config section does
    "fig3": (("gradient_probe",), "results/figures/fig3.csv"),
    "theory": (("theory",), "results/figures/theory_checks.csv"),
    "fig5": (("bert", "fig5"), "results/figures/fig5.csv"),
    "liu_fig10": (("admin", "lr_grid"), "results/figures/liu_fig10.csv"),
}
CLAIM_RUN_KEYS = ("a", "b", "c", "d")


def check_analysis_config():
    probe = config.get("gradient_probe")
    if probe:
        run = probe["run"]
        if run not in config["runs"]:
            config_error(f"gradient_probe.run: '{run}' is not a run ({sorted(config['runs'])})")
        s = run_settings(run)
        if s.get("warmup", 0) <= 1 or s.get("enc_norm") != "post" or s.get("dec_norm") != "post":
            config_error(f"gradient_probe.run: '{run}' must be a Post-LN run with a warm-up (Fig 3: after warm-up)")
    for name, claim in config.get("claims", {}).items():
        if claim["kind"] == "table" and claim["source"] not in CLAIM_SOURCES:
            config_error(f"claims.{name}.source: '{claim['source']}' is not one of {sorted(CLAIM_SOURCES)}")
        own = [claim.get("min"), claim.get("max")]
        if claim.get("paper_range", own) != own and not claim.get("scaled"):  # claims.md marks it as scaled
            config_error(f"claims.{name}: its range [min, max] = {own} differs from its paper_range "
                         f"{claim['paper_range']}; say why in `scaled`")


check_analysis_config()


def analysis_targets():
    targets = []
    if config.get("gradient_probe"):
        targets.append("results/figures/fig3.pdf")
    if config.get("theory"):
        targets.append("results/figures/theory.pdf")
    if applicable_claims():
        targets.extend(["results/claims.md", "results/claims.csv"])
    return targets


# ---- Fig 3: gradient probes ----
def probe_cfg():
    if not config.get("gradient_probe"):
        config_error("Fig 3 (results/figures/fig3.pdf, results/probe/) needs a 'gradient_probe' section")
    return config["gradient_probe"]


def probe_settings():
    """The probed run's settings: corpus, width, batch size, label smoothing; its depth is drawn in (a,b)."""
    return run_settings(probe_cfg()["run"])


def probe_layers():
    """Depths probed at init: the configured model sizes and the probed run's own depth."""
    return sorted(set(probe_cfg()["depths"]) | {probe_settings().get("dec_layers", 6)})


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
    return f"{probe_common_flags()} {cli_flags({k: s[k] for k in PROBE_KEYS if k in s})}"


def warmup_probe_inputs(wildcards):
    return {**probe_data(wildcards), "metrics": f"results/train/{wildcards.run}/metrics.csv"}


def warmup_probe_flags(wildcards):
    """After warm-up: the checkpoint of the first epoch past the run's T_warmup updates."""
    s = run_settings(wildcards.run)
    batches = {k: s[k] for k in BATCH_KEYS if k in s}
    return f"{probe_common_flags()} {cli_flags({**batches, 'after_updates': s['warmup']})}"


def probe_files(kind):
    init = expand("results/probe/init/{norm}_{layers}L/{kind}.csv", norm=["post", "pre"], layers=probe_layers(), kind=kind)
    return [*init, f"results/probe/after_warmup/{probe_cfg()['run']}/{kind}.csv"]


def gradient_figure_inputs(wildcards):
    return {"grads": probe_files("grads"), "concentration": probe_files("concentration")}


def gradient_figure_spec(wildcards):
    p = probe_cfg()
    return json.dumps({"title": p["title"], "panel_layers": probe_settings().get("dec_layers", 6)}, sort_keys=True)


# ---- theory checks ----
def theory_flags(wildcards):
    if not config.get("theory"):
        config_error("the theory checks (results/figures/theory.pdf) need a 'theory' section")
    t = config["theory"]
    flags = cli_flags({k: t[k] for k in THEORY_KEYS if k in t})
    depths = " ".join(str(int(L)) for L in t["depths"])
    return f"{flags} --depths {depths} --title {shlex.quote(t['title'])}"


# ---- claims: a claim whose runs or results table are not configured is absent ----
def claim_runs(claim):
    return [claim[k] for k in CLAIM_RUN_KEYS if k in claim]


def claim_is_applicable(claim):
    if claim["kind"] == "table":
        section = config
        for key in CLAIM_SOURCES[claim["source"]][0]:
            section = section.get(key) or {}
        return bool(section)
    return all(run in config["runs"] or run in bert_runs() for run in claim_runs(claim))


def applicable_claims():
    return {name: c for name, c in config.get("claims", {}).items() if claim_is_applicable(c)}


def claims_spec(wildcards):
    """Key order does not matter (the table groups rows by figure), so reordering the config reruns nothing."""
    return json.dumps(applicable_claims(), sort_keys=True)


def claims_inputs(wildcards):
    """Only what the applicable claims read: runs' metrics (and BLEU for BLEU claims), results tables."""
    files = set()
    for claim in applicable_claims().values():
        if claim["kind"] == "table":
            files.add(CLAIM_SOURCES[claim["source"]][1])
        for run in claim_runs(claim):
            files.add(f"results/{'pretrain' if run in bert_runs() else 'train'}/{run}/metrics.csv")
            if claim.get("metric") == "bleu":
                files.add(f"results/eval/{run}/bleu.csv")
    return sorted(files)


def claims_tables(wildcards):
    sources = sorted({c["source"] for c in applicable_claims().values() if c["kind"] == "table"})
    tables = " ".join(f"{s}={CLAIM_SOURCES[s][1]}" for s in sources)
    return f"--tables {tables}" if sources else ""
