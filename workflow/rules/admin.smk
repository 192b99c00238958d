# Liu et al. 2020 (Admin): Tables 1-2, Fig 2 (output change), Figs 3 and 11 (relative gradient and
# update norms), Fig 5 (gradient vanishing at init), Figs 7-8 (layer dependency) and Fig 10
# (no-warm-up lr x beta2 grid). Training and decoding are the
# ordinary `train`/`evaluate`/`evaluate_averaged` jobs of the named runs; these rules probe at
# initialization (seconds) and assemble. Everything comes from the config's optional `admin:`
# section; without a subsection its target is simply not in `rule all`.


ADMIN_TARGETS = {  # subsection -> what it draws
    "gradients": ["results/figures/liu_fig5.pdf"],
    "output_change": ["results/figures/liu_fig2.pdf"],
    "table1": ["results/tables/admin_table1.md", "results/tables/admin_table1.csv"],
    "table2": ["results/tables/admin_table2.md", "results/tables/admin_table2.csv"],
    "lr_grid": ["results/figures/liu_fig10.pdf"],
}


FIGURE_SECTIONS = ("layer_dependency", "update_norms")  # {fig: {title, runs, ...}}: results/figures/liu_{fig}


def admin_cfg(section=None):
    a = config.get("admin", {})
    if section is None:
        return a
    if section not in a:
        config_error(f"{ADMIN_TARGETS[section][0]} needs an 'admin.{section}' section")
    return a[section]


def table_runs(section):
    """Every run a table or grid of the admin section reads, each once."""
    s = admin_cfg(section)
    if section == "table1":
        runs = [r["run"] for r in s["rows"]]
    elif section == "table2":
        runs = [run for runs in (*s["runs"].values(), *s.get("seed_runs", {}).values()) for run in runs]
        runs += list(s.get("init_runs", {}).values())
    else:
        runs = [c["run"] for c in s["cells"]]
    return list(dict.fromkeys(runs))


def check_admin_config():
    a = admin_cfg()
    for section in ("gradients", "output_change"):
        if section in a and a[section]["run"] not in config["runs"]:
            unknown_name(f"admin.{section}.run", a[section]["run"], "a run", "runs", config["runs"])
    for section in ("table1", "table2", "lr_grid"):
        if section in a:
            for run in table_runs(section):
                if run not in config["runs"]:
                    unknown_name(f"admin.{section}", run, "a run", "runs", config["runs"])
    if "table2" in a:
        t2 = a["table2"]
        for norm, runs in t2["runs"].items():
            if len(runs) != len(t2["depths"]):
                config_error(f"admin.table2.runs.{norm}: {len(runs)} runs for {len(t2['depths'])} depths")
    for section in FIGURE_SECTIONS:
        for fig, spec in a.get(section, {}).items():
            for run in spec["runs"]:
                if run not in config["runs"]:
                    unknown_name(f"admin.{section}.{fig}.runs", run, "a run", "runs", config["runs"])
            if len({run_corpus(run) for run in spec["runs"]}) > 1:
                config_error(f"admin.{section}.{fig}.runs: the runs of one figure must share a corpus")
    if "table1" in a and "gradients" not in a:
        config_error("admin.table1 needs admin.gradients (its 'gradient vanishing' column is measured there)")


def check_run_is(key, run, says, **want):
    """One error line at `key` when the run does not train with `want` (`says`: who asks for it)."""
    values = {k: run_value(run, k) for k in want}
    have = {k: v for k, v in values.items() if v != want[k]}
    if have:
        text = lambda d: ", ".join(f"{k} {d[k]}" for k in have)
        config_error(f"{key}: {run} has {text(have)}; {says} {text(want)}")


# what each run of Table 2's §5.2 block trains with (Liu: "FixUp (without using layer normalization)
# and LookLinear (with Post-LN)")
INIT_RUN_SETTINGS = {"fixup": {"enc_norm": "fixup", "dec_norm": "fixup"},
                     "looklinear": {"init": "looklinear", "enc_norm": "post", "dec_norm": "post"}}


