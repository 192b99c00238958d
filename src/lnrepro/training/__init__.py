"""The commands that train and score models: train, admin-profile, pretrain, finetune, evaluate, bench,
gpu-check."""
