"""How a rule hands its command the files it declares: one mapping {flag: {run: path}} per rule (the
rule's method), whose paths are the rule's `input:` (input_lists) and whose pairs are the command's
`--flag RUN=PATH ...` (flag_pairs), so the rule and its command cannot disagree on a file. The
commands parse them with lnrepro.args.run_path_pair."""
import shlex


def quoted_pairs(files):
    """RUN=PATH of each {run: path}, quoted for the shell, in the mapping's order."""
    return " ".join(shlex.quote(f"{run}={path}") for run, path in files.items())


def flag_pairs(files):
    """`--flag RUN=PATH ...` of each flag that has files (a flag with none is left out)."""
    return " ".join(f"--{flag} {quoted_pairs(pairs)}" for flag, pairs in files.items() if pairs)


def input_lists(files):
    """The rule's input: each flag's paths, a named list."""
    return {flag: list(pairs.values()) for flag, pairs in files.items()}
