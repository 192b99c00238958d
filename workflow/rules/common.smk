# The one object every rule file asks about its config: P, an lnrepro.pipeline.Pipeline (config
# checks, run settings, paths, each job's inputs and flags; one part per rule file, an attribute of
# P: P.data.tokenize_input names lnrepro.pipeline.data). This file runs the checks every plan needs,
# once (P.validate); the sections only some targets read are checked when a job reads them.
import os
import sys

from lnrepro import paths  # every results/ path (the rules' outputs too)
from lnrepro.pipeline import Pipeline
from lnrepro.settings import ADMIN_PROFILE_METHOD  # a param of the jobs that profile Admin models
from lnrepro.settings import SEPARATE_DICTS  # the per-side dictionaries' file names (data.smk's binarize_separate)

# Rules call `lnrepro`, installed beside the Python running Snakemake (.venv/bin): keep it on PATH
# even when the environment was not activated.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
P = Pipeline(config, workflow, checkpoints)
P.validate()  # the schema first: it fills in the defaults, so it comes before any other use of config


include: "resources.smk"


wildcard_constraints:
    corpus=P.names_regex(config["corpora"]),
    run=P.names_regex(list(config["runs"]) + P.runs.bert_runs()) or "NO_RUNS",
    fig=P.names_regex(config["figures"]) or "NO_FIGURES",
    side="src|tgt",
    merges="[0-9]+",


