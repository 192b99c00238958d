"""What every rule file asks of the config: config errors, run settings, corpus paths, flags."""
import difflib
import functools
import math
import os
import re
import sys
import textwrap
import urllib.parse

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate
import jsonschema
import yaml

from lnrepro.pipeline.config_text import duplicate_key_error, expanded_size, longest_text
from lnrepro.settings import (CLEAN_DEFAULTS, JOINED_DICT, JOINED_DICTIONARY_DEFAULT, LAUNCH_DEFAULTS, LOG_KEYS,
                               LOOKLINEAR_REFUSED_NORMS, NORM_PAIRS, PRETRAIN_DEFAULTS, RUN_VALUE_DEFAULTS, SEPARATE_DICTS,
                               TRAIN_DEFAULTS, VARIANT_NORMS, cli_flags, merged_run_settings, norm_fn_refusal,
                               norm_pair_refusal)


def rst_literal(text):
    """Config text as reStructuredText that renders exactly that text: one line (a directive such as
    `.. raw::` or `.. include::` needs a line of its own) and every character but a letter, digit or
    space escaped with a backslash (no role, link, substitution or inline markup)."""
    return "".join(c if c.isalnum() or c == " " else "\\" + c for c in " ".join(str(text).split()))


class Common:
    READY_SOURCES = ["generated", "iwslt14", "wmt14", "local"]
    ARCHIVE_SOURCES = ("iwslt14", "wmt14")  # sources whose raw text comes from downloaded archives
    ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")
    NAMES_SHOWN = 6  # config/config.yaml has 46 runs: a list of them all hides the one line that matters

    # ---- the schema: validated first, its error reported as config_error's are, without the schema ----
    SCHEMA = "workflow/schemas/config.schema.yaml"  # relative to the Snakefile's folder
    SCHEMA_DETAIL_LINES = 8  # after the message and a blank line; an allowed-keys list takes up to 6
    MAX_CONFIG_VALUES = 100_000  # config/config.yaml expands to ~2,100 values, the demo's to ~1,100
    MAX_CONFIG_TEXT = 4_000  # characters: the longest paper passage or note is under 500

    def stop(self, line, detail=()):
        """One line, a blank line and a few of detail, then exit before any job runs: what a schema error
        prints (validate_config). A WorkflowError added three frames of this file to the line."""
        print(line + ("\n\n" + "\n".join(f"  {d}" for d in detail) if detail else ""), file=sys.stderr)
        sys.exit(1)

    def config_error(self, msg, detail=()):
        self.stop(f"config: {msg}", detail)

    def some_names(self, name, names):
        """A few of names, the closest to name first, and how many more."""
        shown = difflib.get_close_matches(str(name), names, n=self.NAMES_SHOWN, cutoff=0)
        more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
        return f"{', '.join(shown)}{more}" if names else "none"

    def unknown_name(self, where, name, kind, section, names):
        """A name looked up in a section (a run's corpus, a figure's run) that is not there: the closest
        as "did you mean", then a few of the section's names."""
        names = sorted(map(str, names))
        self.config_error(f"{where}: '{name}' is not {kind}{self.did_you_mean(name, names)}", [f"{section}: {self.some_names(name, names)}"])

    def note(self, text):
        """Said when the DAG is planned (a dry run too), once, by the main process: not an error."""
        if self.workflow.is_main_process:
            print(f"lnrepro: note: {text}", file=sys.stderr)

    def note_missing_input(self, key, path, consequence):
        """A file or folder the user provides that is not there; the job that needs it fails later with
        the same advice."""
        if not os.path.exists(path):
            self.note(f"config {key}: '{path}' does not exist; {consequence}")

    def key_path(self, path):
        """['runs', 'x', 'norm'] -> 'runs.x.norm'; list indices as [i], the form config_error's messages use."""
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")

    def clip(self, text, width):
        return text if len(text) <= width else text[: width - 3] + "..."

    def short_repr(self, value, width=60):
        return self.clip(repr(value), width)

    def did_you_mean(self, word, choices):
        close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
        return f" (did you mean '{close[0]}'?)" if close else ""

    def schema_error_lines(self, error):
        """jsonschema's ValidationError -> (the one-line message, a few lines of detail)."""
        where = self.key_path(error.absolute_path)
        at = f"{where}: " if where else ""
        inst, sch, detail = error.instance, error.schema, []
        if error.validator == "additionalProperties" and isinstance(inst, dict) and sch.get("additionalProperties") is False:
            allowed = sorted(sch.get("properties", {}))
            patterns = list(sch.get("patternProperties", {}))
            unknown = [k for k in inst if k not in allowed and not any(re.search(p, k) for p in patterns)]
            keys = ", ".join(f"'{k}'" for k in unknown)
            msg = f"{at}unknown key{'s' * (len(unknown) > 1)} {keys}{self.did_you_mean(unknown[0], allowed)}" if unknown \
                else f"{at}{error.message}"
            detail += textwrap.wrap(f"allowed keys: {', '.join(allowed)}", width=100, subsequent_indent="  ")
        elif error.validator == "enum":
            options = error.validator_value
            msg = f"{at}{self.short_repr(inst)} is not one of {', '.join(map(str, options))}{self.did_you_mean(inst, options)}"
        elif error.validator == "required":
            missing = [k for k in error.validator_value if isinstance(inst, dict) and k not in inst] or ["?"]
            msg = f"{at}missing required key '{missing[0]}'" if where else f"missing required top-level key '{missing[0]}'"
        elif error.validator == "pattern" and sch.get("title") == "name":  # a section's key: names become paths
            msg = (f"{at}{self.short_repr(inst)} is not a usable name: letters, digits and _ . + - only, starting with "
                   "a letter or digit (it becomes a file name and a word of a command)")
        elif error.validator == "maxLength" and sch.get("title") == "name":
            msg = f"{at}{self.short_repr(inst)} is longer than the {sch['maxLength']} characters a name may have"
        elif error.validator == "type":
            types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            msg = f"{at}{self.short_repr(inst)} is not of type {' or '.join(map(str, types))}"
            if "number" in types and isinstance(inst, str) and re.fullmatch(r"[-+]?\d+e[-+]?\d+", inst.strip(), re.I):
                mantissa, exponent = inst.strip().lower().split("e")  # YAML 1.1 (PyYAML) needs the dot
                msg += f": YAML reads {inst} as text, write {mantissa}.0e{exponent}"
        else:
            msg = f"{at}{self.clip(error.message, 160)}"
        if isinstance(sch, dict) and sch.get("description") and error.absolute_path:  # the top's: the schema's preamble
            detail.append(textwrap.shorten(f"{error.absolute_path[-1]}: {sch['description']}", width=200))
        detail = detail[: self.SCHEMA_DETAIL_LINES - 1]
        detail.append(f"every key: config/README.md; the schema: {self.SCHEMA}")
        return msg, detail

    def check_config_text(self):
        """What YAML lets through silently, refused before anything walks the config (lnrepro.pipeline.
        config_text): a key given twice, aliases nested into an expansion no config needs, a huge text."""
        for path in getattr(self.workflow, "configfiles", []):  # a Pipeline built outside Snakemake has none
            shown = os.path.relpath(path)
            twice = duplicate_key_error(path, path if shown.startswith("..") else shown)
            if twice:
                self.config_error(twice)
        if expanded_size(self.config, self.MAX_CONFIG_VALUES) > self.MAX_CONFIG_VALUES:
            self.config_error(f"the config expands to over {self.MAX_CONFIG_VALUES:,} values (aliases repeated "
                              "inside aliases?); the papers' config has ~2,100: refused before anything reads it")
        where, length = longest_text(self.config)
        if length > self.MAX_CONFIG_TEXT:
            self.config_error(f"{where or 'a key'}: a text of {length:,} characters, over the {self.MAX_CONFIG_TEXT:,} "
                              "any setting needs (config text travels in job commands and the report)")

    def validate_config(self):
        """Snakemake's validate (it fills in the schema's defaults); an error is one line first, a few
        after, and the workflow stops before any job: never jsonschema's dump of the schema."""
        self.check_config_text()
        try:
            validate(self.config, os.path.join(self.workflow.basedir, self.SCHEMA))
        except WorkflowError as e:
            cause = e.__context__
            if not isinstance(cause, jsonschema.ValidationError):
                raise
            self.config_error(*self.schema_error_lines(cause))
        self.expand_sweeps()  # a sweep's cells are runs from here on (lnrepro.pipeline.sweeps)

    @functools.cache
    def schema_defs(self):
        """The schema's $defs: a part of the config checked against one definition (a claim, a sweep's axis)."""
        with open(os.path.join(self.workflow.basedir, self.SCHEMA), encoding="utf-8") as f:
            return yaml.safe_load(f)["$defs"]

    def corpus_cfg(self, name):
        return self.config["corpora"][name]

    def lang(self, corpus, side):
        return self.corpus_cfg(corpus)[side]

    def has_given_valid(self, c):
        """A validation set of its own (local files.valid, WMT's valid_set) instead of every Nth train pair."""
        return bool(c.get("valid_set") or (c["source"] == "local" and "valid" in c.get("files", {})))

    # ---- run settings: translation runs (runs:) and BERT runs (bert.runs:) share the `run` wildcard ----
    def run_settings(self, run):
        """train_defaults <- models[model] <- the run's own keys; `norm` sets both sides.
        A BERT run has its own defaults and models (bert_run_settings)."""
        if run not in self.config["runs"]:
            return self.bert_run_settings(run)
        return self.with_update_freq(merged_run_settings(self.config, run), f"runs.{run}")

    def with_update_freq(self, settings, where):
        """`update_tokens` is the batch as a paper states it (Xiong et al.: 8192 tokens x 16 GPUs):
        it sets the update_freq that gives it on this run's processes, whatever hardware a user has."""
        if "update_tokens" not in settings:
            return settings
        if "update_freq" in settings:
            self.config_error(f"{where}: set update_tokens or update_freq, not both (update_tokens derives update_freq)")
        gpus, nodes = ({**LAUNCH_DEFAULTS, **settings}[k] for k in ("gpus", "nodes"))
        per_pass = settings["max_tokens"] * gpus * nodes
        freq, rest = divmod(settings["update_tokens"], per_pass)
        if rest or not freq:
            self.config_error(f"{where}.update_tokens: {settings['update_tokens']} is not a multiple of max_tokens x gpus "
                              f"x nodes = {settings['max_tokens']} x {gpus} x {nodes}")
        return {**settings, "update_freq": freq}

    def run_value(self, run, key):
        """The setting a translation run trains with, defaults of the trainer included."""
        return self.run_settings(run).get(key, RUN_VALUE_DEFAULTS.get(key))

    def run_norms(self, run):
        return self.run_value(run, "enc_norm"), self.run_value(run, "dec_norm")

    def run_corpus(self, run):
        return self.run_settings(run)["corpus"]

    def bert_section(self):
        self.checked("bert")
        return self.config.get("bert", {})

    def bert_runs(self):
        """Their names (the `run` wildcard's, at parse time): no check of the section."""
        return list(self.config.get("bert", {}).get("runs", {}))

    def bert_run_settings(self, run):
        """bert.pretrain_defaults <- bert.models[model] <- the run's own keys."""
        merged = self.without_log_keys({**self.bert_section().get("pretrain_defaults", {}), **self.bert_section()["runs"][run]})
        return {**self.bert_section()["models"][merged["model"]], **merged}

    def without_log_keys(self, settings):
        return {k: v for k, v in settings.items() if k not in LOG_KEYS}

    def log_flags(self, run):
        """' --tensorboard true' where the run (or its defaults) sets tensorboard: true, else nothing."""
        if run in self.config["runs"]:
            merged = {**self.config["train_defaults"], **self.config["runs"][run]}
        else:
            merged = {**self.bert_section().get("pretrain_defaults", {}), **self.bert_section()["runs"][run]}
        return "".join(f" --{key} true" for key in LOG_KEYS if merged.get(key))

    # ---- archives: one file name under resources/downloads/ is one URL and one sha256 (download.smk) ----
    def archive_name(self, entry):
        return entry.get("file") or os.path.basename(urllib.parse.urlparse(entry["url"]).path.rstrip("/"))

    def archive_stem(self, name):
        return next((name[: -len(s)] for s in self.ARCHIVE_SUFFIXES if name.endswith(s)), name)

    def check_init(self, run):
        """What lnrepro.core.model refuses for init looklinear (it mirrors the ReLU FFN's halves)."""
        if self.run_value(run, "init") != "looklinear":
            return
        if self.run_value(run, "ffn_dim") % 2:
            self.config_error(f"runs.{run}.init: looklinear needs an even ffn_dim (two mirrored halves), not {self.run_value(run, 'ffn_dim')}")
        bad = [n for n in self.run_norms(run) if n in LOOKLINEAR_REFUSED_NORMS]
        if bad:
            self.config_error(f"runs.{run}.init: looklinear is an initialization of its own, not for norm '{bad[0]}' "
                              f"(Liu et al. 5.2 run it with post)")

    def check_config(self):
        """Cross-references the schema cannot express; fails before any job runs."""
        for run in self.config["runs"]:
            s = {**self.config["train_defaults"], **self.config["runs"][run]}
            for key, table in (("corpus", "corpora"), ("model", "models")):
                if key not in s:
                    self.config_error(f"runs.{run}: no '{key}' (set it in the run or in train_defaults)")
                if s[key] not in self.config[table]:
                    self.unknown_name(f"runs.{run}.{key}", s[key], f"a {key}", table, self.config[table])
            if norm_pair_refusal(*self.run_norms(run)):
                self.config_error(f"runs.{run}: enc_norm/dec_norm {'/'.join(self.run_norms(run))} cannot be built: Admin "
                                  f"re-weights Post-LN residuals, so it pairs with admin or post only; fixup is both "
                                  f"sides or none (the papers' pairs, enc/dec: {', '.join('/'.join(p) for p in NORM_PAIRS)}; "
                                  f"{', '.join(VARIANT_NORMS)} pair with any norm but admin)")
            refused = norm_fn_refusal(*self.run_norms(run), self.run_settings(run).get("norm_fn", TRAIN_DEFAULTS["norm_fn"]))
            if refused:
                self.config_error(f"runs.{run}.norm_fn: {refused}")
            if self.run_settings(run).get("share_all_embeddings") and not self.run_joined_dictionary(run):
                self.config_error(f"runs.{run}: share_all_embeddings needs joined_dictionary true (one embedding for "
                                  f"both sides needs one dictionary; fairseq refuses it likewise)")
            self.check_init(run)
        levels = {"train_defaults": self.config["train_defaults"], **{f"runs.{r}": s for r, s in self.config["runs"].items()}}
        for where, level in levels.items():  # one level's norm and enc_norm/dec_norm: one of them is ignored
            for side in ("enc_norm", "dec_norm"):
                if "norm" in level and level.get(side, level["norm"]) != level["norm"]:
                    self.config_error(f"{where}.{side}: '{level[side]}' contradicts its norm '{level['norm']}' (set one)")
        for fig, spec in self.config["figures"].items():
            for i, panel in enumerate(spec["panels"]):
                for run in panel["runs"]:
                    if run not in self.config["runs"]:
                        self.unknown_name(f"figures.{fig}.panels[{i}].runs", run, "a run", "runs", self.config["runs"])
        for name, c in self.config["corpora"].items():
            if c["source"] == "generated" and "generator" not in c:
                self.config_error(f"corpora.{name}: source 'generated' needs a 'generator' entry")
            if c["source"] not in self.READY_SOURCES:
                self.config_error(f"corpora.{name}.source: '{c['source']}' cannot be prepared by this version "
                                  f"(ready: {self.READY_SOURCES})")
            if c["source"] in self.ARCHIVE_SOURCES and not c.get("archives"):
                self.config_error(f"corpora.{name}: source '{c['source']}' needs 'archives' (url and sha256 of each)")
            if c["source"] == "local" and "files" not in c:
                self.config_error(f"corpora.{name}: source 'local' needs 'files' (train and test, src and tgt paths)")
            for split, sides in c.get("files", {}).items() if c["source"] == "local" else ():
                for side, path in sides.items():
                    self.note_missing_input(f"corpora.{name}.files.{split}.{side}", path,
                                            "prepare_local cannot run until it does (plain text, one sentence per line)")
            if c.get("valid_set") and c["source"] != "wmt14":
                self.config_error(f"corpora.{name}.valid_set: only for source 'wmt14' (a local corpus lists files.valid)")
            if c.get("clean_after_bpe") and c.get("decode", {}).get("split") == "valid":
                # the references are the text before BPE; cleaning after BPE drops pairs from valid.pt only
                self.config_error(f"corpora.{name}.decode.split: 'valid' is not scored on a clean_after_bpe corpus (its "
                                  f"valid pairs are cleaned after BPE, so they no longer match the reference text): use 'test'")
            for a in c.get("archives", []):
                if not self.archive_name(a).endswith(self.ARCHIVE_SUFFIXES):
                    self.config_error(f"corpora.{name}.archives: '{self.archive_name(a)}' ({a['url']}) is not one of "
                                      f"{', '.join(self.ARCHIVE_SUFFIXES)}; set 'file' to name it")

    def check_finite(self, where, value):
        """NaN and infinities pass the schema's bounds (nan compares false, .inf is > 0), and a trainer
        takes them as they are: an inf lr trains NaN weights (a 'diverged' run), a nan fails in the job."""
        if isinstance(value, dict):
            for key, v in value.items():
                self.check_finite(f"{where}.{key}", v)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.check_finite(f"{where}[{i}]", v)
        elif isinstance(value, float) and not math.isfinite(value):
            self.config_error(f"{where}: {value} is not a finite number (a trainer takes it as it is: an inf lr "
                              f"trains NaN weights, a nan one fails inside the job)")

    def origin(self, levels, *keys):
        """The key path of the first of keys set at the most specific of levels [(path, dict), ...]."""
        return next((f"{where}.{key}" for where, level in levels for key in keys if key in level), None)

    def check_heads(self, levels, settings, defaults):
        """Attention splits d_model into `heads` equal parts (lnrepro.core.model)."""
        d, h = (settings.get(k, defaults[k]) for k in ("d_model", "heads"))
        if d % h:
            self.config_error(f"{self.origin(levels, 'heads', 'd_model')}: heads {h} does not divide d_model {d} "
                              f"(attention splits d_model into {h} equal parts)")

    def check_batch_holds(self, levels, key, have, need, what, hint=""):
        """make_batches skips a sentence (a sequence) longer than max_tokens: below the longest one the
        data holds, the longest are dropped without a word, and at worst every one (a ZeroDivisionError)."""
        if have < need:
            self.config_error(f"{self.origin(levels, key) or f'{levels[0][0]}.{key}'}: {have} is below {need}, {what}: "
                              f"batches skip longer ones, at worst all of them{hint}")

    def check_trainable(self):
        """Finite numbers, heads dividing d_model, batches that hold the longest sentence or sequence."""
        for section in ("models", "train_defaults", "runs"):
            self.check_finite(section, self.config[section])
        for run, own in self.config["runs"].items():
            s = self.run_settings(run)
            levels = [(f"runs.{run}", own), ("train_defaults", self.config["train_defaults"]),
                      (f"models.{s['model']}", self.config["models"][s["model"]])]
            self.check_heads(levels, s, TRAIN_DEFAULTS)
            clean_max = self.config["corpora"][s["corpus"]].get("clean", {}).get("max", CLEAN_DEFAULTS["max"])
            self.check_batch_holds(levels, "max_tokens", s.get("max_tokens", TRAIN_DEFAULTS["max_tokens"]), clean_max + 1,
                                   f"the longest training sentence corpora.{s['corpus']} keeps (clean.max {clean_max} + </s>)",
                                   f" (lower corpora.{s['corpus']}.clean.max for smaller batches)")
        for name, m in self.config["models"].items():  # a model no run uses yet
            if "d_model" in m and "heads" in m:
                self.check_heads([(f"models.{name}", m)], m, m)

    def check_bert_trainable(self):
        """check_trainable's, for the BERT runs and models."""
        b = self.bert_section()
        for section in ("models", "pretrain_defaults", "runs", "finetune"):
            self.check_finite(f"bert.{section}", b.get(section, {}))
        for run, own in b.get("runs", {}).items():
            model = {**b.get("pretrain_defaults", {}), **own}.get("model")
            if model not in b.get("models", {}):
                continue  # bert.smk names it
            s = {**PRETRAIN_DEFAULTS, **self.bert_run_settings(run)}
            levels = [(f"bert.runs.{run}", own), ("bert.pretrain_defaults", b.get("pretrain_defaults", {})),
                      (f"bert.models.{model}", b["models"][model])]
            self.check_heads(levels, s, PRETRAIN_DEFAULTS)
            self.check_batch_holds(levels, "max_tokens", s["max_tokens"], s["block_size"],
                                   f"{self.origin(levels, 'block_size') or 'block_size'}, the tokens of a sequence with [CLS]/[SEP]")
            if s.get("short_block_size") and s.get("short_max_tokens"):  # 0: derived from max_tokens, as large
                self.check_batch_holds(levels, "short_max_tokens", s["short_max_tokens"], s["short_block_size"],
                                       f"{self.origin(levels, 'short_block_size')}, the tokens of a short-phase sequence")
        for name, m in b.get("models", {}).items():  # a model no run uses yet
            if "d_model" in m and "heads" in m:
                self.check_heads([(f"bert.models.{name}", m)], m, m)

    def names_regex(self, names):
        """A wildcard constraint matching exactly these names ('.' and '+' are literal in a name)."""
        return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))

    # ---- paths -----------------------------------------------------------------------------------
    def data_dir(self, corpus):
        return f"results/data/{corpus}"

    def bpe_dir(self, corpus):
        """Keyed by its merges: a new merge count is a new directory, nothing is overwritten."""
        return f"{self.data_dir(corpus)}/bpe{self.corpus_cfg(corpus)['bpe_merges']}"

    def bin_dir(self, corpus, joined=JOINED_DICTIONARY_DEFAULT):
        """Keyed by its dictionaries: one joined (bin/dict.txt) or one per side (bin_separate/dict.{src,tgt}.txt)."""
        return f"{self.bpe_dir(corpus)}/{'bin' if joined else 'bin_separate'}"

    def bin_files(self, corpus, joined=JOINED_DICTIONARY_DEFAULT):
        """"dict": the joined dictionary's file, or a list of the source's and the target's."""
        d = self.bin_dir(corpus, joined)
        return {"dict": f"{d}/{JOINED_DICT}" if joined else [f"{d}/{name}" for name in SEPARATE_DICTS],
                "train": f"{d}/train.pt", "valid": f"{d}/valid.pt", "test": f"{d}/test.pt"}

    def run_joined_dictionary(self, run):
        return self.run_settings(run).get("joined_dictionary", JOINED_DICTIONARY_DEFAULT)

    def run_bin_files(self, run):
        """The binarized data a run trains on: its corpus with its dictionaries."""
        return self.bin_files(self.run_corpus(run), self.run_joined_dictionary(run))

    def run_data_dir(self, run):
        return self.bin_dir(self.run_corpus(run), self.run_joined_dictionary(run))

    def run_bin_dir(self, wildcards):
        return self.run_data_dir(wildcards.run)

    # ---- flags -----------------------------------------------------------------------------------
    # cli_flags, trainer_flags, ...: lnrepro.settings
    # training_cap: a smoke test of a whole configuration (tests/test_paper_config.py). It reaches the
    # trainers as flags of their own, so a capped run records the cap (log, metrics' `capped` column,
    # checkpoint fingerprint) and is never resumed by, or mistaken for, a real one.
    def training_cap(self):
        return self.config.get("training_cap", {})

    def cap_flags(self, rounds, round_updates):
        """The trainer's cap flags; none where the config caps nothing, so real runs' params stay."""
        cap = {k: v for k, v in (("max_rounds", rounds), ("max_round_updates", round_updates)) if v}
        return f" {cli_flags(cap)}" if cap else ""

    # ---- targets: one the config cannot make is named with those it can (Snakefile, after rule all) ----
    @functools.cache
    def requested_targets(self):
        """The targets on the command line. Snakemake 9 hands them to the DAG after parsing (its
        workflow.dag_settings is None here), so its own parser reads them again from the main process's
        argv; a job's process, or Snakemake called from Python, has no targets of a user's."""
        if not self.workflow.is_main_process or "snakemake" not in sys.argv[0]:
            return []
        if not any(os.path.normpath(a).startswith(f"results{os.sep}") or self.maybe_bare_target(a) for a in sys.argv[1:]):
            return []  # no path check_targets looks at: spare the 0.2 s of building Snakemake's parser
        from snakemake.cli import get_argument_parser

        args, _ = get_argument_parser().parse_known_args(sys.argv[1:])
        return args.targets or []

    def report_caption(self, *path, got=None, table=None):
        """Params for a report caption: the title and paper text of the config section at path (a key
        may name a wildcard: "{fig}"), as reStructuredText that shows them literally (rst_literal);
        with `got`, what our numbers are, and `table`, the small CSV (a rule output, "{fig}" filled in)
        that shows them."""
        def caption(wildcards):
            values = dict(wildcards.items())
            section = self.config
            for key in path:
                section = section[key.format(**values)]
            text = {"title": rst_literal(section["title"]), "paper": rst_literal(section.get("paper", "(see the paper)"))}
            return {**text, "got": rst_literal(got), "table": table.format(**values)} if table else text
        return caption

    def maybe_bare_target(self, arg):
        """An argument that may be a target named without its folder (`fig4`): a word, no option or value."""
        return not arg.startswith("-") and os.sep not in arg and "=" not in arg and not arg.replace(".", "").isdigit()

    def check_targets(self):
        """A file under results/ no rule makes with this config (results/figures/fig99.pdf, a figure of
        another config): Snakemake's "No rule to produce" names no figure that exists; this names them.
        A figure or table named without its folder and suffix (`fig4`): Snakemake's MissingRuleException
        with its traceback; this names the file."""
        rule_names = {r.name for r in self.workflow.rules}
        for target in self.requested_targets():
            path = os.path.normpath(target)
            if (target in rule_names or os.path.exists(path) or any(r.is_producer(path) for r in self.workflow.rules)
                    or not (path.startswith(f"results{os.sep}") or os.sep not in path)):
                continue
            made = sorted(t for t in self.default_targets() if t.startswith(("results/figures/", "results/tables/"))
                          and t.endswith((".pdf", ".md")))
            named = [t for t in made if os.path.splitext(os.path.basename(t))[0] == target]
            if os.sep not in path:
                if named:
                    self.stop(f"target {target}: no rule of that name (did you mean '{named[0]}'?)")
                continue  # not one of ours: Snakemake's own message
            listed = "; ".join(f"{folder}/: {', '.join(os.path.basename(t) for t in made if os.path.dirname(t) == folder)}"
                               for folder in sorted({os.path.dirname(t) for t in made}))
            self.stop(f"target {target}: no rule makes it with this config{self.did_you_mean(path, made)}",
                      textwrap.wrap(f"this config's figures and tables: {listed or 'none'}", width=100, subsequent_indent="  "))
