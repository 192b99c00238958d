"""What the workflow asks of its config while Snakemake parses it: config checks (one line per
error, before any job), run settings, paths, and each job's inputs and flags. One part per rule file
(`workflow/rules/<part>.smk` -> `lnrepro.pipeline.<part>`), each an attribute of `Pipeline`, P in the
rule files: `P.admin.table_inputs("table2")` names the part that answers. A part receives the parts it
asks as its constructor's arguments, so the order below is their dependency order. Torch-free, like
lnrepro.settings, which decides the settings; testable without Snakemake (tests/test_pipeline.py)."""
import functools
import os
import sys
import textwrap

from lnrepro import paths
from lnrepro.pipeline.admin import Admin
from lnrepro.pipeline.bert import Bert
from lnrepro.pipeline.bert_data import BertData
from lnrepro.pipeline.checkpoint_reads import CheckpointReads
from lnrepro.pipeline.claims import Claims
from lnrepro.pipeline.config_checks import ConfigChecks
from lnrepro.pipeline.data import Data
from lnrepro.pipeline.download import Download
from lnrepro.pipeline.errors import ConfigErrors
from lnrepro.pipeline.evaluate import Evaluate
from lnrepro.pipeline.figures import Figures
from lnrepro.pipeline.plan import Plan
from lnrepro.pipeline.probe import Probe
from lnrepro.pipeline.products import products
from lnrepro.pipeline.resources import Resources
from lnrepro.pipeline.retention import Retention
from lnrepro.pipeline.runs import Runs
from lnrepro.pipeline.scale_note import ScaleNote
from lnrepro.pipeline.sections import Sections
from lnrepro.pipeline.sweeps import Sweeps
from lnrepro.pipeline.theory import Theory
from lnrepro.pipeline.train import Train
from lnrepro.pipeline.wildcards import names_regex


def rst_literal(text):
    """Config text as reStructuredText that renders exactly that text: one line (a directive such as
    `.. raw::` or `.. include::` needs a line of its own) and every character but a letter, digit or
    space escaped with a backslash (no role, link, substitution or inline markup)."""
    return "".join(c if c.isalnum() or c == " " else "\\" + c for c in " ".join(str(text).split()))


