"""lnrepro.settings: what the package decides about a run's settings, read by the trainers, the model
and the workflow alike (so no test keeps copies in step): here, that what it says holds for the code
that uses it."""
import argparse
import dataclasses
import itertools
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lnrepro import settings
from lnrepro.core.admin import METHOD, profile, set_omegas
from lnrepro.core.model import ModelConfig, Transformer
from lnrepro.core.translation import TrainConfig
from lnrepro.training.pretrain import PretrainConfig

SMALL = dict(vocab_size=16, d_model=8, ffn_dim=16, heads=2, enc_layers=2, dec_layers=2)


def test_importing_it_imports_no_torch():
    """Snakemake imports it while parsing the rule files: a dry run must not pay for torch."""
    code = "import sys, lnrepro.settings; assert 'torch' not in sys.modules, 'torch imported'"
    src = str(Path(settings.__file__).parents[1])  # this checkout's package, whatever is installed
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": src})


def test_every_allowed_norm_pair_builds_and_every_other_is_refused():
    """NORM_PAIRS are what the model builds; Admin profiling gives omegas to the Admin side(s) only."""
    src, prev = torch.randint(4, 16, (2, 5)), torch.randint(4, 16, (2, 4))
    for enc, dec in itertools.product(settings.NORMS, settings.NORMS):
        if (enc, dec) not in settings.NORM_PAIRS:
            with pytest.raises(ValueError, match="Admin re-weights|FixUp rescales"):
                ModelConfig(**SMALL, enc_norm=enc, dec_norm=dec)
            continue
        model = Transformer(ModelConfig(**SMALL, enc_norm=enc, dec_norm=dec))
        omegas = profile(model, src, prev)
        set_omegas(model, omegas)
        assert [len(omegas["encoder"]), len(omegas["decoder"])] == [4 * (enc == "admin"), 6 * (dec == "admin")]


def test_the_refused_pairs_are_admin_beside_pre_and_fixup_on_one_side():
    refused = {p for p in itertools.product(settings.NORMS, repeat=2) if p not in settings.NORM_PAIRS}
    assert refused == {("admin", "pre"), ("pre", "admin"), ("fixup", "post"), ("post", "fixup"),
                       ("fixup", "pre"), ("pre", "fixup"), ("fixup", "admin"), ("admin", "fixup")}


@pytest.mark.parametrize("norm", ["post", "pre", "admin", "fixup"])
def test_looklinear_is_refused_with_exactly_its_refused_norms(norm):
    cfg = dict(SMALL, enc_norm=norm, dec_norm=norm, init="looklinear")
    if norm in settings.LOOKLINEAR_REFUSED_NORMS:
        with pytest.raises(ValueError, match="LookLinear is an initialization of its own"):
            ModelConfig(**cfg)
    else:
        Transformer(ModelConfig(**cfg))


def test_the_defaults_name_fields_of_the_trainers_configs():
    """TrainConfig and PretrainConfig read every default from here (one place for each setting's); a
    key that names no field (a renamed setting) is a default no trainer uses."""
    for cls, defaults in ((TrainConfig, settings.TRAIN_DEFAULTS), (PretrainConfig, settings.PRETRAIN_DEFAULTS)):
        assert {f.name for f in dataclasses.fields(cls)} == set(defaults)
        assert {k: getattr(cls(), k) for k in defaults} == defaults
    model = {f.name for f in dataclasses.fields(ModelConfig)}
    assert {k: getattr(ModelConfig(vocab_size=8), k) for k in settings.TRAIN_DEFAULTS if k in model} == \
        {k: v for k, v in settings.TRAIN_DEFAULTS.items() if k in model}
    assert set(settings.RUN_VALUE_DEFAULTS) <= set(settings.TRAIN_DEFAULTS)


def test_the_admin_profiling_method_is_the_codes():
    assert METHOD == settings.ADMIN_PROFILE_METHOD


def parser_of(module):
    p = argparse.ArgumentParser()
    __import__(module, fromlist=["add_arguments"]).add_arguments(p)
    return p


def dests(module):
    return {a.dest for a in parser_of(module)._actions}


@pytest.mark.parametrize("keys, module", [
    (settings.PROBE_KEYS, "lnrepro.analyses.probe_gradients"),
    (settings.WARMUP_PROBE_KEYS, "lnrepro.analyses.probe_gradients"),
    (settings.ADMIN_PROBE_KEYS, "lnrepro.analyses.gradient_vanishing"),
    (settings.ADMIN_PROBE_KEYS, "lnrepro.analyses.output_change"),
    (settings.LAUNCH_KEYS + settings.LOG_KEYS, "lnrepro.training.train"),
    (settings.LAUNCH_KEYS + settings.LOG_KEYS, "lnrepro.training.pretrain"),
])
def test_what_a_stage_reads_of_a_run_are_flags_of_its_command(keys, module):
    assert set(keys) <= dests(module)


