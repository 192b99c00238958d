# Helpers shared by the rules: config resolution, cross-reference checks, paths, params.
import json
import os
import re
import shlex
import sys
import urllib.parse

# Rules call `lnrepro`, installed beside the Python running Snakemake (.venv/bin): keep it on PATH
# even when the environment was not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

MODEL_KEYS = ("enc_layers", "dec_layers", "d_model", "ffn_dim", "heads", "dropout", "attn_dropout",
              "act_dropout", "share_all_embeddings")
READY_SOURCES = ["generated", "iwslt14", "wmt14", "local"]
ARCHIVE_SOURCES = ("iwslt14", "wmt14")  # sources whose raw text comes from downloaded archives
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")
RUN_ONLY_KEYS = ("corpus", "model", "norm", "description", "update_tokens")  # resolved here, not passed to the trainer
LAUNCH_KEYS = ("nodes", "gpus")  # how many processes train a run: training only, not Admin profiling
NORMS = ("post", "pre", "admin")
# lnrepro.model refuses Admin beside Pre-LN (omega re-weights Post-LN residuals); Admin on one side
# with Post-LN on the other builds, and admin-profile then writes omegas for that side only
UNSUPPORTED_NORM_PAIRS = {("admin", "pre"), ("pre", "admin")}
NORM_PAIRS = [(e, d) for e in NORMS for d in NORMS if (e, d) not in UNSUPPORTED_NORM_PAIRS]
# what the trainer (lnrepro.train.TrainConfig) uses where no level of the config sets the key
TRAINER_DEFAULTS = {"enc_norm": "post", "dec_norm": "post", "lr": 5e-4, "adam_beta2": 0.98, "seed": 1}


def config_error(msg):
    raise WorkflowError(f"config: {msg}")


def corpus_cfg(name):
    return config["corpora"][name]


def run_settings(run):
    """train_defaults <- models[model] <- the run's own keys; `norm` sets both sides.
    A BERT run (bert_common.smk) has its own defaults and models."""
    if run not in config["runs"]:
        return bert_run_settings(run)
    merged = {**config["train_defaults"], **config["runs"][run]}
    settings = {**config["models"][merged["model"]], **merged}
    if "norm" in settings:
        settings.setdefault("enc_norm", settings["norm"])
        settings.setdefault("dec_norm", settings["norm"])
        if "norm" in config["runs"][run]:  # the run's own norm wins over inherited sides
            settings["enc_norm"] = settings["dec_norm"] = config["runs"][run]["norm"]
    return with_update_freq(settings, f"runs.{run}")


def with_update_freq(settings, where):
    """`update_tokens` is the batch as a paper states it (Xiong et al.: 8192 tokens x 16 GPUs):
    it sets the update_freq that gives it on this run's processes, whatever hardware a user has."""
    if "update_tokens" not in settings:
        return settings
    if "update_freq" in settings:
        config_error(f"{where}: set update_tokens or update_freq, not both (update_tokens derives update_freq)")
    per_pass = settings["max_tokens"] * settings.get("gpus", 1) * settings.get("nodes", 1)
    freq, rest = divmod(settings["update_tokens"], per_pass)
    if rest or not freq:
        config_error(f"{where}.update_tokens: {settings['update_tokens']} is not a multiple of max_tokens x gpus "
                     f"x nodes = {settings['max_tokens']} x {settings.get('gpus', 1)} x {settings.get('nodes', 1)}")
    return {**settings, "update_freq": freq}


def run_value(run, key):
    """The setting a translation run trains with, defaults of the trainer included."""
    return run_settings(run).get(key, TRAINER_DEFAULTS.get(key))


def run_norms(run):
    return run_value(run, "enc_norm"), run_value(run, "dec_norm")


def check_run_is(key, run, says, **want):
    """One error line at `key` when the run does not train with `want` (`says`: who asks for it)."""
    values = {k: run_value(run, k) for k in want}
    have = {k: v for k, v in values.items() if v != want[k]}
    if have:
        text = lambda d: ", ".join(f"{k} {d[k]}" for k in have)
        config_error(f"{key}: {run} has {text(have)}; {says} {text(want)}")


