# Helpers shared by the rules: config resolution, cross-reference checks, paths, params.
import json
import os
import shlex
import sys

# Rules call `lnrepro`, installed beside the Python running Snakemake (.venv/bin): keep it on PATH
# even when the environment was not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

MODEL_KEYS = ("enc_layers", "dec_layers", "d_model", "ffn_dim", "heads", "dropout", "attn_dropout",
              "act_dropout", "share_all_embeddings")
READY_SOURCES = ["generated"]
RUN_ONLY_KEYS = ("corpus", "model", "norm", "description")  # resolved here, not passed to the trainer


def config_error(msg):
    raise WorkflowError(f"config: {msg}")


def corpus_cfg(name):
    return config["corpora"][name]


def run_settings(run):
    """train_defaults <- models[model] <- the run's own keys; `norm` sets both sides."""
    merged = {**config["train_defaults"], **config["runs"][run]}
    settings = {**config["models"][merged["model"]], **merged}
    if "norm" in settings:
        settings.setdefault("enc_norm", settings["norm"])
        settings.setdefault("dec_norm", settings["norm"])
        if "norm" in config["runs"][run]:  # the run's own norm wins over inherited sides
            settings["enc_norm"] = settings["dec_norm"] = config["runs"][run]["norm"]
    return settings


def check_config():
    """Cross-references the schema cannot express; fails before any job runs."""
    for run in config["runs"]:
        s = {**config["train_defaults"], **config["runs"][run]}
        for key, table in (("corpus", "corpora"), ("model", "models")):
            if key not in s:
                config_error(f"runs.{run}: no '{key}' (set it in the run or in train_defaults)")
            if s[key] not in config[table]:
                config_error(f"runs.{run}.{key}: '{s[key]}' is not one of {sorted(config[table])}")
    for fig, spec in config["figures"].items():
        for i, panel in enumerate(spec["panels"]):
            for run in panel["runs"]:
                if run not in config["runs"]:
                    config_error(f"figures.{fig}.panels[{i}].runs: '{run}' is not a run ({sorted(config['runs'])})")
    for name, c in config["corpora"].items():
        if c["source"] == "generated" and "generator" not in c:
            config_error(f"corpora.{name}: source 'generated' needs a 'generator' entry")
        if c["source"] not in READY_SOURCES:
            config_error(f"corpora.{name}.source: '{c['source']}' cannot be prepared by this version "
                         f"(ready: {READY_SOURCES}); the real-archive rules are tracked in issue 4")


check_config()


def names_regex(names):
    return "|".join(sorted(names, key=len, reverse=True))


wildcard_constraints:
    corpus=names_regex(config["corpora"]),
    run=names_regex(config["runs"]),
    fig=names_regex(config["figures"]) or "NO_FIGURES",
    side="src|tgt",


# ---- paths -----------------------------------------------------------------------------------
def data_dir(corpus):
    return f"results/data/{corpus}"


def bpe_dir(corpus):
    """Keyed by its merges: a new merge count is a new directory, nothing is overwritten."""
    return f"{data_dir(corpus)}/bpe{corpus_cfg(corpus)['bpe_merges']}"


def bin_files(corpus):
    d = f"{bpe_dir(corpus)}/bin"
    return {"dict": f"{d}/dict.txt", "train": f"{d}/train.pt", "valid": f"{d}/valid.pt", "test": f"{d}/test.pt"}


def figure_targets():
    return expand("results/figures/{fig}.pdf", fig=config["figures"])


# ---- params ------------------------------------------------------------------------------------
def lang(corpus, side):
    return corpus_cfg(corpus)[side]