class Pipeline:
    """The config (after the schema filled in its defaults) and the Snakemake workflow it belongs to
    (its folder, whether this is the main process, its rules, its checkpoint rules: train and pretrain)."""

    def __init__(self, config, workflow, checkpoints=None):
        self.config, self.workflow, self.checkpoints = config, workflow, checkpoints
        self.errors = ConfigErrors(workflow)
        self.sections = Sections()
        self.runs = Runs(config, self.errors, self.sections)
        self.download = Download(config, self.errors)
        self.checks = ConfigChecks(config, workflow, self.errors, self.runs, self.download)
        self.sweeps = Sweeps(config, self.checks, self.errors)
        self.resources = Resources(config, self.runs)
        self.data = Data(config, self.download, self.runs)
        self.bert_data = BertData(config, self.download, self.errors, self.runs)
        self.train = Train(self.runs)
        self.evaluate = Evaluate(config, self.runs)
        self.figures = Figures(config, self.runs)
        self.probe = Probe(config, self.errors, self.runs, self.sections)
        self.theory = Theory(config, self.errors)
        self.claims = Claims(config, workflow, self.checks, self.errors, self.runs, self.sections)
        self.admin = Admin(config, self.errors, self.runs, self.sections)
        self.bert = Bert(config, self.errors, self.runs)
        self.checkpoint_reads = CheckpointReads(checkpoints, self.admin, self.probe, self.runs)
        self.retention = Retention(config, self.admin, self.bert, self.checkpoint_reads, self.claims, self.figures,
                                   self.probe, self.runs)
        self.plan = Plan(config, workflow, self.admin, self.bert, self.checkpoint_reads, self.errors, self.evaluate,
                         self.probe, self.resources, self.retention, self.runs, self.sweeps, self.train)
        self.scale_note = ScaleNote(config, self.admin, self.figures, self.probe, self.runs, self.sweeps)
        # the sections only some targets read, in the order of the Snakefile's includes (Sections)
        self.sections.register("probe", self.probe.check_probe_config)
        self.sections.register("claims", self.claims.check_claims_config)
        self.sections.register("admin", self.admin.check_admin_config, self.admin.check_admin_run_settings)
        self.sections.register("bert", self.bert.check_bert_config, self.checks.check_bert_trainable)

    names_regex = staticmethod(names_regex)  # the rule files' wildcard constraints

    def validate(self):
        """The checks every plan needs, once, as common.smk is read: the schema first (it fills in the
        defaults), then what it cannot say of the runs and corpora, the downloads' file names and the
        BERT data. With several config errors the first one is reported."""
        self.checks.validate_config()
        self.sweeps.expand_sweeps()  # a sweep's cells are runs from here on (lnrepro.pipeline.sweeps)
        self.checks.check_config()
        self.checks.check_trainable()
        self.download.collect_archives()
        self.bert_data.check_bert_data_config()

    def check_plan(self):
        """After rule all (check_targets reads the workflow's rules): where the plan is rule all's (no
        target named), every section only some targets read, before any job (a section checked later,
        in planning, prints its line after Snakemake's banner); a target no rule makes; then what is
        only noted: downloads without a sha256 or over http, values far outside the papers'."""
        if not self.requested_targets():
            self.sections.check_all()
        self.check_targets()
        self.download.note_unverified_downloads()
        self.plan.note_far_out_values()

    def default_targets(self, wildcards=None):
        """rule all's inputs: every figure, table and check of the config (an input function, so a
        named target plans without them)."""
        made = [t for product in products(self.config, self.claims) for t in product.targets]
        return made + self.retention.retention_targets()

    # ---- targets: one the config cannot make is named with those it can (Snakefile, after rule all) ----
    @functools.cache
    def requested_targets(self):
        """The targets on the command line. Snakemake 9 hands them to the DAG after parsing (its
        workflow.dag_settings is None here), so its own parser reads them again from the main process's
        argv; a job's process, or Snakemake called from Python, has no targets of a user's."""
        if not self.workflow.is_main_process or "snakemake" not in sys.argv[0]:
            return []
        if not any(os.path.normpath(a).startswith(f"{paths.RESULTS}{os.sep}") or self.maybe_bare_target(a) for a in sys.argv[1:]):
            return []  # no path check_targets looks at: spare the 0.2 s of building Snakemake's parser
        from snakemake.cli import get_argument_parser

        args, _ = get_argument_parser().parse_known_args(sys.argv[1:])
        return args.targets or []

    def report_caption(self, *path, got=None, table=None):
        """Params for a report caption: the title and paper text of the config section at path (a key
        may name a wildcard: "{fig}"), as reStructuredText that shows them literally (rst_literal);
        with `got`, what our numbers are, and `table`, the small CSV (a rule output, "{fig}" filled in)
        that shows them."""
        def caption(wildcards):
            values = dict(wildcards.items())
            section = self.config
            for key in path:
                section = section[key.format(**values)]
            text = {"title": rst_literal(section["title"]), "paper": rst_literal(section.get("paper", "(see the paper)"))}
            return {**text, "got": rst_literal(got), "table": table.format(**values)} if table else text
        return caption

    def maybe_bare_target(self, arg):
        """An argument that may be a target named without its folder (`fig4`): a word, no option or value."""
        return not arg.startswith("-") and os.sep not in arg and "=" not in arg and not arg.replace(".", "").isdigit()

    def check_targets(self):
        """A file under results/ no rule makes with this config (results/figures/fig99.pdf, a figure of
        another config): Snakemake's "No rule to produce" names no figure that exists; this names them.
        A figure or table named without its folder and suffix (`fig4`): Snakemake's MissingRuleException
        with its traceback; this names the file."""
        rule_names = {r.name for r in self.workflow.rules}
        for target in self.requested_targets():
            path = os.path.normpath(target)
            if (target in rule_names or os.path.exists(path) or any(r.is_producer(path) for r in self.workflow.rules)
                    or not (path.startswith(f"{paths.RESULTS}{os.sep}") or os.sep not in path)):
                continue
            made = sorted(t for t in self.default_targets() if t.startswith((paths.FIGURES, paths.TABLES))
                          and t.endswith((".pdf", ".md")))
            named = [t for t in made if os.path.splitext(os.path.basename(t))[0] == target]
            if os.sep not in path:
                if named:
                    self.errors.stop(f"target {target}: no rule of that name (did you mean '{named[0]}'?)")
                continue  # not one of ours: Snakemake's own message
            listed = "; ".join(f"{folder}/: {', '.join(os.path.basename(t) for t in made if os.path.dirname(t) == folder)}"
                               for folder in sorted({os.path.dirname(t) for t in made}))
            self.errors.stop(f"target {target}: no rule makes it with this config{self.errors.did_you_mean(path, made)}",
                             textwrap.wrap(f"this config's figures and tables: {listed or 'none'}", width=100, subsequent_indent="  "))