def check_admin_run_settings():
    """Each table cell's run trains what the cell is labelled with (the runs exist: checked above)."""
    a = admin_cfg()
    for i, row in enumerate(a.get("table1", {}).get("rows", [])):
        check_run_is(f"admin.table1.rows[{i}].run", row["run"], "the row says", enc_norm=row["enc"], dec_norm=row["dec"])
    t2 = a.get("table2", {})
    for norm, runs in t2.get("runs", {}).items():
        for i, (run, depth) in enumerate(zip(runs, t2["depths"])):
            check_run_is(f"admin.table2.runs.{norm}[{i}]", run, f"its norm and depths[{i}] say",
                         enc_norm=norm, dec_norm=norm, enc_layers=depth, dec_layers=depth)
    for norm, runs in t2.get("seed_runs", {}).items():
        first = run_settings(runs[0])
        for i, run in enumerate(runs):
            key = f"admin.table2.seed_runs.{norm}[{i}]"
            check_run_is(key, run, "its norm says", enc_norm=norm, dec_norm=norm)
            keys = sorted({*first, *run_settings(run)} - {"seed", "description"})
            check_run_is(key, run, f"the cell's runs differ only in seed, and {runs[0]} has",
                         **{k: first.get(k, RUN_VALUE_DEFAULTS.get(k)) for k in keys})
        seeds = [run_value(run, "seed") for run in runs]
        if len(set(seeds)) < len(seeds):
            config_error(f"admin.table2.seed_runs.{norm}: seeds {seeds} repeat (one run per seed)")
    for init, run in t2.get("init_runs", {}).items():
        check_run_is(f"admin.table2.init_runs.{init}", run, "the block says", **INIT_RUN_SETTINGS[init])
    for i, cell in enumerate(a.get("lr_grid", {}).get("cells", [])):
        check_run_is(f"admin.lr_grid.cells[{i}].run", cell["run"], "the cell says",
                     enc_norm=cell["norm"], dec_norm=cell["norm"], lr=cell["lr"], adam_beta2=cell["beta2"])
    for fig, spec in a.get("layer_dependency", {}).items():
        for i, run in enumerate(spec["runs"]):
            enc, dec = run_norms(run)
            if enc != dec:  # the figure labels each run with one norm (its encoder's)
                config_error(f"admin.layer_dependency.{fig}.runs[{i}]: {run} has enc_norm {enc}, dec_norm {dec}; "
                             "a figure's run has one norm on both sides")
            if enc == "fixup":  # beta is carried through Post-LN, Pre-LN and Admin residuals only
                config_error(f"admin.layer_dependency.{fig}.runs[{i}]: {run} has norm fixup; the figure measures "
                             "post, pre and admin runs")


check_admin_config()
check_admin_run_settings()


def admin_targets():
    targets = [t for section, targets in ADMIN_TARGETS.items() if section in admin_cfg() for t in targets]
    return targets + [f"results/figures/liu_{fig}.pdf" for s in FIGURE_SECTIONS for fig in admin_cfg().get(s, {})]


# ---- init-time probes: the named run's corpus, width and batches; depth from the section ----
def admin_probe_settings(section):
    return run_settings(admin_cfg(section)["run"])


def admin_probe_data(section):
    files = bin_files(admin_probe_settings(section)["corpus"])
    return {"dict": files["dict"], "train": files["train"]}


def admin_probe_flags(section, keys):
    s, sec = admin_probe_settings(section), admin_cfg(section)
    own = {k: sec[k] for k in keys if k in sec}
    width = picked_flags(s, ADMIN_PROBE_KEYS)
    return f"--data {bpe_dir(s['corpus'])}/bin {width} {cli_flags(own)} --title {shlex.quote(sec['title'])}"


def vanishing_data(wildcards):
    return admin_probe_data("gradients")


def vanishing_combinations():
    """Post/Post and Pre/Pre (drawn), plus every combination of Table 1."""
    rows = admin_cfg().get("table1", {}).get("rows", [])
    return list(dict.fromkeys(["post/post", "pre/pre"] + [f"{r['enc']}/{r['dec']}" for r in rows]))


def vanishing_flags(wildcards):
    flags = admin_probe_flags("gradients", ("layers", "seeds", "vanishing_below"))
    return f"{flags} --combinations {' '.join(vanishing_combinations())}"


def output_change_data(wildcards):
    return admin_probe_data("output_change")


def output_change_flags(wildcards):
    flags = admin_probe_flags("output_change", ("seeds", "delta"))
    return f"{flags} --depths {' '.join(str(int(n)) for n in admin_cfg('output_change')['depths'])}"