def check_config():
    """Cross-references the schema cannot express; fails before any job runs."""
    for run in config["runs"]:
        s = {**config["train_defaults"], **config["runs"][run]}
        for key, table in (("corpus", "corpora"), ("model", "models")):
            if key not in s:
                config_error(f"runs.{run}: no '{key}' (set it in the run or in train_defaults)")
            if s[key] not in config[table]:
                config_error(f"runs.{run}.{key}: '{s[key]}' is not one of {sorted(config[table])}")
        if run_norms(run) not in NORM_PAIRS:
            config_error(f"runs.{run}: enc_norm/dec_norm {'/'.join(run_norms(run))} cannot be built: Admin "
                         f"re-weights Post-LN residuals, so it pairs with admin or post only "
                         f"(enc/dec: {', '.join('/'.join(p) for p in NORM_PAIRS)})")
    levels = {"train_defaults": config["train_defaults"], **{f"runs.{r}": s for r, s in config["runs"].items()}}
    for where, level in levels.items():  # one level's norm and enc_norm/dec_norm: one of them is ignored
        for side in ("enc_norm", "dec_norm"):
            if "norm" in level and level.get(side, level["norm"]) != level["norm"]:
                config_error(f"{where}.{side}: '{level[side]}' contradicts its norm '{level['norm']}' (set one)")
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
                         f"(ready: {READY_SOURCES})")
        if c["source"] in ARCHIVE_SOURCES and not c.get("archives"):
            config_error(f"corpora.{name}: source '{c['source']}' needs 'archives' (url and sha256 of each)")
        if c["source"] == "local" and "files" not in c:
            config_error(f"corpora.{name}: source 'local' needs 'files' (train and test, src and tgt paths)")
        if c.get("valid_set") and c["source"] != "wmt14":
            config_error(f"corpora.{name}.valid_set: only for source 'wmt14' (a local corpus lists files.valid)")
        if c.get("clean_after_bpe") and c.get("decode", {}).get("split") == "valid":
            # the references are the text before BPE; cleaning after BPE drops pairs from valid.pt only
            config_error(f"corpora.{name}.decode.split: 'valid' is not scored on a clean_after_bpe corpus (its "
                         f"valid pairs are cleaned after BPE, so they no longer match the reference text): use 'test'")
        for a in c.get("archives", []):
            if not archive_name(a).endswith(ARCHIVE_SUFFIXES):
                config_error(f"corpora.{name}.archives: '{archive_name(a)}' ({a['url']}) is not one of "
                             f"{', '.join(ARCHIVE_SUFFIXES)}; set 'file' to name it")


# ---- archives: one file name under resources/downloads/ is one URL and one sha256 --------------
def archive_name(entry):
    return entry.get("file") or os.path.basename(urllib.parse.urlparse(entry["url"]).path.rstrip("/"))


def archive_stem(name):
    return next((name[: -len(s)] for s in ARCHIVE_SUFFIXES if name.endswith(s)), name)


def download_entries():
    """(config key, {url, sha256, file}) of every file the config downloads: the corpora's
    archives and the BERT data's files (bert_data_common.smk), all through download_archive."""
    for corpus, c in config["corpora"].items():
        for a in c.get("archives", []):
            yield f"corpora.{corpus}.archives", a
    for name, c in config.get("bert_corpora", {}).items():
        if c.get("wikipedia"):
            yield f"bert_corpora.{name}.wikipedia", c["wikipedia"]
    for task, g in config.get("glue", {}).items():
        for key in ("archive", "msr_train", "dev_ids"):
            if g.get(key):
                yield f"glue.{task}.{key}", g[key]


def collect_archives():
    found = {}
    for key, a in download_entries():
        name = archive_name(a)
        other = found.get(name)
        if other and (other["url"], other.get("sha256")) != (a["url"], a.get("sha256")):
            config_error(f"{key}: '{name}' is also {other['url']} "
                         f"(sha256 {other.get('sha256')}); one file name must mean one file")
        found[name] = a
    # only archives are unpacked; a plain file (a dump, a .txt) is read where it was downloaded
    archives = [n for n in found if n.endswith(ARCHIVE_SUFFIXES)]
    stems = {archive_stem(n): n for n in archives}
    if len(stems) != len(archives):
        config_error(f"archives: two archives unpack to the same folder name ({sorted(found)})")
    return found, stems


check_config()
ARCHIVES, ARCHIVE_STEMS = collect_archives()


def names_regex(names):
    return "|".join(sorted(names, key=len, reverse=True))


def files_regex(names, none):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or none


wildcard_constraints:
    corpus=names_regex(config["corpora"]),
    run=names_regex(list(config["runs"]) + list(config.get("bert", {}).get("runs", {}))),
    fig=names_regex(config["figures"]) or "NO_FIGURES",
    side="src|tgt",
    merges="[0-9]+",
    archive=files_regex(ARCHIVES, "NO_ARCHIVES"),
    unpacked=files_regex(ARCHIVE_STEMS, "NO_ARCHIVES"),


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
    """Each figure and the table of its final values (its report caption)."""
    return expand("results/figures/{fig}{suffix}", fig=config["figures"], suffix=[".pdf", "_final.csv"])


# ---- params ------------------------------------------------------------------------------------
def lang(corpus, side):
    return corpus_cfg(corpus)[side]


