# Reproduce Xiong et al. 2020 (Pre-LN vs Post-LN) and Liu et al. 2020 (Admin): every figure a target.
#   snakemake --cores 2                                    # the embedded demo (config/demo.yaml)
#   snakemake --configfile config/config.yaml --cores 8    # the papers' settings
from snakemake.utils import min_version, validate

min_version("9.0")

# --configfile replaces the demo instead of being merged into it
if not workflow.overwrite_configfiles:

    configfile: "config/demo.yaml"


validate(config, "workflow/schemas/config.schema.yaml")

envvars:
    "PATH",


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures.smk"


rule all:
    input:
        figure_targets(),
    default_target: True
