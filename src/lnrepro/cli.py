"""One command line, one subcommand per pipeline stage.

Each stage module defines ``add_arguments(parser)`` and ``run(args)``. ``main()`` only
dispatches, importing just the chosen stage (torch is slow to import).
"""
import argparse
import atexit
import importlib
import os
import shutil
import signal
import string
import sys
from pathlib import Path

# subcommand -> (module, help)
COMMANDS = {
    "generate": ("lnrepro.prepare.generate", "generate the demo corpora deterministically"),
    "download": ("lnrepro.prepare.download", "fetch a file (URL or path), verified by sha256, with retries"),
    "extract": ("lnrepro.prepare.extract", "verify and safely unpack a .tgz/.tar/.zip archive"),
    "prepare-iwslt14": ("lnrepro.prepare.iwslt", "IWSLT14 raw text from de-en.tgz (prepare-iwslt14.sh)"),
    "prepare-wmt14": ("lnrepro.prepare.wmt", "WMT14 raw text from its archives (prepare-wmt14en2de.sh)"),
    "prepare-local": ("lnrepro.prepare.local", "your own parallel text files as a corpus"),
    "copy-text": ("lnrepro.prepare.copy_text", "copy a text file (already tokenized corpora)"),
    "check-counts": ("lnrepro.prepare.counts", "compare prepared pair counts with the recipe's; warn"),
    "bench-prepare": ("lnrepro.prepare.bench", "lines/s of tokenization and BPE with 1 vs N processes"),
    "tokenize": ("lnrepro.prepare.tokenize", "Moses tokenization (sacremoses), parallel"),
    "clean": ("lnrepro.prepare.clean", "drop pairs by length and ratio (clean-corpus-n.perl)"),
    "lowercase": ("lnrepro.prepare.lowercase", "lowercase a text file"),
    "split-valid": ("lnrepro.prepare.split_valid", "every Nth line to valid (prepare-iwslt14.sh)"),
    "bpe-learn": ("lnrepro.prepare.bpe_learn", "learn joint BPE codes (subword-nmt)"),
    "bpe-apply": ("lnrepro.prepare.bpe_apply", "apply BPE codes, parallel"),
    "binarize": ("lnrepro.prepare.binarize", "joint dictionary and binarized tensors"),
    "prepare-wikipedia": ("lnrepro.prepare.wikipedia", "a MediaWiki XML dump as docs text (articles' plain paragraphs)"),
    "prepare-books": ("lnrepro.prepare.books", "a folder of *.txt books as docs text (the BookCorpus stand-in)"),
    "split-sentences": ("lnrepro.prepare.sentences", "docs text -> one sentence per line (spaCy sentencizer)"),
    "split-documents": ("lnrepro.prepare.split_documents", "documents split at random into train and valid, N:1"),
    "binarize-mono": ("lnrepro.prepare.binarize_mono", "BERT corpus dictionary (+<mask>) and sentence/document tensors"),
    "prepare-glue": ("lnrepro.prepare.glue", "GLUE MRPC/RTE train and dev pairs, normalized (labels 0/1)"),
    "binarize-pairs": ("lnrepro.prepare.binarize_pairs", "GLUE sentence pairs and labels as tensors"),
    "admin-profile": ("lnrepro.training.admin_profile", "Admin's profiling pass: omega per sublayer (Liu et al. 4.3)"),
    "train": ("lnrepro.training.train", "train one run; resumable; records divergence"),
    "pretrain": ("lnrepro.training.pretrain", "pre-train BERT (masked LM, optional NSP); resumable; records divergence"),
    "finetune": ("lnrepro.training.finetune", "fine-tune one BERT checkpoint on a GLUE task: grid x seeds, dev accuracy with 95% CI"),
    "evaluate": ("lnrepro.training.evaluate", "decode every epoch checkpoint and score BLEU"),
    "retain": ("lnrepro.training.retain", "delete a run's epoch checkpoints no later step reads; write what was kept"),
    "figure": ("lnrepro.analyses.figure", "draw one figure and write the CSV it plots"),
    "figure5": ("lnrepro.analyses.figure5", "draw Fig 5 (BERT valid loss, MRPC/RTE accuracy vs updates) and its CSV"),
    "probe-gradients": ("lnrepro.analyses.probe_gradients", "FFN gradient norms over mini-batches, at init or from a checkpoint (Fig 3)"),
    "plot-gradients": ("lnrepro.analyses.plot_gradients", "draw Fig 3 from the gradient probes and write its CSV"),
    "theory": ("lnrepro.analyses.theory", "check Lemmas 2-3, Theorem 1 and the concentration property numerically"),
    "claims": ("lnrepro.analyses.check_claims", "the claims table: each paper claim, our number, its paper and scaled verdicts"),
    "verdicts": ("lnrepro.analyses.verdicts", "write the demo's expected verdicts and docs/demo.md's table from claims.csv"),
    "gradient-vanishing": ("lnrepro.analyses.gradient_vanishing",
                           "per-sublayer gradient norms at init, per norm combination (Liu et al. Fig 5, Table 1)"),
    "output-change": ("lnrepro.analyses.output_change", "output change vs depth under a small parameter change (Liu et al. Fig 2)"),
    "layer-dependency": ("lnrepro.analyses.layer_dependency",
                         "beta_ij layer-dependency heatmaps at init and after training (Liu et al. Figs 7-8)"),
    "update-norms": ("lnrepro.analyses.update_norms",
                     "relative gradient and update norms of every attention/FFN matrix per epoch pair (Liu et al. Figs 3, 11)"),
    "admin-tables": ("lnrepro.analyses.admin_tables", "Liu et al. Tables 1 and 2 from the runs' metrics and BLEU"),
    "lr-grid": ("lnrepro.analyses.lr_grid", "no-warm-up lr x beta2 grid: converged/diverged and BLEU heatmap (Liu et al. Fig 10)"),
    "sweep-table": ("lnrepro.analyses.sweep_table", "a sweep's table: every cell's status and validation loss, from its runs' metrics"),
    "sweep-phase": ("lnrepro.analyses.sweep_phase", "a sweep's phase diagram: share of seeds failed per cell, a panel per scheme"),
    "sweep-thresholds": ("lnrepro.analyses.sweep_thresholds",
                         "a sweep's minimum warm-up or critical lr that trains, against depth, per scheme"),
    "sweep-lr-sensitivity": ("lnrepro.analyses.sweep_sensitivity",
                             "a sweep's mean excess loss over its lr grid, per scheme and depth"),
    "plan": ("lnrepro.analyses.plan", "the cost plan: trainings, decoding, probes, GPU/CPU hours, each job's runtime and disk per figure, table and run"),
    "bench": ("lnrepro.training.bench", "benchmark training/decoding speed against torch.nn.Transformer"),
    "gpu-check": ("lnrepro.training.gpu_check",
                  "one prepared check of the CUDA path at the papers' size: CUDA tests, fp16/bf16 training, decoding, bench, plan"),
}


