"""`lnrepro train`: one translation run (lnrepro.core.translation), resumable.

With --nodes/--gpus above 1, lnrepro.core.launch starts the processes, each running this command.
"""
from pathlib import Path

from ..core import launch
from ..core.config import config_args, config_from_args
from ..core.translation import TrainConfig, add_train_arguments, train


def add_arguments(p):
    add_train_arguments(p)


def run(args):
    cfg = config_from_args(TrainConfig, args)
    if launch.run(args.nodes, args.gpus, cfg.threads, ["--data", args.data, "--out", args.out] + config_args(cfg)):
        return 0  # not reached: the launch replaced this process
    return train(cfg, Path(args.data), Path(args.out))