def cli_flags(settings):
    """{'warmup_init_lr': 0} -> '--warmup-init-lr 0' (shell-quoted)."""
    return " ".join(f"--{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in sorted(settings.items()))


def model_flags(wildcards):
    """The run's own settings: what its training and its Admin profiling depend on."""
    s = run_settings(wildcards.run)
    return cli_flags({k: v for k, v in s.items() if k not in RUN_ONLY_KEYS + LAUNCH_KEYS})


def uses_admin(run):
    s = run_settings(run)
    return "admin" in (s.get("enc_norm"), s.get("dec_norm"))


def omega_file(run):
    return f"results/admin/{run}/omega.json"


def train_flags(wildcards):
    """Only this run's settings reach its training job, so an edit reruns only this run."""
    flags = model_flags(wildcards)
    # the process count changes every update's batch; 1 (the default) adds no flag
    layout = {k: v for k, v in run_settings(wildcards.run).items() if k in LAUNCH_KEYS and v != 1}
    flags = f"{flags} {cli_flags(layout)}" if layout else flags
    flags += f" --admin-omega {omega_file(wildcards.run)}" if uses_admin(wildcards.run) else ""
    return flags + train_cap_flags(wildcards.run)


# ---- training_cap: a smoke test of a whole configuration (tests/test_paper_config.py) ----
# It reaches the trainers as flags of their own, so a capped run records the cap (log, metrics'
# `capped` column, checkpoint fingerprint) and is never resumed by, or mistaken for, a real one.
STEP_SCHEDULES = ("step", "step_inverse_sqrt")


def training_cap():
    return config.get("training_cap", {})


def cap_flags(rounds, round_updates):
    """The trainer's cap flags; none where the config caps nothing, so real runs' params stay."""
    cap = {k: v for k, v in (("max_rounds", rounds), ("max_round_updates", round_updates)) if v}
    return f" {cli_flags(cap)}" if cap else ""


def train_cap_flags(run):
    """At most `epochs` epochs of at most `epoch_updates` updates; a run whose lr steps down at
    decay_epoch trains up to that epoch, so the decay is exercised too."""
    cap, s = training_cap(), run_settings(run)
    epochs = cap.get("epochs", 0)
    if epochs and s.get("schedule") in STEP_SCHEDULES:
        epochs = max(epochs, s.get("decay_epoch", 0))
    return cap_flags(epochs, cap.get("epoch_updates", 0))


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


# ---- downloads ----
def download_flags(wildcards):
    """URL and sha256 reach the job as params: editing either fetches (and verifies) again."""
    a = ARCHIVES[wildcards.archive]
    return f"--url {shlex.quote(a['url'])}" + (f" --sha256 {a['sha256']}" if a.get("sha256") else "")


def archive_file(wildcards):
    return f"resources/downloads/{ARCHIVE_STEMS[wildcards.unpacked]}"


def extract_flags(wildcards):
    sha = ARCHIVES[ARCHIVE_STEMS[wildcards.unpacked]].get("sha256")
    return f"--sha256 {sha}" if sha else ""


def corpus_archive_dirs(wildcards):
    return [f"resources/extracted/{archive_stem(archive_name(a))}" for a in corpus_cfg(wildcards.corpus)["archives"]]


# ---- data: which route a corpus takes ----
def corpora_where(test):
    return names_regex([n for n, c in config["corpora"].items() if test(c)]) or "NONE"


def source_corpora(source):
    return corpora_where(lambda c: c["source"] == source)


def generated_corpora():
    return source_corpora("generated")


def has_given_valid(c):
    """A validation set of its own (local files.valid, WMT's valid_set) instead of every Nth train pair."""
    return bool(c.get("valid_set") or (c["source"] == "local" and "valid" in c.get("files", {})))


def moses_corpora():
    return corpora_where(lambda c: not c.get("tokenized", False))


def pretokenized_corpora():
    return corpora_where(lambda c: c.get("tokenized", False))


def split_valid_corpora():
    return corpora_where(lambda c: not has_given_valid(c))


def clean_after_bpe_corpora():
    return corpora_where(lambda c: c.get("clean_after_bpe", False))


def lang_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    return f"--src {c['src']} --tgt {c['tgt']}"


def wmt_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    flags = f"--src {c['src']} --tgt {c['tgt']} --test-set {shlex.quote(c.get('test_set', 'newstest2014'))}"
    if c.get("train_corpora"):
        flags += " --train-corpora " + " ".join(shlex.quote(x) for x in c["train_corpora"])
    if c.get("valid_set"):
        flags += f" --valid-set {shlex.quote(c['valid_set'])}"
    return flags


def local_inputs(wildcards):
    files = corpus_cfg(wildcards.corpus)["files"]
    return {f"{split}_{side}": files[split][side] for split in ("train", "valid", "test") if split in files
            for side in ("src", "tgt")}


def local_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    files = c["files"]
    flags = f"--src-lang {c['src']} --tgt-lang {c['tgt']}"
    for split in ("train", "valid", "test"):
        if split in files:
            flags += f" --{split} {shlex.quote(files[split]['src'])} {shlex.quote(files[split]['tgt'])}"
    return flags


def generator_flags(wildcards):
    g = corpus_cfg(wildcards.corpus)["generator"]
    return f"--task {g['task']} --seed {g.get('seed', 1)} --n-train {g['n_train']} --n-test {g['n_test']}"


def raw_file(wildcards):
    return f"{data_dir(wildcards.corpus)}/raw/{wildcards.split}.{lang(wildcards.corpus, wildcards.side)}"


def tokenizer_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    flags = f"--lang {lang(wildcards.corpus, wildcards.side)}" + (" --aggressive-dash" if c.get("aggressive_dash") else "")
    if c.get("split_final_period"):
        flags += " --split-final-period"
    if c.get("normalize_train") and wildcards.split == "train":  # prepare-wmt14en2de.sh: train only
        flags += " --normalize-punctuation --remove-non-printing"
    return flags


def clean_flags(wildcards):
    c = {"min": 1, "max": 175, "ratio": 1.5, **corpus_cfg(wildcards.corpus).get("clean", {})}
    return f"--min {c['min']} --max {c['max']} --ratio {c['ratio']}"


def case_input(wildcards):
    """Training text is cleaned first, unless the corpus cleans after BPE; valid/test never are."""
    d = data_dir(wildcards.corpus)
    if wildcards.part in ("trainvalid", "train"):
        stage = "tok" if corpus_cfg(wildcards.corpus).get("clean_after_bpe", False) else "clean"
        return f"{d}/{stage}/train.{wildcards.side}"
    return f"{d}/tok/{wildcards.part}.{wildcards.side}"


def case_flag(wildcards):
    return "" if corpus_cfg(wildcards.corpus).get("lowercase", False) else "--keep-case"


def valid_every(wildcards):
    return corpus_cfg(wildcards.corpus).get("valid_every", 23)


def bpe_files(corpus, merges):
    d = f"{data_dir(corpus)}/bpe{merges}"
    return [f"{d}/{split}.{side}" for split in ("train", "valid", "test") for side in ("src", "tgt")]


def binarize_inputs(wildcards):
    """The BPE'd splits, and the count check where the corpus states the recipe's counts."""
    files = bpe_files(wildcards.corpus, wildcards.merges)
    if corpus_cfg(wildcards.corpus).get("expected_counts"):
        files.append(f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}/counts.tsv")
    return files


def count_inputs(wildcards):
    d = f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}"
    return {split: f"{d}/{split}.src" for split in ("train", "valid", "test")}