def test_what_a_probe_rebuilds_a_run_from_are_its_training_settings():
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert set(settings.DEPENDENCY_KEYS) <= fields and set(settings.UPDATE_NORM_KEYS) <= fields


def test_what_the_workflow_resolves_is_no_trainer_setting():
    """A run-only key that were a trainer's setting would never reach it."""
    assert not set(settings.RUN_ONLY_KEYS) & {f.name for f in dataclasses.fields(TrainConfig)}
    assert not set(settings.BERT_RUN_ONLY_KEYS) & {f.name for f in dataclasses.fields(PretrainConfig)}


def test_a_runs_settings_become_the_trainers_flags():
    run = {"corpus": "deen", "model": "small", "norm": "pre", "description": "a run's words", "enc_norm": "pre",
           "dec_norm": "pre", "lr": 1e-3, "warmup_init_lr": 0, "gpus": 1, "nodes": 1}
    flags = settings.trainer_flags(run)
    assert flags == "--dec-norm pre --enc-norm pre --lr 0.001 --warmup-init-lr 0"
    assert settings.launched_trainer_flags(run) == flags  # one process: no layout flag
    assert settings.launched_trainer_flags({**run, "gpus": 4}) == f"{flags} --gpus 4"
    args = parser_of("lnrepro.training.train").parse_args(
        ["--data", "d", "--out", "o", *shlex.split(settings.launched_trainer_flags({**run, "gpus": 4}))])
    assert (args.enc_norm, args.dec_norm, args.lr, args.warmup_init_lr, args.gpus) == ("pre", "pre", 1e-3, 0.0, 4)


def test_flags_are_shell_quoted_and_picked():
    assert settings.cli_flags({"title": "it's", "max_tokens": 900}) == "--max-tokens 900 --title 'it'\"'\"'s'"
    assert settings.picked_flags({"d_model": 64, "lr": 1}, settings.PROBE_KEYS) == "--d-model 64"


def test_the_schemas_norms_and_inits_are_the_models():
    """The schema (YAML: it cannot import) names them in its enums, whose order its errors print."""
    import yaml
    from workflow_helpers import ROOT

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    found = []

    def walk(node):  # the properties of a run (and of train_defaults): where enc_norm and init are
        if isinstance(node, dict):
            if {"enc_norm", "init"} <= set(node):
                found.append(tuple(tuple(node[k]["enum"]) for k in ("norm", "enc_norm", "dec_norm", "init", "norm_fn")))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    assert found and set(found) == {(settings.MODEL_NORMS,) * 3 + (settings.INITS, settings.NORM_FNS)}
    lab = schema["$defs"]["admin"]["properties"]["output_change"]["properties"]["lab_norms"]["items"]["enum"]
    assert tuple(lab) == settings.VARIANT_NORMS  # the lab's output change: the later schemes


def test_a_probe_of_a_run_that_leaves_a_key_unset_uses_the_trainers_value():
    """The workflow passes only the keys a run sets (picked_flags): the probe's defaults are the rest."""
    args = parser_of("lnrepro.analyses.probe_gradients").parse_args(
        ["--data", "d", "--grads-out", "g", "--concentration-out", "c"])
    assert {k: getattr(args, k) for k in settings.PROBE_KEYS} == {k: getattr(TrainConfig(), k) for k in settings.PROBE_KEYS}


def test_the_launch_defaults_are_the_trainers_one_process():
    args = parser_of("lnrepro.training.train").parse_args(["--data", "d", "--out", "o"])
    assert {k: getattr(args, k) for k in settings.LAUNCH_KEYS} == settings.LAUNCH_DEFAULTS


@pytest.mark.parametrize("module, args, defaults, section", [
    ("lnrepro.prepare.clean", ["--src-in", "a", "--tgt-in", "b", "--src-out", "c", "--tgt-out", "d"],
     "CLEAN_DEFAULTS", "clean"),  # clean-corpus-n.perl's
    ("lnrepro.training.evaluate", ["--metrics", "m", "--data", "d", "--reference", "r", "--out", "o"],
     "DECODE_DEFAULTS", "decode"),  # fairseq-generate's
])
def test_a_corpus_sections_defaults_are_its_commands_and_the_schemas(module, args, defaults, section):
    """The command's flags default to them; the schema (YAML: it cannot import) states them as its
    defaults too; the workflow's flags and checks read them from lnrepro.settings."""
    import yaml
    from workflow_helpers import ROOT

    values = getattr(settings, defaults)
    parsed = parser_of(module).parse_args(args)
    assert {k: getattr(parsed, k) for k in values} == values
    text = (ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text()
    schema = yaml.safe_load(text)["$defs"]["corpus"]["properties"][section]["properties"]
    stated = {k: v["default"] for k, v in schema.items() if "default" in v}
    assert stated == {k: v for k, v in values.items() if k in stated} and stated
