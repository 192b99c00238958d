"""What every `lnrepro` command shares to refuse an input: argument types whose wrong value is the
one line `lnrepro CMD: error: argument --flag: ...` (cli.Parser), exit 2, and the same line for what
only a command's run() finds; never a traceback or a silent default."""
import argparse
import json
import os
import sys

TRUE, FALSE = ("1", "true", "yes"), ("0", "false", "no")


def str2bool(text):
    """true/false, 1/0, yes/no in any case (Snakemake's params pass Python's True/False). Anything
    else is an error: a lenient parser took a typo such as `ture` as false."""
    word = str(text).strip().lower()
    if word in TRUE or word in FALSE:
        return word in TRUE
    raise argparse.ArgumentTypeError(f"'{text}' is not a boolean (true/false, 1/0, yes/no)")


def json_object(*required):
    """An argparse type: a JSON object (the workflow's --spec) holding the keys `required`, given as
    the text itself or as @FILE (the workflow passes a long one so: lnrepro.pipeline.spec_argument);
    a typo, e.g. a file name without its @, is named here instead of a KeyError deep inside.
    It returns the JSON text: run() parses it, also when a test calls run() with a Namespace."""
    def parse(text):
        if text.startswith("@"):
            text = read_text_file(text[1:])
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise argparse.ArgumentTypeError(f"not JSON ({e.msg} at char {e.pos}): give the JSON text itself "
                                             f"or @FILE, not a file name: {text[:60]!r}") from None
        if not isinstance(value, dict):
            raise argparse.ArgumentTypeError(f"a JSON object {{...}} is needed, not {type(value).__name__}")
        missing = [k for k in required if k not in value]
        if missing:
            raise argparse.ArgumentTypeError(f"the JSON object has no {', '.join(map(repr, missing))} "
                                             f"(needs {', '.join(required)})")
        return text
    parse.__name__ = "JSON"  # argparse names the type in its messages
    return parse


def read_text_file(path):
    """A file's text for an argument given as @FILE; a missing or unreadable one is argparse's one line."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise argparse.ArgumentTypeError(f"@{path}: {reason} (a long spec the workflow wrote when it planned "
                                         f"the job: plan it again)") from None


def add_scale_note_argument(p):
    """Every figure command's --scale-note: the config's `scale_note` (the demo's), drawn under the title."""
    p.add_argument("--scale-note", default=None,
                   help="a line under the title saying the figure is drawn from a config that scales the papers "
                        "(the demo's scale_note); none if left out")


def usage_error(command, message):
    """argparse's one line and exit status, for what only run() can check."""
    print(f"lnrepro {command}: error: {message}", file=sys.stderr)
    sys.exit(2)


def missing_input(command, error):
    """`lnrepro CMD: error: PATH: no such file or directory`: a command run by hand before the step
    that writes its input, or with an output in a folder that does not exist (Snakemake makes the
    folders of a rule's outputs; by hand nobody does). An error of our own (no filename) already says
    what is missing. A checkpoint that checkpoint retention deleted says so and how to get it back."""
    if not error.filename:
        usage_error(command, str(error))
    from lnrepro.retention import deleted_note

    retained = deleted_note(error.filename)  # a checkpoint deleted once its steps had read it
    if retained:
        usage_error(command, retained)
    advice = "run the step that writes it first, e.g. via snakemake"
    if not os.path.isdir(os.path.dirname(os.path.abspath(error.filename))):
        advice = f"nor its folder: an input, {advice}; an output, create its folder"
    usage_error(command, f"{error.filename}: no such file or directory ({advice})")


# ---- the files a command reads, given one by one as RUN=PATH (the workflow renders them from the
# same mapping as its rule's input: lnrepro.pipeline.run_pairs) ----
def run_path_pair(text):
    """An argparse type: RUN=PATH (a key with '=' in it is not a run name: the first '=' splits)."""
    key, sep, path = text.partition("=")
    if not sep or not key or not path:
        raise argparse.ArgumentTypeError(f"expected RUN=PATH, got {text!r}")
    return key, path


def add_run_files_argument(p, flag, what, key="RUN"):
    """A repeatable `--flag KEY=PATH ...` (each flag may be given again: its pairs add up)."""
    p.add_argument(f"--{flag}", nargs="+", action="extend", default=[], type=run_path_pair, metavar=f"{key}=PATH",
                   help=f"{what}, one {key}=PATH per run")


class RunFiles:
    """The files a command was given, by flag and run: `files("metrics", run)` is the path given as
    `--metrics RUN=PATH`. A run its spec needs but no file was given for, or one given two different
    files, is the command's one-line error naming the run and the flag (exit 2): a command never
    looks for a file it was not given."""

    def __init__(self, command, **given):
        self.command = command
        self.given = {}
        for flag, pairs in given.items():
            files = self.given[flag] = {}
            for run, path in pairs.items() if isinstance(pairs, dict) else pairs or ():
                if files.get(run, path) != path:
                    usage_error(command, f"argument --{flag}: {run} is given twice ({files[run]}, {path})")
                files[run] = path

    def __call__(self, flag, run):
        path = self.given.get(flag, {}).get(run)
        if path is None:
            usage_error(self.command, f"argument --{flag}: no file given for {run} (its spec reads it: add {run}=PATH)")
        return path

    def require(self, flag, runs):
        """Refuse at once any of `runs` without a file under --flag, before anything is read or drawn."""
        for run in runs:
            self(flag, run)

    def paths(self):
        """Every file given, each once, in the order given."""
        return list(dict.fromkeys(path for files in self.given.values() for path in files.values()))