def cli_flags(settings):
    """{'warmup_init_lr': 0} -> '--warmup-init-lr 0' (shell-quoted)."""
    return " ".join(f"--{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in sorted(settings.items()))


def model_flags(wildcards):
    """The run's own settings: what its training and its Admin profiling depend on."""
    s = run_settings(wildcards.run)
    return cli_flags({k: v for k, v in s.items() if k not in RUN_ONLY_KEYS})


def uses_admin(run):
    s = run_settings(run)
    return "admin" in (s.get("enc_norm"), s.get("dec_norm"))


def omega_file(run):
    return f"results/admin/{run}/omega.json"


def train_flags(wildcards):
    """Only this run's settings reach its training job, so an edit reruns only this run."""
    flags = model_flags(wildcards)
    return flags + (f" --admin-omega {omega_file(wildcards.run)}" if uses_admin(wildcards.run) else "")


DECODE_DEFAULTS = {"split": "test", "beam": 5, "lenpen": 1.0, "max_len_a": 0, "max_len_b": 200, "batch_sentences": 128}


def decode_settings(corpus):
    return {**DECODE_DEFAULTS, **corpus_cfg(corpus).get("decode", {})}


def run_corpus(run):
    return run_settings(run)["corpus"]


def threads(kind):
    return config.get("threads", {}).get(kind, {"data": 2, "train": 1, "evaluate": 1}[kind])


def run_bin_dir(wildcards):
    return f"{bpe_dir(run_corpus(wildcards.run))}/bin"


def bpe_prefix(wildcards):
    return f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}"


# ---- data ----
def generated_corpora():
    return names_regex([n for n, c in config["corpora"].items() if c["source"] == "generated"]) or "NONE"


def generator_flags(wildcards):
    g = corpus_cfg(wildcards.corpus)["generator"]
    return f"--task {g['task']} --seed {g.get('seed', 1)} --n-train {g['n_train']} --n-test {g['n_test']}"


def raw_file(wildcards):
    return f"{data_dir(wildcards.corpus)}/raw/{wildcards.split}.{lang(wildcards.corpus, wildcards.side)}"


def tokenizer_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    return f"--lang {lang(wildcards.corpus, wildcards.side)}" + (" --aggressive-dash" if c.get("aggressive_dash") else "")


def clean_flags(wildcards):
    c = {"min": 1, "max": 175, "ratio": 1.5, **corpus_cfg(wildcards.corpus).get("clean", {})}
    return f"--min {c['min']} --max {c['max']} --ratio {c['ratio']}"


def case_input(wildcards):
    d = data_dir(wildcards.corpus)
    return f"{d}/clean/train.{wildcards.side}" if wildcards.part == "trainvalid" else f"{d}/tok/test.{wildcards.side}"


def case_flag(wildcards):
    return "" if corpus_cfg(wildcards.corpus).get("lowercase", False) else "--keep-case"


def valid_every(wildcards):
    return corpus_cfg(wildcards.corpus).get("valid_every", 23)


# ---- train ----
def run_data(wildcards):
    return bin_files(run_corpus(wildcards.run))


def train_data(wildcards):
    files = run_data(wildcards)
    if uses_admin(wildcards.run):
        files["omega"] = omega_file(wildcards.run)
    return files


# ---- evaluate ----
def eval_inputs(wildcards):
    corpus = run_corpus(wildcards.run)
    split = decode_settings(corpus)["split"]
    return {
        "metrics": f"results/train/{wildcards.run}/metrics.csv",
        "dict": bin_files(corpus)["dict"],
        "data": bin_files(corpus)[split],
        "reference": f"{data_dir(corpus)}/text/{split}.tgt",
    }


def decode_flags(wildcards):
    corpus = run_corpus(wildcards.run)
    return cli_flags(decode_settings(corpus)) + f" --target-lang {lang(corpus, 'tgt')}"


# ---- figures ----
def figure_runs(fig):
    return sorted({run for panel in config["figures"][fig]["panels"] for run in panel["runs"]})


def figure_inputs(wildcards):
    runs = figure_runs(wildcards.fig)
    return {
        "metrics": [f"results/train/{run}/metrics.csv" for run in runs],
        "bleu": [f"results/eval/{run}/bleu.csv" for run in runs],
    }


def figure_spec(wildcards):
    """The figure's panels plus the settings of the runs it draws (for legends)."""
    spec = dict(config["figures"][wildcards.fig])
    spec["run_settings"] = {run: run_settings(run) for run in figure_runs(wildcards.fig)}
    return json.dumps(spec, sort_keys=True)
