"""A trainer's processes: torchrun's workers (Distributed; rank 0 writes) and the watch on the process
that started the run (ParentWatch), so a trainer whose Snakemake or launcher died stops rather than
run on beside a rerun. core.launch starts the workers."""
import os

import torch
import torch.distributed as dist

from .device import pick_device


class ParentWatch:
    """Whether the process that started this run has died (Snakemake killed with -9, a job step gone):
    an orphan trainer would run on to its end while a rerun waits on the lock or races it. A dead
    parent shows as a changed os.getppid() (the orphan is re-parented), whatever thread or shell
    started it; the workers of a local torchrun launch also watch the process that ran `lnrepro
    train` (LAUNCHER_PID, set by core.launch), since their own parent, torchrun, lives on."""

    def __init__(self):
        self.parent = os.getppid()
        self.launcher = int(os.environ.get(LAUNCHER_PID, 0))

    def gone(self):
        """Why this run should stop, or None: one getppid() call (and a /proc read for a launcher)."""
        if os.getppid() != self.parent:
            return f"its parent process {self.parent} died"
        if self.launcher and not alive(self.launcher):
            return f"the process that launched it ({self.launcher}) died"
        return None


LAUNCHER_PID = "LNREPRO_LAUNCHER_PID"


def alive(pid):
    """Whether pid runs (a zombie, killed but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


class Distributed:
    """torchrun's environment: one process per GPU (or CPU worker with gloo); rank 0 writes."""

    def __init__(self, device_name):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.device = pick_device(device_name)
        if self.world > 1:
            if self.device.type == "cuda":
                self.device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
                torch.cuda.set_device(self.device)
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")

    def wrap(self, model):
        if self.world == 1:
            return model
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=[self.device] if self.device.type == "cuda" else None)

    def total(self, value):
        """Sum of a local tensor over all workers."""
        if self.world > 1:
            value = value.clone()
            dist.all_reduce(value)
        return value

    def barrier(self):
        if self.world > 1:
            dist.barrier()

    def close(self):
        if self.world > 1:
            dist.destroy_process_group()