# The result files each command writes that a figure, table or claim reads, as templates of its
# parsed arguments: main() records their provenance beside them (lnrepro.core.provenance). Data
# preparation, plan, verdicts and bench write none.
RESULTS = {
    "admin-profile": ("{omega_out}",),
    "train": ("{out}/metrics.csv",),
    "pretrain": ("{out}/metrics.csv",),
    "finetune": ("{out}", lambda args: importlib.import_module("lnrepro.training.finetune").summary_of(args.out)),
    "evaluate": ("{out}", lambda args: importlib.import_module("lnrepro.training.evaluate").own_hypotheses(
        Path(args.out).parent, args.average_last)),
    "figure": ("{pdf}", "{csv}", "{summary}"),
    "figure5": ("{pdf}", "{csv}"),
    "probe-gradients": ("{grads_out}", "{concentration_out}"),
    "plot-gradients": ("{pdf}", "{csv}", "{summary}"),
    "theory": ("{pdf}", "{csv}", "{checks}"),
    "claims": ("{csv}", "{md}", "{provenance_csv}"),
    "gradient-vanishing": ("{pdf}", "{csv}", "{summary}"),
    "output-change": ("{pdf}", "{csv}", "{fits}"),
    "layer-dependency": ("{pdf}", "{csv}", "{summary}"),
    "update-norms": ("{pdf}", "{csv}", "{summary}"),
    "admin-tables": ("{csv}", "{md}"),
    "lr-grid": ("{pdf}", "{csv}"),
    "sweep-table": ("{csv}",),
    "sweep-phase": ("{pdf}", "{csv}"),
    "sweep-thresholds": ("{pdf}", "{csv}"),
    "sweep-lr-sensitivity": ("{pdf}", "{csv}"),
}

