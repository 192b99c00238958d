"""How the workflow says what is wrong with a config: one line (and a few of detail), then it stops
before any job runs; and notes, said once when the DAG is planned."""
import difflib
import os
import sys


class ConfigErrors:
    def __init__(self, workflow):
        self.workflow = workflow  # a note is said by the main process only
    NAMES_SHOWN = 6  # config/config.yaml has 46 runs: a list of them all hides the one line that matters

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
