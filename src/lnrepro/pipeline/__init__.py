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
from lnrepro.pipeline.theory import Theory
from lnrepro.pipeline.train import Train


class Pipeline(Common, Resources, Download, Data, BertData, Train, Evaluate, Figures, Probe, Theory, Claims, Admin,
               Bert, Retention, Plan, CheckpointReads):
    """The config (after the schema filled in its defaults) and the Snakemake workflow it belongs to
    (its folder, whether this is the main process, its rules, its checkpoint rules: train and pretrain).
    A part's methods call any part's."""

    def __init__(self, config, workflow, checkpoints=None):
        self.config = config
        self.workflow = workflow
        self.checkpoints = checkpoints