# ---- tables and the lr grid: the runs' metrics and (averaged) BLEU ----
def averaged_checkpoints(run):
    """Checkpoints averaged for a run's table BLEU: its own entry, else its corpus's, else 0 (none)."""
    table = admin_cfg().get("average_last", {})
    return table.get(run, table.get(run_corpus(run), 0))


def table_bleu_file(run):
    n = averaged_checkpoints(run)
    return f"results/eval/{run}/bleu_avg{n}.csv" if n else f"results/eval/{run}/bleu.csv"


def table_inputs(section):
    runs = table_runs(section)
    return {"metrics": [f"results/train/{run}/metrics.csv" for run in runs],
            "bleu": [table_bleu_file(run) for run in runs]}


def table_spec(section):
    """The section plus what the command needs to read its runs, and nothing about other runs."""
    runs = table_runs(section)
    spec = {section: admin_cfg(section), "run_corpus": {run: run_corpus(run) for run in runs},
            "average_last": {run: averaged_checkpoints(run) for run in runs}}
    if "converged_below" in admin_cfg():
        spec["converged_below"] = admin_cfg()["converged_below"]
    return json.dumps(spec, sort_keys=True)


def table1_inputs(wildcards):
    return {**table_inputs("table1"), "vanishing": "results/figures/liu_fig5_vanishing.csv"}


def table1_spec(wildcards):
    return table_spec("table1")


def table2_inputs(wildcards):
    return table_inputs("table2")


def table2_spec(wildcards):
    return table_spec("table2")


def lr_grid_inputs(wildcards):
    return table_inputs("lr_grid")


def lr_grid_spec(wildcards):
    return table_spec("lr_grid")


# ---- Figs 7-8: layer dependency beta at init and after training ----
# DEPENDENCY_KEYS (what rebuilds a run's init): lnrepro.settings


def figure_cfg(section, fig):
    figures = admin_cfg().get(section, {})
    if fig not in figures:
        config_error(f"results/figures/liu_{fig}.pdf needs admin.{section}.{fig}")
    return figures[fig]


def figure_corpus(section, fig):
    return run_corpus(figure_cfg(section, fig)["runs"][0])


def figure_data_dir(section, fig):
    return f"{bpe_dir(figure_corpus(section, fig))}/bin"


def dependency_cfg(wildcards):
    return figure_cfg("layer_dependency", wildcards.ldfig)


def dependency_inputs(wildcards):
    files = bin_files(figure_corpus("layer_dependency", wildcards.ldfig))
    return {"dict": files["dict"], "train": files["train"],
            "metrics": [f"results/train/{run}/metrics.csv" for run in dependency_cfg(wildcards)["runs"]]}


def dependency_data_dir(wildcards):
    return figure_data_dir("layer_dependency", wildcards.ldfig)


def dependency_spec(wildcards):
    """The figure's title and its runs' settings: what rebuilds each run's model at init."""
    fig = dependency_cfg(wildcards)
    runs = {run: {k: v for k, v in run_settings(run).items() if k in DEPENDENCY_KEYS} for run in fig["runs"]}
    return json.dumps({"title": fig["title"], "runs": runs}, sort_keys=True)


# ---- Figs 3 and 11: relative gradient and update norms between consecutive epoch checkpoints ----
# UPDATE_NORM_KEYS (what the probe needs of a run): lnrepro.settings


def update_norms_cfg(wildcards):
    return figure_cfg("update_norms", wildcards.unfig)


def update_norms_inputs(wildcards):
    """The runs' metrics (their epoch checkpoints are written with them) and the corpus's batches."""
    return {"train": bin_files(figure_corpus("update_norms", wildcards.unfig))["train"],
            "metrics": [f"results/train/{run}/metrics.csv" for run in update_norms_cfg(wildcards)["runs"]]}


def update_norms_data_dir(wildcards):
    return figure_data_dir("update_norms", wildcards.unfig)


def update_norms_spec(wildcards):
    fig = update_norms_cfg(wildcards)
    runs = {run: {k: run_value(run, k) for k in UPDATE_NORM_KEYS} for run in fig["runs"]}
    return json.dumps({"title": fig["title"], "batches": fig.get("batches", 8), "epochs": fig.get("epochs"),
                       "runs": runs}, sort_keys=True)


