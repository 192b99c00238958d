# What all the rule files use (config errors, run settings, corpus paths, flag building, the shared
# wildcard constraints) and, included from here, resources.smk (what each job asks for). A rule
# file's own helpers are at its top. Top-level code, here and in a rule file, uses only names of its
# own file and of these two, so the order of the Snakefile's includes decides nothing but which of
# several config errors is reported first.
import difflib
import json
import math
import os
import re
import shlex
import sys
import textwrap
import urllib.parse

import jsonschema
from snakemake.utils import validate

# what the package decides about a run's settings (lnrepro.settings: torch-free, read at parse time):
# the trainers' defaults, the norm pairs and inits the model builds, what each stage reads from a run,
# a run's settings as a command's flags; also cleaning's defaults and a claim's scale words
from lnrepro.settings import (ADMIN_PROBE_KEYS, ADMIN_PROFILE_METHOD, BERT_RUN_ONLY_KEYS, CLAIM_SCALE_WORDS,
                              CLEAN_DEFAULTS, DEPENDENCY_KEYS, LAUNCH_DEFAULTS, LAUNCH_KEYS, LOG_KEYS,
                              LOOKLINEAR_REFUSED_NORMS, NORM_PAIRS, PRETRAIN_DEFAULTS, PROBE_KEYS, RUN_VALUE_DEFAULTS,
                              STEP_SCHEDULES, TRAIN_DEFAULTS, UPDATE_NORM_KEYS, WARMUP_PROBE_KEYS, cli_flags,
                              launched_trainer_flags, picked_flags, trainer_flags)

# Rules call `lnrepro`, installed beside the Python running Snakemake (.venv/bin): keep it on PATH
# even when the environment was not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


include: "resources.smk"


READY_SOURCES = ["generated", "iwslt14", "wmt14", "local"]
ARCHIVE_SOURCES = ("iwslt14", "wmt14")  # sources whose raw text comes from downloaded archives
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")
def stop(line, detail=()):
    """One line, a blank line and a few of detail, then exit before any job runs: what a schema error
    prints (validate_config). A WorkflowError added three frames of this file to the line."""
    print(line + ("\n\n" + "\n".join(f"  {d}" for d in detail) if detail else ""), file=sys.stderr)
    sys.exit(1)


def config_error(msg, detail=()):
    stop(f"config: {msg}", detail)


NAMES_SHOWN = 6  # config/config.yaml has 46 runs: a list of them all hides the one line that matters


def some_names(name, names):
    """A few of names, the closest to name first, and how many more."""
    shown = difflib.get_close_matches(str(name), names, n=NAMES_SHOWN, cutoff=0)
    more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    return f"{', '.join(shown)}{more}" if names else "none"


def unknown_name(where, name, kind, section, names):
    """A name looked up in a section (a run's corpus, a figure's run) that is not there: the closest
    as "did you mean", then a few of the section's names."""
    names = sorted(map(str, names))
    config_error(f"{where}: '{name}' is not {kind}{did_you_mean(name, names)}", [f"{section}: {some_names(name, names)}"])


def note_missing_input(key, path, consequence):
    """A file or folder the user provides that is not there: said when the DAG is planned (a dry run
    too), once, by the main process; the job that needs it fails later with the same advice."""
    if workflow.is_main_process and not os.path.exists(path):
        print(f"lnrepro: note: config {key}: '{path}' does not exist; {consequence}", file=sys.stderr)


# ---- the schema: validated first, its error reported as config_error's are, without the schema ----
SCHEMA = "workflow/schemas/config.schema.yaml"  # relative to the Snakefile's folder
SCHEMA_DETAIL_LINES = 8  # after the message and a blank line; an allowed-keys list takes up to 6


