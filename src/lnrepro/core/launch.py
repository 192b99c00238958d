"""Start one training on the processes its run asks for: ``nodes`` x ``gpus`` per node.

``gpus`` is processes per node: one per GPU, or CPU worker processes (gloo) with device cpu.

- 1 process: the caller trains in its own process (``command`` returns None).
- several on one node: ``torchrun --standalone`` starts them here.
- several nodes inside a SLURM job: ``srun`` starts one torchrun agent per node; the agents meet
  at a c10d rendezvous on the job's first node.
- several nodes outside SLURM: all nodes x gpus processes start here. The numbers depend on the
  number of processes, not on where they run, so a cluster run can be reproduced on one machine.

The trainer reads torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK); see processes.Distributed.
"""
import os
import re
import shlex
import subprocess
import sys


def log(msg):
    print(f"launch: {msg}", file=sys.stderr, flush=True)


def torchrun(*args):
    return [sys.executable, "-m", "torch.distributed.run", *args]


def scontrol(*args):
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, check=True).stdout


def first_node_address(job_id):
    """Where the rendezvous lives: the first node of the job (its NodeAddr, as SLURM reaches it).

    Looked up with scontrol, because Snakemake's SLURM job step removes SLURM_JOB_NODELIST and
    friends from the environment of the command it runs (it keeps SLURM_JOB_ID)."""
    nodelist = re.search(r"\bNodeList=(\S+)", scontrol("show", "job", "-o", job_id)).group(1)
    first = scontrol("show", "hostnames", nodelist).split()[0]
    addr = re.search(r"\bNodeAddr=(\S+)", scontrol("show", "node", "-o", first))
    return addr.group(1) if addr else first


def rendezvous_port(job_id):
    """One port per job, so two jobs sharing a node do not meet each other."""
    return int(os.environ.get("LNREPRO_RDZV_PORT", 20000 + int(job_id) % 20000))


def command(nodes, procs, threads, train_args, env=os.environ, subcommand="train"):
    """The command that runs ``lnrepro SUBCOMMAND TRAIN_ARGS`` (train or pretrain) on nodes x procs
    processes with ``threads`` CPU threads per node, or None when this one process should train."""
    world = nodes * procs
    if world == 1:
        return None
    job_id = env.get("SLURM_JOB_ID")
    here = procs if nodes > 1 and job_id else world  # processes sharing this node's threads
    worker = ["-m", "lnrepro.cli", subcommand, *train_args, "--threads", str(max(1, threads // here))]
    if nodes > 1 and job_id:
        host = first_node_address(job_id)
        port = rendezvous_port(job_id)
        log(f"SLURM job {job_id}: {nodes} node(s) x {procs} process(es), rendezvous {host}:{port}")
        return ["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1",
                f"--cpus-per-task={threads}", "--kill-on-bad-exit=1",
                *torchrun(f"--nnodes={nodes}", f"--nproc-per-node={procs}", "--rdzv-backend=c10d",
                          f"--rdzv-endpoint={host}:{port}", f"--rdzv-id=lnrepro-{job_id}"), *worker]
    if nodes > 1:
        log(f"not in a SLURM job: running all {nodes} x {procs} processes on this machine")
    return torchrun("--standalone", f"--nproc-per-node={world}", *worker)


def describe_slurm(env=os.environ):
    """One log line saying where a SLURM job runs and which GPUs it was given (None outside)."""
    if "SLURM_JOB_ID" not in env:
        return None
    node = env.get("SLURMD_NODENAME", "?")
    gpus = env.get("CUDA_VISIBLE_DEVICES") or "none"
    return f"SLURM job {env['SLURM_JOB_ID']} on node {node}, GPUs allocated (CUDA_VISIBLE_DEVICES): {gpus}"


def run(nodes, procs, threads, train_args, subcommand="train"):
    """Replace this process by the multi-process launch (signals such as SLURM's SIGTERM at a
    time limit then reach torchrun/srun directly); returns False when there is nothing to launch."""
    slurm = describe_slurm()
    if slurm:
        log(slurm)
    cmd = command(nodes, procs, threads, train_args, subcommand=subcommand)
    if cmd is None:
        return False
    log(shlex.join(cmd))
    if cmd[0] != "srun":  # workers here watch the process that started this one (processes.ParentWatch);
        os.environ["LNREPRO_LAUNCHER_PID"] = str(os.getppid())  # srun's tasks on other nodes cannot
    os.execvp(cmd[0], cmd)
