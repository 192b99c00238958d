"""The command line: every subcommand's help renders (argparse %-formats help strings) and documents
every option: its help, default and choices."""
import argparse
import ast
import subprocess
import sys

import pytest

from workflow_helpers import ROOT

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
    assert "--enc-norm {post,pre,admin,fixup,deepnorm,sandwich,tfixup,resi_dual}" in out
    assert "--norm-fn {layernorm,rmsnorm,dyt}" in out and "(default: layernorm)" in out
    assert "--init {standard,looklinear}" in out and "(default: standard)" in out
    assert "--optimizer {adam,sgd,radam}" in out
    assert "--schedule {inverse_sqrt,step,step_inverse_sqrt,linear,constant}" in out
    assert "(default: 4000)" in out  # --warmup
    assert "(default: inverse_sqrt)" in out
    assert "--data DATA binarized data dir (its dictionaries, train.pt, valid.pt) --out" in out  # required: no default shown
    assert "(default: None)" not in out and "(default: )" not in out  # --admin-omega's "" says nothing


def test_pretrain_norms_are_berts():
    with pytest.raises(SystemExit):
        build_parser("pretrain").parse_args(["pretrain", "--data", "d", "--out", "o", "--norm", "admin"])


# ---- a command run by hand with a missing or wrong input: one line, exit 2 (issue 31) -----------
from lnrepro.args import str2bool  # noqa: E402
from lnrepro.cli import main  # noqa: E402

FIGURE_SPEC = '{"title": "t", "panels": [{"title": "p", "metric": "valid_loss", "runs": ["r1"]}], "run_settings": {}}'


def one_line_error(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1, err
    return err.rstrip("\n")


@pytest.mark.parametrize("argv, message", [
    (["figure", "--spec", FIGURE_SPEC, "--metrics", "r1={tmp}/train/r1/metrics.csv", "--pdf", "f.pdf", "--csv", "f.csv"],
     "lnrepro figure: error: {tmp}/train/r1/metrics.csv: no such file or directory (nor its folder: an input, "
     "run the step that writes it first, e.g. via snakemake; an output, create its folder)"),
    (["train", "--data", "{tmp}/bin", "--out", "{tmp}/run"],
     "lnrepro train: error: {tmp}/bin/dict.txt: no such file or directory (nor its folder: an input, "
     "run the step that writes it first, e.g. via snakemake; an output, create its folder)"),
    # the workflow passes the spec as JSON text; a file name there was a JSONDecodeError's traceback
    (["figure", "--spec", "spec.json", "--pdf", "f.pdf", "--csv", "f.csv"],
     "lnrepro figure: error: argument --spec: not JSON (Expecting value at char 0): give the JSON text itself "
     "or @FILE, not a file name: 'spec.json' (see lnrepro figure --help)"),
    (["figure", "--spec", "@{tmp}/gone.json", "--pdf", "f.pdf", "--csv", "f.csv"],
     "lnrepro figure: error: argument --spec: @{tmp}/gone.json: No such file or directory (a long spec the "
     "workflow wrote when it planned the job: plan it again) (see lnrepro figure --help)"),
    (["figure", "--spec", '{"title": "t"}', "--pdf", "f.pdf", "--csv", "f.csv"],  # was a KeyError: 'panels'
     "lnrepro figure: error: argument --spec: the JSON object has no 'panels', 'run_settings' "
     "(needs title, panels, run_settings) (see lnrepro figure --help)"),
    (["train", "--data", "d", "--out", "o", "--compile", "ture"],  # was taken as false
     "lnrepro train: error: argument --compile: 'ture' is not a boolean (true/false, 1/0, yes/no) "
     "(see lnrepro train --help)"),
    (["admin-tables", "--table", "1", "--spec", '{"table1": {}}', "--csv", "t.csv", "--md", "t.md"],
     "lnrepro admin-tables: error: --table 1 needs --vanishing (the summary CSV of lnrepro gradient-vanishing)"),
    (["finetune", "--checkpoint", "run/last.pt", "--data", "d", "--task", "rte", "--out", "o"],  # was int('last')
     "lnrepro finetune: error: argument --checkpoint: 'run/last.pt' is not a round checkpoint (checkpoints/epochN.pt) "
     "(see lnrepro finetune --help)"),
], ids=["figure_without_metrics", "train_without_data", "spec_not_json", "spec_file_missing", "spec_without_panels", "bool_typo",
        "table1_without_vanishing", "finetune_not_a_round"])
def test_a_missing_or_wrong_input_is_one_line(argv, message, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert one_line_error(argv, capsys) == message.replace("{tmp}", str(tmp_path))


def test_a_missing_file_in_a_folder_that_exists_is_an_input_not_made_yet(tmp_path, capsys):
    (tmp_path / "bin").mkdir()
    assert one_line_error(["train", "--data", f"{tmp_path}/bin", "--out", f"{tmp_path}/run"], capsys) == (
        f"lnrepro train: error: {tmp_path}/bin/dict.txt: no such file or directory "
        "(run the step that writes it first, e.g. via snakemake)")


@pytest.mark.parametrize("text, value", [("true", True), ("True", True), ("1", True), ("yes", True),
                                         ("false", False), ("False", False), ("0", False), ("no", False)])
def test_booleans_are_parsed_strictly(text, value):
    assert str2bool(text) is value  # True/False: what Snakemake's params write


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_boolean_option_uses_the_strict_parser(command):
    """A BOOL flag with its own lenient parser took `--bf16 ture` as false."""
    lenient = [a.option_strings for a in subparser(command)._actions
               if (a.metavar == "BOOL" or a.type is bool) and a.type is not str2bool]
    assert lenient == []


def import_edges(module, path, modules, package):
    """The lnrepro modules one module imports (at its top or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names}
    return (found & set(modules)) - {module}


def test_no_module_imports_itself_through_others():
    """Issue 43: zero import circles (args <-> training.retain and claims <-> claims_matrix were two)."""
    src = ROOT / "src"
    modules = {}
    for path in (src / "lnrepro").rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = (path, name if parts[-1] == "__init__" else name.rsplit(".", 1)[0])
    graph = {m: import_edges(m, path, modules, package) for m, (path, package) in modules.items()}
    done, circles = set(), []

    def visit(module, stack):
        for other in sorted(graph[module]):
            if other in stack:
                circles.append(stack[stack.index(other):] + [other])
            elif other not in done:
                visit(other, stack + [other])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert len(graph) > 100 and not circles, circles


def test_the_layout_doc_names_every_command_rule_file_and_core_module():
    """docs/layout.md's Layout and command list are what the tree holds (they went stale before)."""
    layout = (ROOT / "docs" / "layout.md").read_text()
    names = {f"`{c}`" for c in COMMANDS} | {p.name for p in (ROOT / "workflow" / "rules").glob("*.smk")}
    names |= {p.stem for p in (ROOT / "src" / "lnrepro" / "core").glob("*.py") if p.stem != "__init__"}
    missing = {n for n in names if n not in layout}
    assert not missing, f"docs/layout.md does not name: {sorted(missing)}"