def key_path(path):
    """['runs', 'x', 'norm'] -> 'runs.x.norm'; list indices as [i], the form config_error's messages use."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def clip(text, width):
    return text if len(text) <= width else text[: width - 3] + "..."


def short_repr(value, width=60):
    return clip(repr(value), width)


def did_you_mean(word, choices):
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def schema_error_lines(error):
    """jsonschema's ValidationError -> (the one-line message, a few lines of detail)."""
    where = key_path(error.absolute_path)
    at = f"{where}: " if where else ""
    inst, sch, detail = error.instance, error.schema, []
    if error.validator == "additionalProperties" and isinstance(inst, dict) and sch.get("additionalProperties") is False:
        allowed = sorted(sch.get("properties", {}))
        patterns = list(sch.get("patternProperties", {}))
        unknown = [k for k in inst if k not in allowed and not any(re.search(p, k) for p in patterns)]
        keys = ", ".join(f"'{k}'" for k in unknown)
        msg = f"{at}unknown key{'s' * (len(unknown) > 1)} {keys}{did_you_mean(unknown[0], allowed)}" if unknown \
            else f"{at}{error.message}"
        detail += textwrap.wrap(f"allowed keys: {', '.join(allowed)}", width=100, subsequent_indent="  ")
    elif error.validator == "enum":
        options = error.validator_value
        msg = f"{at}{short_repr(inst)} is not one of {', '.join(map(str, options))}{did_you_mean(inst, options)}"
    elif error.validator == "required":
        missing = [k for k in error.validator_value if isinstance(inst, dict) and k not in inst] or ["?"]
        msg = f"{at}missing required key '{missing[0]}'" if where else f"missing required top-level key '{missing[0]}'"
    elif error.validator == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        msg = f"{at}{short_repr(inst)} is not of type {' or '.join(map(str, types))}"
    else:
        msg = f"{at}{clip(error.message, 160)}"
    if isinstance(sch, dict) and sch.get("description") and error.absolute_path:  # the top's: the schema's preamble
        detail.append(textwrap.shorten(f"{error.absolute_path[-1]}: {sch['description']}", width=200))
    detail = detail[: SCHEMA_DETAIL_LINES - 1]
    detail.append(f"every key: config/README.md; the schema: {SCHEMA}")
    return msg, detail


def validate_config():
    """Snakemake's validate (it fills in the schema's defaults); an error is one line first, a few
    after, and the workflow stops before any job: never jsonschema's dump of the schema."""
    try:
        validate(config, os.path.join(workflow.basedir, SCHEMA))
    except WorkflowError as e:
        cause = e.__context__
        if not isinstance(cause, jsonschema.ValidationError):
            raise
        config_error(*schema_error_lines(cause))


validate_config()


def corpus_cfg(name):
    return config["corpora"][name]


def lang(corpus, side):
    return corpus_cfg(corpus)[side]


def has_given_valid(c):
    """A validation set of its own (local files.valid, WMT's valid_set) instead of every Nth train pair."""
    return bool(c.get("valid_set") or (c["source"] == "local" and "valid" in c.get("files", {})))


# ---- run settings: translation runs (runs:) and BERT runs (bert.runs:) share the `run` wildcard ----
def run_settings(run):
    """train_defaults <- models[model] <- the run's own keys; `norm` sets both sides.
    A BERT run has its own defaults and models (bert_run_settings)."""
    if run not in config["runs"]:
        return bert_run_settings(run)
    merged = without_log_keys({**config["train_defaults"], **config["runs"][run]})
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
    gpus, nodes = ({**LAUNCH_DEFAULTS, **settings}[k] for k in ("gpus", "nodes"))
    per_pass = settings["max_tokens"] * gpus * nodes
    freq, rest = divmod(settings["update_tokens"], per_pass)
    if rest or not freq:
        config_error(f"{where}.update_tokens: {settings['update_tokens']} is not a multiple of max_tokens x gpus "
                     f"x nodes = {settings['max_tokens']} x {gpus} x {nodes}")
    return {**settings, "update_freq": freq}


def run_value(run, key):
    """The setting a translation run trains with, defaults of the trainer included."""
    return run_settings(run).get(key, RUN_VALUE_DEFAULTS.get(key))


def run_norms(run):
    return run_value(run, "enc_norm"), run_value(run, "dec_norm")


def run_corpus(run):
    return run_settings(run)["corpus"]


