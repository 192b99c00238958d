"""Provenance: which code, package versions and settings made a result file.

Each result a figure, table or claim reads gets a sidecar ``<file>.provenance.json`` (``cli.main``
writes it after a command succeeds; the result files themselves stay byte for byte what they were):
the lnrepro version, the git commit of the checkout the package was imported from and whether it
was dirty, the torch, sacrebleu and Python versions, the command line, a sha256 digest of the
command's settings (its parsed arguments but where the results go), the time and the result's own
sha256 (a result rewritten later by other means no longer matches its record). Recording never fails the job: what cannot be found is 'unknown'.

Dirty means a tracked file under src/, workflow/, config/ or the Snakefile differs from the commit
(what makes a result: the code, the rules and the configs); tests, docs and untracked files (a
user's own config, whose values the settings digest covers) do not count.
"""
import datetime
import fnmatch
import functools
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

SIDECAR_SUFFIX = ".provenance.json"
DIRTY_PATHS = ("src", "workflow", "config", "Snakefile")
UNKNOWN = "unknown"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/lnrepro
NO_PROVENANCE, OTHER_COMMIT, DIRTY = "no provenance", "other commit", "dirty"
CHANGED = "changed since its provenance was recorded"
DIRTY_TEXT = f"{DIRTY} (uncommitted changes under {', '.join(DIRTY_PATHS)})"


def sidecar_path(result):
    return Path(f"{result}{SIDECAR_SUFFIX}")


def git(repo, *args):
    """git's stdout, or None where git is missing, fails or hangs (never an exception)."""
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


@functools.cache
def source_state(package_dir=PACKAGE_DIR):
    """{'commit', 'dirty'} of the checkout holding package_dir as its src/<package>; 'unknown' for
    both elsewhere (an installed wheel, even one inside a venv inside a checkout, is not that code)."""
    package_dir = Path(package_dir).resolve()
    top = git(package_dir, "rev-parse", "--show-toplevel")
    if not top or Path(top).resolve() / "src" / package_dir.name != package_dir:
        return {"commit": UNKNOWN, "dirty": UNKNOWN}
    commit = git(top, "rev-parse", "HEAD")
    changes = git(top, "status", "--porcelain", "--untracked-files=no", "--", *DIRTY_PATHS)
    return {"commit": commit or UNKNOWN, "dirty": UNKNOWN if changes is None else bool(changes)}


def package_version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return UNKNOWN


def versions():
    from lnrepro import __version__  # the imported code's own, which may not be the installed metadata's
    return {"lnrepro": __version__, "torch": package_version("torch"), "sacrebleu": package_version("sacrebleu"),
            "python": platform.python_version()}


