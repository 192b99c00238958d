# Reproduce Xiong et al. 2020 (Pre-LN vs Post-LN) and Liu et al. 2020 (Admin): every figure a target.
#   snakemake --cores 2                                    # the embedded demo (config/demo.yaml)
#   snakemake --configfile config/config.yaml --cores 8    # the papers' settings
#   snakemake results/plan.md --configfile config/config.yaml --cores 1   # their cost first: GPU-hours, disk
import glob
import os
import sys

from snakemake.utils import min_version

min_version("9.0")
sys.path.insert(0, f"{workflow.basedir}/workflow/lib")
# the rule files ask lnrepro.pipeline about the config (P, made in common.smk): a checkout's
# own package first, so its workflow and its package never disagree (an installed one where there is none)
if os.path.isdir(f"{workflow.basedir}/src/lnrepro"):
    sys.path.insert(0, f"{workflow.basedir}/src")
from run_progress import Progress  # noqa: E402  the terminal's progress lines and the summary at the end
from lnrepro.pipeline.ownership import claim_planned_outputs  # noqa: E402

# --configfile replaces the demo instead of being merged into it
if not workflow.overwrite_configfiles:
    if not os.path.exists("config/demo.yaml"):  # e.g. -d elsewhere: one line, not a WorkflowError
        configs = sorted(glob.glob(f"{workflow.basedir}/config/*.yaml"))  # but claims.yaml, which no run reads
        sys.exit(f"config: no --configfile, and the default config/demo.yaml is not in {os.getcwd()}; "
                 f"name one: --configfile {' | '.join(c for c in configs if os.path.basename(c) != 'claims.yaml')}")

    configfile: "config/demo.yaml"


report: "workflow/report/workflow.rst"


envvars:
    "PATH",


# Each rule file holds its rules; what they ask of the config is P (lnrepro.pipeline, one part per
# rule file: P.admin, P.data, ...), which common.smk makes and validates once (P.validate: the schema,
# one line per error, then the runs, corpora, downloads and BERT data); P.check_plan() below checks
# the sections only some targets read (lnrepro.pipeline.sections) where the plan is rule all's, and
# the targets named. With several config errors, the first one reported follows this order.
include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/bert_data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/admin.smk"
include: "workflow/rules/bert.smk"
include: "workflow/rules/sweeps.smk"
include: "workflow/rules/retention.smk"
include: "workflow/rules/plan.smk"


rule all:
    input:
        P.default_targets,
    default_target: True


P.check_plan()  # the sections rule all reads, the targets named; then notes


# in the main process of a real run only (not -n, not the jobs Snakemake or a cluster starts)
progress = Progress()


onstart:
    claim_planned_outputs(workflow)  # another config's results in this checkout stop the run, before any job
    progress.start()


onsuccess:
    progress.finished(workflow, P.default_targets())


onerror:
    progress.failed(workflow)