def bert_section():
    return config.get("bert", {})


def bert_runs():
    return list(bert_section().get("runs", {}))


def bert_run_settings(run):
    """bert.pretrain_defaults <- bert.models[model] <- the run's own keys."""
    merged = without_log_keys({**bert_section().get("pretrain_defaults", {}), **bert_section()["runs"][run]})
    return {**bert_section()["models"][merged["model"]], **merged}


def without_log_keys(settings):
    return {k: v for k, v in settings.items() if k not in LOG_KEYS}


def log_flags(run):
    """' --tensorboard true' where the run (or its defaults) sets tensorboard: true, else nothing."""
    if run in config["runs"]:
        merged = {**config["train_defaults"], **config["runs"][run]}
    else:
        merged = {**bert_section().get("pretrain_defaults", {}), **bert_section()["runs"][run]}
    return "".join(f" --{key} true" for key in LOG_KEYS if merged.get(key))


# ---- archives: one file name under resources/downloads/ is one URL and one sha256 (download.smk) ----
def archive_name(entry):
    return entry.get("file") or os.path.basename(urllib.parse.urlparse(entry["url"]).path.rstrip("/"))


def archive_stem(name):
    return next((name[: -len(s)] for s in ARCHIVE_SUFFIXES if name.endswith(s)), name)


def check_init(run):
    """What lnrepro.core.model refuses for init looklinear (it mirrors the ReLU FFN's halves)."""
    if run_value(run, "init") != "looklinear":
        return
    if run_value(run, "ffn_dim") % 2:
        config_error(f"runs.{run}.init: looklinear needs an even ffn_dim (two mirrored halves), not {run_value(run, 'ffn_dim')}")
    bad = [n for n in run_norms(run) if n in LOOKLINEAR_REFUSED_NORMS]
    if bad:
        config_error(f"runs.{run}.init: looklinear is an initialization of its own, not for norm '{bad[0]}' "
                     f"(Liu et al. 5.2 run it with post)")


def check_config():
    """Cross-references the schema cannot express; fails before any job runs."""
    for run in config["runs"]:
        s = {**config["train_defaults"], **config["runs"][run]}
        for key, table in (("corpus", "corpora"), ("model", "models")):
            if key not in s:
                config_error(f"runs.{run}: no '{key}' (set it in the run or in train_defaults)")
            if s[key] not in config[table]:
                unknown_name(f"runs.{run}.{key}", s[key], f"a {key}", table, config[table])
        if run_norms(run) not in NORM_PAIRS:
            config_error(f"runs.{run}: enc_norm/dec_norm {'/'.join(run_norms(run))} cannot be built: Admin "
                         f"re-weights Post-LN residuals, so it pairs with admin or post only; fixup is both "
                         f"sides or none (enc/dec: {', '.join('/'.join(p) for p in NORM_PAIRS)})")
        check_init(run)
    levels = {"train_defaults": config["train_defaults"], **{f"runs.{r}": s for r, s in config["runs"].items()}}
    for where, level in levels.items():  # one level's norm and enc_norm/dec_norm: one of them is ignored
        for side in ("enc_norm", "dec_norm"):
            if "norm" in level and level.get(side, level["norm"]) != level["norm"]:
                config_error(f"{where}.{side}: '{level[side]}' contradicts its norm '{level['norm']}' (set one)")
    for fig, spec in config["figures"].items():
        for i, panel in enumerate(spec["panels"]):
            for run in panel["runs"]:
                if run not in config["runs"]:
                    unknown_name(f"figures.{fig}.panels[{i}].runs", run, "a run", "runs", config["runs"])
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
        for split, sides in c.get("files", {}).items() if c["source"] == "local" else ():
            for side, path in sides.items():
                note_missing_input(f"corpora.{name}.files.{split}.{side}", path,
                                   "prepare_local cannot run until it does (plain text, one sentence per line)")
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


# ---- values the schema's types allow but no trainer can use (issue 29): refused before any job ----
# (where no level sets a key: the trainers' own defaults, TRAIN_DEFAULTS and PRETRAIN_DEFAULTS)