def canonical(value):
    """A setting as JSON compares it: a JSON object given as text (a rule's --spec) by its content."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def settings_digest(settings):
    """sha256 of the settings as parsed (flag order, spelling of numbers and defaults left out or
    given do not change it; any value does)."""
    text = json.dumps({k: canonical(v) for k, v in settings.items()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def current():
    """The code running now: versions, commit and dirty flag."""
    return {**versions(), **source_state()}


def record(command, argv, settings):
    return {**current(), "command": command, "command_line": shlex.join(["lnrepro", *map(str, argv)]),
            "settings_sha256": settings_digest(settings),
            "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def file_digest(path):
    """sha256 of a result's bytes (CSVs and PDFs of a few MB at most)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_sidecars(results, entry):
    """One sidecar per result file that exists; written atomically, so a reader never sees half."""
    for result in results:
        if not os.path.isfile(result):
            continue
        path = sidecar_path(result)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one per writer: none renames another's
        own = {"result": os.path.basename(result), "result_sha256": file_digest(result)}
        tmp.write_text(json.dumps({**entry, **own}, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def record_results(command, argv, settings, results):
    """write_sidecars of a finished command; a failure is a warning, never the job's failure."""
    try:
        write_sidecars(results, record(command, argv, settings))
    except Exception as e:  # noqa: BLE001  provenance is a record of the job, not part of its result
        print(f"lnrepro {command}: warning: provenance not recorded: {e}", file=sys.stderr)


def read(result):
    """The sidecar of a result file, or None where it has none (made before provenance, or by hand)."""
    try:
        return json.loads(sidecar_path(result).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def short(commit):
    return commit[:10] if commit and commit != UNKNOWN else UNKNOWN


def concern(entry, commit, result=None):
    """Why a result's provenance is not the given commit's clean code ('' where it is); with the
    result's path, also where the file is no longer the one recorded (rewritten by other means)."""
    if entry is None:
        return NO_PROVENANCE
    if result is not None and entry.get("result_sha256") not in (None, file_digest(result)):
        return CHANGED
    if UNKNOWN in (entry.get("commit"), commit):  # either was not a git checkout: nothing to compare
        return "commit unknown"
    if entry.get("commit") != commit:
        return f"{OTHER_COMMIT} {short(entry.get('commit'))}"
    if entry.get("dirty") is not False:
        return DIRTY_TEXT
    return ""


# What a results folder holds without a record of its own: checkpoints (their run's metrics.csv is
# recorded), a run's live progress and lock, the folder's README, the records themselves; and
# prepared data (results/data/), which no command records yet
UNRECORDED = ("*" + SIDECAR_SUFFIX, "*.pt", "progress.csv", ".lnrepro.lock", "README.md")


DELETED, MISSING = "deleted since its provenance was recorded", "missing"


def is_recorded_kind(relative):
    """Whether the command that writes a file of the results folder (its path relative to the folder)
    records it: anything outside the prepared data but the UNRECORDED kinds."""
    relative = Path(relative)
    return relative.parts[0] not in ("data", os.pardir) and not any(fnmatch.fnmatch(relative.name, pattern)
                                                                    for pattern in UNRECORDED)


def recorded_results(results_dir):
    """Every file under results_dir (relative to it) that the command which wrote it records: a result
    found there without its record was made, or changed, by something else."""
    results_dir = Path(results_dir)
    return sorted(p.relative_to(results_dir) for p in results_dir.rglob("*")
                  if p.is_file() and is_recorded_kind(p.relative_to(results_dir)))


def foreign_results(results_dir, commit, required=()):
    """(result, why) of every result under results_dir whose sidecar is not commit's clean code, and
    of each `required` result (relative to results_dir) that has no sidecar at all."""
    results_dir = Path(results_dir)
    results = {Path(str(p)[:-len(SIDECAR_SUFFIX)]) for p in results_dir.rglob(f"*{SIDECAR_SUFFIX}")}
    results |= {results_dir / r for r in required}
    flagged = [(path, concern(read(path), commit, path) if path.exists() else DELETED if read(path) else MISSING)
               for path in sorted(results)]
    return [(path, why) for path, why in flagged if why]


# ---- what a figure or table was drawn from: the results its command opened for reading ----
_inputs_read = None  # the paths, once watch_reads() has run in this process


def watch_reads():
    """Note every file this process opens for reading from now on (PEP 578's 'open' audit event, which
    builtins.open, io.open and os.open raise): what a figure or table was drawn from, however its
    command found the files. Audit hooks cannot be removed: the CLI installs it once per process."""
    global _inputs_read
    if _inputs_read is not None:
        return
    _inputs_read = set()

    def hook(event, args):
        if event != "open" or not isinstance(args[0], (str, os.PathLike)):
            return
        mode, flags = args[1], args[2]
        reading = ("r" in mode and "+" not in mode) if mode else (flags & os.O_ACCMODE) == os.O_RDONLY
        if reading:
            _inputs_read.add(os.path.abspath(args[0]))
    sys.addaudithook(hook)


UNTRUSTED = (NO_PROVENANCE, CHANGED)  # what a figure marks: made by hand or edited since (not another commit's)


def untrusted_inputs(results_dir="results"):
    """(path, why) of each result read so far (watch_reads) that has no record or changed since it was
    recorded; none where nothing is watched (a command called from Python, e.g. by a test)."""
    if not _inputs_read:
        return []
    folder = os.path.realpath(results_dir)  # once, not per file read
    read_results = sorted(p for p in _inputs_read
                          if os.path.isfile(p) and is_recorded_kind(os.path.relpath(os.path.realpath(p), folder)))
    flagged = [(os.path.relpath(p), concern(read(p), UNKNOWN, p)) for p in read_results]
    return [(path, why) for path, why in flagged if why in UNTRUSTED]


def untrusted_inputs_mark(results_dir="results", shown=2):
    """One line for a figure or table drawn from untrusted inputs ('' where none): how many, the
    first ones; the job's log (stderr) gets it too, with every one."""
    flagged = untrusted_inputs(results_dir)
    if not flagged:
        return ""
    for path, why in flagged:
        print(f"warning: drawn from {path}: {why}", file=sys.stderr)
    named = "; ".join(f"{path}: {why}" for path, why in flagged[:shown])
    more = f"; and {len(flagged) - shown} more" if len(flagged) > shown else ""
    return f"UNRECORDED INPUT{'S' if len(flagged) > 1 else ''} ({len(flagged)}): {named}{more}"


TABLE_COLUMNS = ["result", "concern", "commit", "dirty", "lnrepro", "torch", "sacrebleu", "python", "command",
                 "settings_sha256", "time"]


def table(results, commit):
    """One row per result: its provenance and its concern against `commit` ('' where none)."""
    rows = []
    for result in results:
        entry = read(result)
        row = {k: (entry or {}).get(k, "") for k in TABLE_COLUMNS}
        row.update(result=str(result), commit=short(entry["commit"]) if entry else "",
                   concern=concern(entry, commit, result))
        rows.append(row)
    return rows


def describe(entry):
    """'lnrepro 0.1.0 at commit 1a2b3c4d5e (clean), torch 2.13.0, sacrebleu 2.6.0, Python 3.11.2'."""
    state = {True: "dirty", False: "clean"}.get(entry.get("dirty"), "dirty: unknown")
    return (f"lnrepro {entry.get('lnrepro')} at commit {short(entry.get('commit'))} ({state}), torch {entry.get('torch')}, "
            f"sacrebleu {entry.get('sacrebleu')}, Python {entry.get('python')}")


def markdown_section(rows, own):
    """claims.md's provenance: what made this table, what made its inputs, and each input not made
    by this commit's clean code."""
    lines = ["## Provenance", "", f"This table: {describe(own)}.", ""]
    made = {}
    for row in rows:
        who = "no provenance (made before it was recorded, or by hand)" if row["concern"] == NO_PROVENANCE else describe(row)
        made.setdefault(who, []).append(row)
    lines += [f"Its {len(rows)} input{'' if len(rows) == 1 else 's'} were made by:"] + [f"- {who}: {len(r)}" for who, r in sorted(made.items())]
    flagged = [row for row in rows if row["concern"]]
    if flagged:
        lines += ["", f"**{len(flagged)} of them not made by this commit's clean code:**", ""]
        lines += [f"- `{row['result']}`: {row['concern']}" for row in flagged]
    else:
        lines += ["", "Every input was made by this commit's clean code."]
    return "\n".join(lines) + "\n"
