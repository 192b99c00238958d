"""The command line: every subcommand's help renders (argparse %-formats help strings)."""
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
