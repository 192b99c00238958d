"""Reproduce Xiong et al. 2020 (Pre-LN vs Post-LN) and Liu et al. 2020 (Admin).

cli.py maps each `lnrepro` subcommand to its module. The modules, bottom up:
- settings.py: what a run's settings are (the trainers' defaults, the norm pairs the model builds,
  what each stage reads of a run, a run's settings as flags); torch-free, the workflow imports it;
- core/: the library every stage shares (data formats, the models, Admin's omega, the training
  loop and the translation task on it, beam search, BLEU, multi-process launch); no commands;
- prepare/: data preparation, one command module per step, and the demo's grammar;
- training/: the commands that train and score models (train, admin-profile, pretrain,
  finetune, evaluate, bench, gpu-check);
- analyses/: the papers' figures, probes, theory checks, tables and claims, one command module
  each, with the helpers they share (plotting, probing, outcomes).
"""

__version__ = "0.1.0"
