"""The command line: every subcommand's help renders (argparse %-formats help strings) and documents
every option: its help, default and choices."""
import argparse
import subprocess
import sys

import pytest

from lnrepro.cli import COMMANDS, build_parser


def test_top_level_help_lists_every_subcommand():
    done = subprocess.run([sys.executable, "-m", "lnrepro.cli", "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in COMMANDS)
    assert "95% CI" in done.stdout  # a literal percent sign in a help text


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_subcommand_help_renders(command, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser(command).parse_args([command, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: lnrepro " + command)


def subparser(command):
    parser = build_parser(command)
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_has_help(command):
    undocumented = [action.option_strings or [action.dest] for action in subparser(command)._actions
                    if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()]
    assert undocumented == []


def test_train_help_shows_choices_and_defaults(capsys):
    with pytest.raises(SystemExit):
        build_parser("train").parse_args(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert "--enc-norm {post,pre,admin,fixup}" in out
    assert "--init {standard,looklinear}" in out and "(default: standard)" in out
    assert "--optimizer {adam,sgd,radam}" in out
    assert "--schedule {inverse_sqrt,step,step_inverse_sqrt,linear,constant}" in out
    assert "(default: 4000)" in out  # --warmup
    assert "(default: inverse_sqrt)" in out
    assert "--data DATA binarized data dir (dict.txt, train.pt, valid.pt) --out" in out  # required: no default shown
    assert "(default: None)" not in out and "(default: )" not in out  # --admin-omega's "" says nothing


def test_pretrain_norms_are_berts():
    with pytest.raises(SystemExit):
        build_parser("pretrain").parse_args(["pretrain", "--data", "d", "--out", "o", "--norm", "admin"])