def check_finite(where, value):
    """NaN and infinities pass the schema's bounds (nan compares false, .inf is > 0), and a trainer
    takes them as they are: an inf lr trains NaN weights (a 'diverged' run), a nan fails in the job."""
    if isinstance(value, dict):
        for key, v in value.items():
            check_finite(f"{where}.{key}", v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_finite(f"{where}[{i}]", v)
    elif isinstance(value, float) and not math.isfinite(value):
        config_error(f"{where}: {value} is not a finite number (a trainer takes it as it is: an inf lr "
                     f"trains NaN weights, a nan one fails inside the job)")


def origin(levels, *keys):
    """The key path of the first of keys set at the most specific of levels [(path, dict), ...]."""
    return next((f"{where}.{key}" for where, level in levels for key in keys if key in level), None)


def check_heads(levels, settings, defaults):
    """Attention splits d_model into `heads` equal parts (lnrepro.core.model)."""
    d, h = (settings.get(k, defaults[k]) for k in ("d_model", "heads"))
    if d % h:
        config_error(f"{origin(levels, 'heads', 'd_model')}: heads {h} does not divide d_model {d} "
                     f"(attention splits d_model into {h} equal parts)")


def check_batch_holds(levels, key, have, need, what, hint=""):
    """make_batches skips a sentence (a sequence) longer than max_tokens: below the longest one the
    data holds, the longest are dropped without a word, and at worst every one (a ZeroDivisionError)."""
    if have < need:
        config_error(f"{origin(levels, key) or f'{levels[0][0]}.{key}'}: {have} is below {need}, {what}: "
                     f"batches skip longer ones, at worst all of them{hint}")


def check_trainable():
    """Finite numbers, heads dividing d_model, batches that hold the longest sentence or sequence."""
    for section in ("models", "train_defaults", "runs"):
        check_finite(section, config[section])
    for section in ("models", "pretrain_defaults", "runs", "finetune"):
        check_finite(f"bert.{section}", bert_section().get(section, {}))
    for run, own in config["runs"].items():
        s = run_settings(run)
        levels = [(f"runs.{run}", own), ("train_defaults", config["train_defaults"]),
                  (f"models.{s['model']}", config["models"][s["model"]])]
        check_heads(levels, s, TRAIN_DEFAULTS)
        clean_max = config["corpora"][s["corpus"]].get("clean", {}).get("max", CLEAN_DEFAULTS["max"])
        check_batch_holds(levels, "max_tokens", s.get("max_tokens", TRAIN_DEFAULTS["max_tokens"]), clean_max + 1,
                          f"the longest training sentence corpora.{s['corpus']} keeps (clean.max {clean_max} + </s>)",
                          f" (lower corpora.{s['corpus']}.clean.max for smaller batches)")
    b = bert_section()
    for run, own in b.get("runs", {}).items():
        model = {**b.get("pretrain_defaults", {}), **own}.get("model")
        if model not in b.get("models", {}):
            continue  # bert.smk names it
        s = {**PRETRAIN_DEFAULTS, **bert_run_settings(run)}
        levels = [(f"bert.runs.{run}", own), ("bert.pretrain_defaults", b.get("pretrain_defaults", {})),
                  (f"bert.models.{model}", b["models"][model])]
        check_heads(levels, s, PRETRAIN_DEFAULTS)
        check_batch_holds(levels, "max_tokens", s["max_tokens"], s["block_size"],
                          f"{origin(levels, 'block_size') or 'block_size'}, the tokens of a sequence with [CLS]/[SEP]")
        if s.get("short_block_size") and s.get("short_max_tokens"):  # 0: derived from max_tokens, as large
            check_batch_holds(levels, "short_max_tokens", s["short_max_tokens"], s["short_block_size"],
                              f"{origin(levels, 'short_block_size')}, the tokens of a short-phase sequence")
    for where, models in (("models", config["models"]), ("bert.models", b.get("models", {}))):
        for name, m in models.items():  # a model no run uses yet
            if "d_model" in m and "heads" in m:
                check_heads([(f"{where}.{name}", m)], m, m)


check_config()
check_trainable()


def names_regex(names):
    return "|".join(sorted(names, key=len, reverse=True))


wildcard_constraints:
    corpus=names_regex(config["corpora"]),
    run=names_regex(list(config["runs"]) + bert_runs()) or "NO_RUNS",
    fig=names_regex(config["figures"]) or "NO_FIGURES",
    side="src|tgt",
    merges="[0-9]+",


# ---- paths -----------------------------------------------------------------------------------
def data_dir(corpus):
    return f"results/data/{corpus}"


def bpe_dir(corpus):
    """Keyed by its merges: a new merge count is a new directory, nothing is overwritten."""
    return f"{data_dir(corpus)}/bpe{corpus_cfg(corpus)['bpe_merges']}"


def bin_files(corpus):
    d = f"{bpe_dir(corpus)}/bin"
    return {"dict": f"{d}/dict.txt", "train": f"{d}/train.pt", "valid": f"{d}/valid.pt", "test": f"{d}/test.pt"}


def run_bin_dir(wildcards):
    return f"{bpe_dir(run_corpus(wildcards.run))}/bin"


# ---- flags -----------------------------------------------------------------------------------
# cli_flags, trainer_flags, ...: lnrepro.settings
# training_cap: a smoke test of a whole configuration (tests/test_paper_config.py). It reaches the
# trainers as flags of their own, so a capped run records the cap (log, metrics' `capped` column,
# checkpoint fingerprint) and is never resumed by, or mistaken for, a real one.
def training_cap():
    return config.get("training_cap", {})


def cap_flags(rounds, round_updates):
    """The trainer's cap flags; none where the config caps nothing, so real runs' params stay."""
    cap = {k: v for k, v in (("max_rounds", rounds), ("max_round_updates", round_updates)) if v}
    return f" {cli_flags(cap)}" if cap else ""


# ---- targets: one the config cannot make is named with those it can (Snakefile, after rule all) ----
def requested_targets():
    """The targets on the command line. Snakemake 9 hands them to the DAG after parsing (its
    workflow.dag_settings is None here), so its own parser reads them again from the main process's
    argv; a job's process, or Snakemake called from Python, has no targets of a user's."""
    if not workflow.is_main_process or "snakemake" not in sys.argv[0]:
        return []
    if not any(os.path.normpath(a).startswith(f"results{os.sep}") for a in sys.argv[1:]):
        return []  # no path check_targets looks at: spare the 0.2 s of building Snakemake's parser
    from snakemake.cli import get_argument_parser

    args, _ = get_argument_parser().parse_known_args(sys.argv[1:])
    return args.targets or []


def scale_note_flag():
    """Every figure command's --scale-note: the config's `scale_note` (the demo's: its runs scale the
    papers' lrs and warm-ups), drawn under the figure's title; nothing where the config has none."""
    note = config.get("scale_note")
    return f"--scale-note {shlex.quote(note)}" if note else ""


def check_targets(all_targets):
    """A file under results/ no rule makes with this config (results/figures/fig99.pdf, a figure of
    another config): Snakemake's "No rule to produce" names no figure that exists; this names them."""
    rule_names = {r.name for r in workflow.rules}
    made = sorted(t for t in map(str, all_targets) if t.startswith(("results/figures/", "results/tables/"))
                  and t.endswith((".pdf", ".md")))
    for target in requested_targets():
        path = os.path.normpath(target)
        if (target in rule_names or not path.startswith(f"results{os.sep}") or os.path.exists(path)
                or any(r.is_producer(path) for r in workflow.rules)):
            continue
        listed = "; ".join(f"{folder}/: {', '.join(os.path.basename(t) for t in made if os.path.dirname(t) == folder)}"
                           for folder in sorted({os.path.dirname(t) for t in made}))
        stop(f"target {target}: no rule makes it with this config{did_you_mean(path, made)}",
             textwrap.wrap(f"this config's figures and tables: {listed or 'none'}", width=100, subsequent_indent="  "))
