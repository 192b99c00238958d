"""The config's checks that run as the rule files are read, before any job: the YAML text, the schema
(it fills in the defaults), the cross-references it cannot express, and what the trainers refuse."""
import functools
import math
import os
import re
import textwrap

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate
import jsonschema
import yaml

from lnrepro.pipeline.config_text import duplicate_key_error, expanded_size, longest_text
from lnrepro.settings import (CLEAN_DEFAULTS, LOOKLINEAR_REFUSED_NORMS, NORM_PAIRS, PRETRAIN_DEFAULTS, TRAIN_DEFAULTS,
                               VARIANT_NORMS, norm_fn_refusal, norm_pair_refusal)


class ConfigChecks:
    def __init__(self, config, workflow, errors, runs, download):
        self.config, self.workflow = config, workflow
        self.errors, self.runs, self.download = errors, runs, download
    READY_SOURCES = ["generated", "iwslt14", "wmt14", "local"]
    ARCHIVE_SOURCES = ("iwslt14", "wmt14")  # sources whose raw text comes from downloaded archives

    # ---- the schema: validated first, its error reported as config_error's are, without the schema ----
    SCHEMA = "workflow/schemas/config.schema.yaml"  # relative to the Snakefile's folder
    SCHEMA_DETAIL_LINES = 8  # after the message and a blank line; an allowed-keys list takes up to 6
    MAX_CONFIG_VALUES = 100_000  # config/config.yaml expands to ~2,100 values, the demo's to ~1,100
    MAX_CONFIG_TEXT = 4_000  # characters: the longest paper passage or note is under 500

    def schema_error_lines(self, error):
        """jsonschema's ValidationError -> (the one-line message, a few lines of detail)."""
        where = self.errors.key_path(error.absolute_path)
        at = f"{where}: " if where else ""
        inst, sch, detail = error.instance, error.schema, []
        if error.validator == "additionalProperties" and isinstance(inst, dict) and sch.get("additionalProperties") is False:
            allowed = sorted(sch.get("properties", {}))
            patterns = list(sch.get("patternProperties", {}))
            unknown = [k for k in inst if k not in allowed and not any(re.search(p, k) for p in patterns)]
            keys = ", ".join(f"'{k}'" for k in unknown)
            msg = f"{at}unknown key{'s' * (len(unknown) > 1)} {keys}{self.errors.did_you_mean(unknown[0], allowed)}" if unknown \
                else f"{at}{error.message}"
            detail += textwrap.wrap(f"allowed keys: {', '.join(allowed)}", width=100, subsequent_indent="  ")
        elif error.validator == "enum":
            options = error.validator_value
            close = self.errors.did_you_mean(inst, options)
            msg = f"{at}{self.errors.short_repr(inst)} is not one of {', '.join(map(str, options))}{close}"
        elif error.validator == "required":
            missing = [k for k in error.validator_value if isinstance(inst, dict) and k not in inst] or ["?"]
            msg = f"{at}missing required key '{missing[0]}'" if where else f"missing required top-level key '{missing[0]}'"
        elif error.validator == "pattern" and sch.get("title") == "name":  # a section's key: names become paths
            msg = (f"{at}{self.errors.short_repr(inst)} is not a usable name: letters, digits and _ . + - only, starting with "
                   "a letter or digit (it becomes a file name and a word of a command)")
        elif error.validator == "maxLength" and sch.get("title") == "name":
            msg = f"{at}{self.errors.short_repr(inst)} is longer than the {sch['maxLength']} characters a name may have"
        elif error.validator == "type":
            types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            msg = f"{at}{self.errors.short_repr(inst)} is not of type {' or '.join(map(str, types))}"
            if "number" in types and isinstance(inst, str) and re.fullmatch(r"[-+]?\d+e[-+]?\d+", inst.strip(), re.I):
                mantissa, exponent = inst.strip().lower().split("e")  # YAML 1.1 (PyYAML) needs the dot
                msg += f": YAML reads {inst} as text, write {mantissa}.0e{exponent}"
        else:
            msg = f"{at}{self.errors.clip(error.message, 160)}"
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
                self.errors.config_error(twice)
        if expanded_size(self.config, self.MAX_CONFIG_VALUES) > self.MAX_CONFIG_VALUES:
            self.errors.config_error(f"the config expands to over {self.MAX_CONFIG_VALUES:,} values (aliases repeated "
                                     "inside aliases?); the papers' config has ~2,100: refused before anything reads it")
        where, length = longest_text(self.config)
        if length > self.MAX_CONFIG_TEXT:
            self.errors.config_error(f"{where or 'a key'}: a text of {length:,} characters, over the {self.MAX_CONFIG_TEXT:,} "
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
            self.errors.config_error(*self.schema_error_lines(cause))

    @functools.cache
    def schema_defs(self):
        """The schema's $defs: a part of the config checked against one definition (a claim, a sweep's axis)."""
        with open(os.path.join(self.workflow.basedir, self.SCHEMA), encoding="utf-8") as f:
            return yaml.safe_load(f)["$defs"]

    def check_init(self, run):
        """What lnrepro.core.model refuses for init looklinear (it mirrors the ReLU FFN's halves)."""
        if self.runs.run_value(run, "init") != "looklinear":
            return
        ffn_dim = self.runs.run_value(run, "ffn_dim")
        if ffn_dim % 2:
            self.errors.config_error(f"runs.{run}.init: looklinear needs an even ffn_dim (two mirrored halves), not {ffn_dim}")
        bad = [n for n in self.runs.run_norms(run) if n in LOOKLINEAR_REFUSED_NORMS]
        if bad:
            self.errors.config_error(f"runs.{run}.init: looklinear is an initialization of its own, not for norm '{bad[0]}' "
                                     f"(Liu et al. 5.2 run it with post)")

    def check_config(self):
        """Cross-references the schema cannot express; fails before any job runs."""
        for run in self.config["runs"]:
            s = {**self.config["train_defaults"], **self.config["runs"][run]}
            for key, table in (("corpus", "corpora"), ("model", "models")):
                if key not in s:
                    self.errors.config_error(f"runs.{run}: no '{key}' (set it in the run or in train_defaults)")
                if s[key] not in self.config[table]:
                    self.errors.unknown_name(f"runs.{run}.{key}", s[key], f"a {key}", table, self.config[table])
            if norm_pair_refusal(*self.runs.run_norms(run)):
                self.errors.config_error(f"runs.{run}: enc_norm/dec_norm {'/'.join(self.runs.run_norms(run))} cannot be built: Admin "
                                         f"re-weights Post-LN residuals, so it pairs with admin or post only; fixup is both "
                                         f"sides or none (the papers' pairs, enc/dec: {', '.join('/'.join(p) for p in NORM_PAIRS)}; "
                                         f"{', '.join(VARIANT_NORMS)} pair with any norm but admin)")
            refused = norm_fn_refusal(*self.runs.run_norms(run), self.runs.run_settings(run).get("norm_fn", TRAIN_DEFAULTS["norm_fn"]))
            if refused:
                self.errors.config_error(f"runs.{run}.norm_fn: {refused}")
            if self.runs.run_settings(run).get("share_all_embeddings") and not self.runs.run_joined_dictionary(run):
                self.errors.config_error(f"runs.{run}: share_all_embeddings needs joined_dictionary true (one embedding for "
                                         f"both sides needs one dictionary; fairseq refuses it likewise)")
            self.check_init(run)
        levels = {"train_defaults": self.config["train_defaults"], **{f"runs.{r}": s for r, s in self.config["runs"].items()}}
        for where, level in levels.items():  # one level's norm and enc_norm/dec_norm: one of them is ignored
            for side in ("enc_norm", "dec_norm"):
                if "norm" in level and level.get(side, level["norm"]) != level["norm"]:
                    self.errors.config_error(f"{where}.{side}: '{level[side]}' contradicts its norm '{level['norm']}' (set one)")
        for fig, spec in self.config["figures"].items():
            for i, panel in enumerate(spec["panels"]):
                for run in panel["runs"]:
                    if run not in self.config["runs"]:
                        self.errors.unknown_name(f"figures.{fig}.panels[{i}].runs", run, "a run", "runs", self.config["runs"])
        for name, c in self.config["corpora"].items():
            if c["source"] == "generated" and "generator" not in c:
                self.errors.config_error(f"corpora.{name}: source 'generated' needs a 'generator' entry")
            if c["source"] not in self.READY_SOURCES:
                self.errors.config_error(f"corpora.{name}.source: '{c['source']}' cannot be prepared by this version "
                                         f"(ready: {self.READY_SOURCES})")
            if c["source"] in self.ARCHIVE_SOURCES and not c.get("archives"):
                self.errors.config_error(f"corpora.{name}: source '{c['source']}' needs 'archives' (url and sha256 of each)")
            if c["source"] == "local" and "files" not in c:
                self.errors.config_error(f"corpora.{name}: source 'local' needs 'files' (train and test, src and tgt paths)")
            for split, sides in c.get("files", {}).items() if c["source"] == "local" else ():
                for side, path in sides.items():
                    self.errors.note_missing_input(f"corpora.{name}.files.{split}.{side}", path,
                                                   "prepare_local cannot run until it does (plain text, one sentence per line)")
            if c.get("valid_set") and c["source"] != "wmt14":
                self.errors.config_error(f"corpora.{name}.valid_set: only for source 'wmt14' (a local corpus lists files.valid)")
            if c.get("clean_after_bpe") and c.get("decode", {}).get("split") == "valid":
                # the references are the text before BPE; cleaning after BPE drops pairs from valid.pt only
                self.errors.config_error(f"corpora.{name}.decode.split: 'valid' is not scored on a clean_after_bpe corpus (its "
                                         f"valid pairs are cleaned after BPE, so they no longer match the reference text): use 'test'")
            for a in c.get("archives", []):
                if not self.download.archive_name(a).endswith(self.download.ARCHIVE_SUFFIXES):
                    self.errors.config_error(f"corpora.{name}.archives: '{self.download.archive_name(a)}' ({a['url']}) is not one of "
                                             f"{', '.join(self.download.ARCHIVE_SUFFIXES)}; set 'file' to name it")

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
            self.errors.config_error(f"{where}: {value} is not a finite number (a trainer takes it as it is: an inf lr "
                                     f"trains NaN weights, a nan one fails inside the job)")

    def origin(self, levels, *keys):
        """The key path of the first of keys set at the most specific of levels [(path, dict), ...]."""
        return next((f"{where}.{key}" for where, level in levels for key in keys if key in level), None)

    def check_heads(self, levels, settings, defaults):
        """Attention splits d_model into `heads` equal parts (lnrepro.core.model)."""
        d, h = (settings.get(k, defaults[k]) for k in ("d_model", "heads"))
        if d % h:
            self.errors.config_error(f"{self.origin(levels, 'heads', 'd_model')}: heads {h} does not divide d_model {d} "
                                     f"(attention splits d_model into {h} equal parts)")

    def check_batch_holds(self, levels, key, have, need, what, hint=""):
        """make_batches skips a sentence (a sequence) longer than max_tokens: below the longest one the
        data holds, the longest are dropped without a word, and at worst every one (a ZeroDivisionError)."""
        if have < need:
            self.errors.config_error(f"{self.origin(levels, key) or f'{levels[0][0]}.{key}'}: {have} is below {need}, {what}: "
                                     f"batches skip longer ones, at worst all of them{hint}")

    def check_trainable(self):
        """Finite numbers, heads dividing d_model, batches that hold the longest sentence or sequence."""
        for section in ("models", "train_defaults", "runs"):
            self.check_finite(section, self.config[section])
        for run, own in self.config["runs"].items():
            s = self.runs.run_settings(run)
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
        b = self.runs.bert_section()
        for section in ("models", "pretrain_defaults", "runs", "finetune"):
            self.check_finite(f"bert.{section}", b.get(section, {}))
        for run, own in b.get("runs", {}).items():
            model = {**b.get("pretrain_defaults", {}), **own}.get("model")
            if model not in b.get("models", {}):
                continue  # bert.smk names it
            s = {**PRETRAIN_DEFAULTS, **self.runs.bert_run_settings(run)}
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