# The commands that draw a figure or table from results: each marks the inputs it read that have no
# record or changed since theirs (lnrepro.core.provenance.watch_reads); the claims table lists its own.
DRAWN = {name for name, templates in RESULTS.items() if {"{pdf}", "{md}"} & set(templates)} - {"claims"}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends in its default, except where there is none to show: a required
    option, or a default of None or "" (the help says what leaving it out means)."""

    def _get_help_string(self, action):
        if action.required or action.default is None or action.default == "":
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """An error is one line, `lnrepro CMD: error: ...`, exit 2 as argparse's: not argparse's usage
    first, which for `lnrepro train` is 30 lines of flags above the one that says what is wrong."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(command=None):
    parser = Parser(prog="lnrepro", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text.replace("%", "%%"), description=help_text,
                           formatter_class=HelpFormatter)  # help is %-formatted
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(run=module.run)
    return parser


def stdout_file():
    """The regular file this process's stdout goes to (a rule's `> {log}`), or None (a terminal, a pipe)."""
    try:
        path = os.readlink("/proc/self/fd/1")
    except OSError:
        return None
    return path if os.path.isfile(path) else None


MAIN_PID = [0]  # the process whose command this is (set by main), not a worker forked from it


def keep_failed_log(log, outcome):
    """Snakemake deletes a job's log before each attempt, so a retried job lost the failed attempt's
    traceback: after a failure (an exception, a non-zero exit, SIGTERM as a SLURM cancel or time limit
    sends), its log is copied to LOG.failed, a file no rule declares, which the next attempt leaves."""
    if not outcome["failed"] or os.getpid() != MAIN_PID[0]:  # a forked worker's exit is not the command's
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        shutil.copyfile(log, f"{log}.failed")
    except OSError:  # the log is the job's record, not part of its result
        pass


def stop_on_sigterm(signum, frame):
    """SIGTERM ends the command as an exit (atexit runs: the failed attempt's log is kept), status 143.
    A forked worker (a multiprocessing pool's, which its pool ends with SIGTERM) dies as it would have."""
    if os.getpid() != MAIN_PID[0]:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    sys.exit(128 + signum)


def main(argv=None):
    """The command line (argv None: the process's own, where a failed attempt's log is kept) or argv."""
    log, outcome = stdout_file() if argv is None else None, {"failed": True}  # failed until it returns 0
    if log:
        MAIN_PID[0] = os.getpid()
        atexit.register(keep_failed_log, log, outcome)
        if RESULTS.keys() & set(sys.argv[1:2]):  # not data preparation's: its process pools end workers by SIGTERM
            signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        status = run_command(argv)
    except SystemExit as e:  # argparse's and ours: 0 (--help) is no failure
        outcome["failed"] = e.code not in (None, 0)
        raise
    outcome["failed"] = status != 0
    return status


def run_command(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    from lnrepro.args import missing_input
    from lnrepro.prepare import InputError
    if args.command in DRAWN:
        from lnrepro.core import provenance
        provenance.watch_reads()
    try:
        status = args.run(args) or 0
        if status == 0 and args.command in RESULTS:
            record_provenance(args, argv)
        return status
    except InputError as e:  # bad input (not UTF-8, empty): one line naming the file and line
        sys.exit(f"lnrepro {args.command}: ERROR: {e}")
    except FileNotFoundError as e:  # an input not made yet (a command run by hand): one line, as argparse's
        missing_input(args.command, e)


def template_fields(template):
    return {name for _, name, _, _ in string.Formatter().parse(template) if name} if isinstance(template, str) else set()


def result_files(templates, args):
    """The templates filled from args (a callable: its path or paths of args); one naming an option
    left out (None) names no file."""
    fields = vars(args)
    files = []
    for t in templates:
        if callable(t):
            paths = t(args)
            files += [str(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
        elif all(fields.get(name) is not None for name in template_fields(t)):
            files.append(t.format(**fields))
    return files + [str(Path(f).with_suffix(".png")) for f in files if f.endswith(".pdf")]  # save_figure's PNG beside


def record_provenance(args, argv):
    """The settings are the parsed arguments but where the results go: the same job writing
    elsewhere has the same digest."""
    from lnrepro.core import provenance
    if os.environ.get("RANK", "0") != "0":  # a DDP worker (torchrun's RANK): rank 0 records the run once
        return
    templates = RESULTS[args.command]
    outputs = set().union(*map(template_fields, templates))
    settings = {k: v for k, v in vars(args).items() if k not in outputs | {"run", "command"}}
    provenance.record_results(args.command, argv, settings, result_files(templates, args))


if __name__ == "__main__":
    sys.exit(main())