def count_flags(wildcards):
    c = corpus_cfg(wildcards.corpus)
    d = f"{data_dir(wildcards.corpus)}/bpe{wildcards.merges}"
    expect = " ".join(f"{k}={v}" for k, v in sorted(c.get("expected_counts", {}).items()))
    files = " ".join(f"{split}={d}/{split}.src" for split in ("train", "valid", "test"))
    source = shlex.quote(f"{wildcards.corpus} ({c['source']})")
    return f"--source {source} --files {files} --expect {expect}"


# ---- train ----
def run_data(wildcards):
    return bin_files(run_corpus(wildcards.run))


def train_data(wildcards):
    files = run_data(wildcards)
    if uses_admin(wildcards.run):
        files["omega"] = omega_file(wildcards.run)
    return files


# ---- evaluate ----
def detok_reference(corpus):
    """The raw (untokenized) reference of the decoded split, for detokenized sacreBLEU; None
    unless the corpus asks for it (detok_bleu) and the split exists as raw text."""
    c = corpus_cfg(corpus)
    split = decode_settings(corpus)["split"]
    if not c.get("detok_bleu", False) or (split == "valid" and not has_given_valid(c)):
        return None
    return f"{data_dir(corpus)}/raw/{split}.{c['tgt']}"


def eval_inputs(wildcards):
    corpus = run_corpus(wildcards.run)
    split = decode_settings(corpus)["split"]
    inputs = {
        "metrics": f"results/train/{wildcards.run}/metrics.csv",
        "dict": bin_files(corpus)["dict"],
        "data": bin_files(corpus)[split],
        "reference": f"{data_dir(corpus)}/text/{split}.tgt",
    }
    if detok_reference(corpus):
        inputs["raw"] = f"{data_dir(corpus)}/raw"  # a directory output: its file is passed in the flags
    return inputs


def decode_flags(wildcards):
    corpus = run_corpus(wildcards.run)
    flags = cli_flags(decode_settings(corpus)) + f" --target-lang {lang(corpus, 'tgt')}"
    if detok_reference(corpus):
        flags += f" --detok-reference {detok_reference(corpus)}"
    return flags


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
