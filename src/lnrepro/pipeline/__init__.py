"""What the workflow asks of its config while Snakemake parses it: config checks (one line per
error, before any job), run settings, paths, and each job's inputs and flags. One part per rule
file (`workflow/rules/<part>.smk` -> `lnrepro.pipeline.<part>`), all on one object, `Pipeline`:
the rule files hold rules and call `P.<name>`; these modules can be tested without Snakemake
running (tests/test_pipeline.py). Torch-free, like lnrepro.settings, which decides the settings."""
from lnrepro.pipeline.admin import Admin
from lnrepro.pipeline.bert import Bert
from lnrepro.pipeline.bert_data import BertData
from lnrepro.pipeline.checkpoint_reads import CheckpointReads
from lnrepro.pipeline.claims import Claims
from lnrepro.pipeline.common import Common
from lnrepro.pipeline.data import Data
from lnrepro.pipeline.download import Download
from lnrepro.pipeline.evaluate import Evaluate
from lnrepro.pipeline.figures import Figures
from lnrepro.pipeline.plan import Plan
from lnrepro.pipeline.probe import Probe
from lnrepro.pipeline.resources import Resources
from lnrepro.pipeline.retention import Retention
from lnrepro.pipeline.scale_note import ScaleNote
from lnrepro.pipeline.sweeps import Sweeps
from lnrepro.pipeline.theory import Theory
from lnrepro.pipeline.train import Train


class Pipeline(Common, Resources, Download, Data, BertData, Train, Evaluate, Figures, Probe, Theory, Claims, Admin,
               Bert, Retention, Plan, CheckpointReads, ScaleNote, Sweeps):
    """The config (after the schema filled in its defaults) and the Snakemake workflow it belongs to
    (its folder, whether this is the main process, its rules, its checkpoint rules: train and pretrain).
    A part's methods call any part's."""

    # the sections only some targets read: checked as the Snakefile is read where it plans rule all
    # (check_sections), else the first time a job of the plan reads one (its accessor calls `checked`),
    # so planning results/figures/fig4.pdf does not stop at an error of the admin: section. The schema,
    # the runs, corpora and BERT data are checked as the rule files are read (common.smk,
    # bert_data.smk): every target's wildcards and downloads read them
    SECTION_CHECKS = {"probe": ("check_probe_config",),  # in the order of the Snakefile's includes
                      "claims": ("check_claims_config",),
                      "admin": ("check_admin_config", "check_admin_run_settings"),
                      "bert": ("check_bert_config", "check_bert_trainable")}

    def __init__(self, config, workflow, checkpoints=None):
        self.config = config
        self.workflow = workflow
        self.checkpoints = checkpoints
        self.sections_checked = set()

    def checked(self, section):
        """Run the section's checks once: one line and exit (config_error) at the first error."""
        if section not in self.sections_checked:
            self.sections_checked.add(section)  # first: a check reads the section through its accessor
            for check in self.SECTION_CHECKS[section]:
                getattr(self, check)()

    def check_sections(self):
        """Before any job: every section where the plan is rule all's (no target named). A section
        checked later, in planning, prints its line after Snakemake's banner."""
        if not self.requested_targets():
            for section in self.SECTION_CHECKS:
                self.checked(section)

    def default_targets(self, wildcards=None):
        """rule all's inputs: every figure, table and check of the config (an input function, so a
        named target plans without them)."""
        return [*self.figure_targets(), *self.probe_targets(), *self.theory_targets(), *self.claims_targets(),
                *self.admin_targets(), *self.bert_targets(), *self.retention_targets()]