rule gradient_vanishing:
    input:
        unpack(vanishing_data),
    output:
        pdf="results/figures/liu_fig5.pdf",
        png=report("results/figures/liu_fig5.png", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_fig5.csv", caption="../report/admin.rst", category="Admin"),
        summary="results/figures/liu_fig5_vanishing.csv",
    params:
        flags=vanishing_flags,
        scale_note=scale_note_flag(),
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig5.log",
    benchmark:
        "benchmarks/admin/liu_fig5.tsv"
    shell:
        "lnrepro gradient-vanishing {params.flags} --threads {threads} --pdf {output.pdf} --csv {output.csv}"
        " --summary {output.summary} {params.scale_note} > {log} 2>&1"


rule output_change:
    input:
        unpack(output_change_data),
    output:
        pdf="results/figures/liu_fig2.pdf",
        png=report("results/figures/liu_fig2.png", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_fig2.csv", caption="../report/admin.rst", category="Admin"),
        fits="results/figures/liu_fig2_fits.csv",
    params:
        flags=output_change_flags,
        scale_note=scale_note_flag(),
        admin_profile=ADMIN_PROFILE_METHOD,  # its Admin models are profiled in the job: a new method reruns it
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig2.log",
    benchmark:
        "benchmarks/admin/liu_fig2.tsv"
    shell:
        "lnrepro output-change {params.flags} --threads {threads} --pdf {output.pdf} --csv {output.csv}"
        " --fits {output.fits} {params.scale_note} > {log} 2>&1"


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
        pdf="results/figures/liu_fig10.pdf",
        png=report("results/figures/liu_fig10.png", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_fig10.csv", caption="../report/admin.rst", category="Admin"),
    params:
        spec=lr_grid_spec,
        scale_note=scale_note_flag(),
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_fig10.log",
    shell:
        "lnrepro lr-grid --spec {params.spec:q} --runs-dir results --pdf {output.pdf} --csv {output.csv}"
        " {params.scale_note} > {log} 2>&1"


# Figs 7-8: beta_{i,j} of the named runs at initialization and at their last checkpoint.
rule layer_dependency:
    input:
        unpack(dependency_inputs),
    output:
        pdf="results/figures/liu_{ldfig}.pdf",
        png=report("results/figures/liu_{ldfig}.png", caption="../report/admin.rst", category="Admin"),
        csv=report("results/figures/liu_{ldfig}.csv", caption="../report/admin.rst", category="Admin"),
    wildcard_constraints:
        ldfig="fig7|fig8",
    params:
        spec=dependency_spec,
        scale_note=scale_note_flag(),
        data_dir=dependency_data_dir,
        admin_profile=ADMIN_PROFILE_METHOD,  # its Admin models at init are profiled in the job
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_{ldfig}.log",
    benchmark:
        "benchmarks/admin/liu_{ldfig}.tsv"
    shell:
        "lnrepro layer-dependency --spec {params.spec:q} --data {params.data_dir} --runs-dir results"
        " --threads {threads} --pdf {output.pdf} --csv {output.csv} {params.scale_note} > {log} 2>&1"


# Figs 3 and 11: per epoch pair of each run, every matrix's gradient and update norm (seconds).
rule update_norms:
    input:
        unpack(update_norms_inputs),
    output:
        pdf="results/figures/liu_{unfig}.pdf",
        png=report("results/figures/liu_{unfig}.png", caption="../report/update_norms.rst", category="Admin"),
        csv=report("results/figures/liu_{unfig}.csv", caption="../report/admin.rst", category="Admin"),
        summary="results/figures/liu_{unfig}_summary.csv",
    wildcard_constraints:
        unfig="fig3|fig11",
    params:
        spec=update_norms_spec,
        scale_note=scale_note_flag(),
        data_dir=update_norms_data_dir,
    threads: threads("train")
    conda:
        "../../envs/lnrepro.yaml"
    log:
        "logs/admin/liu_{unfig}.log",
    benchmark:
        "benchmarks/admin/liu_{unfig}.tsv"
    shell:
        "lnrepro update-norms --spec {params.spec:q} --data {params.data_dir} --runs-dir results"
        " --threads {threads} --pdf {output.pdf} --csv {output.csv} --summary {output.summary} {params.scale_note}"
        " > {log} 2>&1"
