"""A real SLURM cluster on this machine for the tests: munged, slurmctld and two slurmd "nodes"
(n1, n2, both on localhost) with one fake GPU each (gres/gpu backed by /dev/null), and no
accounting database (Snakemake polls job states with squeue). Two nodes, so that a multi-node
training job really spans nodes. Debian's packages are installed when missing (apt-get, root).

    python tests/slurm/harness.py up       # start, or check it is up; prints sinfo
    python tests/slurm/harness.py down     # stop what `up` started and remove its files

Everything lives under /run/lnrepro-slurm (key, spool, logs, pid records) except slurm.conf and
gres.conf: they must be in /etc/slurm, because Snakemake's SLURM job step removes SLURM_CONF from
the environment of the `srun` it starts. A slurm.conf this harness did not write is never touched.
The daemons use their own ports and munge socket; each one started is recorded by pid and
executable, and `down` stops exactly those.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

STATE = Path("/run/lnrepro-slurm")
CONF_DIR = Path("/etc/slurm")
MARKER = "# written by lnrepro tests/slurm/harness.py"
PACKAGES = ("munge", "slurmctld", "slurmd", "slurm-client")
NODES = ("n1", "n2")
PARTITION = "debug"
CTLD_PORT, FIRST_SLURMD_PORT = 16817, 16818  # not SLURM's defaults: never meet a real cluster's
MUNGE_SOCKET = STATE / "munge" / "munge.socket"
RECORDS = STATE / "daemons.json"


def log(msg):
    print(f"[slurm harness {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(*cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


# ---- can it run here? ----------------------------------------------------------------------------
def missing_packages():
    def installed(p):
        out = run("dpkg-query", "-W", "-f=${Status}", p, check=False).stdout
        return "install ok installed" in out
    return [p for p in PACKAGES if not installed(p)]


def ours(path):
    return path.exists() and MARKER in path.read_text(errors="replace")


def unavailable():
    """Why a cluster cannot be started here, or None."""
    if not sys.platform.startswith("linux"):
        return "SLURM needs Linux"
    if os.geteuid() != 0:
        return "starting munged, slurmctld and slurmd needs root"
    if not shutil.which("dpkg-query"):
        return "not a Debian-like system (no dpkg-query)"
    if missing_packages() and not shutil.which("apt-get"):
        return f"packages {missing_packages()} are missing and there is no apt-get"
    conf = CONF_DIR / "slurm.conf"
    if conf.exists() and not ours(conf):
        return f"{conf} exists and was not written by this harness (another cluster?)"
    return None


def install():
    missing = missing_packages()
    if not missing:
        return
    log(f"apt-get install {' '.join(missing)}")
    policy = Path("/usr/sbin/policy-rc.d")  # keep the packages' scripts from starting daemons
    temporary = not policy.exists()
    if temporary:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run("apt-get", "update", "-qq", env=env)
        run("apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing, env=env)
    finally:
        if temporary:
            policy.unlink()


# ---- configuration ---------------------------------------------------------------------------------
def hardware():
    """CPUs and memory as slurmd sees them: both nodes claim the whole machine."""
    line = run("slurmd", "-C").stdout.splitlines()[0]
    hw = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    keys = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
    layout = " ".join(f"{k}={hw[k]}" for k in keys)
    memory = min(16000, int(hw["RealMemory"]) * 2 // 5)  # two nodes: 80% of the machine in all
    return layout, memory


def slurm_conf():
    layout, memory = hardware()
    nodes = "\n".join(
        f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={FIRST_SLURMD_PORT + i} {layout} "
        f"RealMemory={memory} Gres=gpu:fake:1 State=UNKNOWN" for i, n in enumerate(NODES))
    return f"""{MARKER}: a test cluster on localhost (python tests/slurm/harness.py down removes it)
ClusterName=lnrepro
SlurmctldHost=localhost
SlurmctldPort={CTLD_PORT}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={MUNGE_SOCKET}
StateSaveLocation={STATE}/slurmctld
SlurmdSpoolDir={STATE}/slurmd/%n
SlurmctldPidFile={STATE}/slurmctld.pid
SlurmdPidFile={STATE}/slurmd-%n.pid
SlurmctldLogFile={STATE}/log/slurmctld.log
SlurmdLogFile={STATE}/log/slurmd-%n.log
# no cgroups in containers: track processes by parent; no CPU binding (both nodes share the cores)
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
# finished jobs stay visible to squeue/scontrol: Snakemake's squeue status polling needs them
MinJobAge=3600
KillWait=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
Waittime=0
{nodes}
PartitionName={PARTITION} Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE DefMemPerCPU=500 State=UP
"""


def gres_conf():
    lines = [f"NodeName={n} Name=gpu Type=fake File={STATE}/gpu/{n}" for n in NODES]
    return f"{MARKER}\nAutoDetect=off\n" + "\n".join(lines) + "\n"


def write_configs():
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    (CONF_DIR / "slurm.conf").write_text(slurm_conf())
    (CONF_DIR / "gres.conf").write_text(gres_conf())


def prepare_state():
    """A fresh state directory (no jobs of an earlier session), munge key and fake GPU devices."""
    shutil.rmtree(STATE, ignore_errors=True)
    for d in ("slurmctld", "log", "gpu", *(f"slurmd/{n}" for n in NODES)):
        (STATE / d).mkdir(parents=True)
    for n in NODES:
        (STATE / "gpu" / n).symlink_to("/dev/null")
    key_dir, sock_dir = STATE / "munge-key", MUNGE_SOCKET.parent
    key_dir.mkdir(mode=0o700)
    sock_dir.mkdir(mode=0o755)  # munged wants its socket directory traversable by all
    run("mungekey", "--create", f"--keyfile={key_dir / 'munge.key'}")
    for p in (key_dir, key_dir / "munge.key", sock_dir):
        shutil.chown(p, "munge", "munge")


# ---- daemons -----------------------------------------------------------------------------------------
def records():
    return json.loads(RECORDS.read_text()) if RECORDS.exists() else {}


def alive(rec):
    """The recorded process still runs and is still the program we started (no reused pid)."""
    try:
        return os.path.realpath(f"/proc/{rec['pid']}/exe") == rec["exe"]
    except OSError:
        return False


def wait_for(what, test, timeout=60.0):
    end = time.time() + timeout
    while not test():
        if time.time() > end:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}; logs in {STATE}/log")
        time.sleep(0.2)


def start(name, program, pidfile, *cmd):
    """Run a daemon that forks and writes its pid file; record it as started by us."""
    exe = os.path.realpath(shutil.which(program) or program)
    out = STATE / "log" / f"{name}.start.log"  # a file, not a pipe: the daemon may keep it open
    with open(out, "w") as f:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} did not start: {out.read_text()[-2000:]}")
    wait_for(f"{name}'s pid file", lambda: pidfile.exists() and pidfile.read_text().strip())
    rec = {"pid": int(pidfile.read_text().strip()), "exe": exe}
    wait_for(f"{name} to run", lambda: alive(rec), 10)
    RECORDS.write_text(json.dumps({**records(), name: rec}))


def cluster_up():
    try:
        idle = run("sinfo", "-h", "-N", "-o", "%N %T", timeout=10).stdout.split("\n")
    except (subprocess.SubprocessError, OSError):
        return False
    states = dict(line.split() for line in idle if line.strip())
    return all(states.get(n) in ("idle", "mixed", "allocated") for n in NODES)  # idle*: not responding


def up():
    """Start the cluster unless ours is already up. True if this call started it."""
    rec = records()
    if rec and all(alive(r) for r in rec.values()) and cluster_up():
        log("already up")
        return False
    down(quiet=True)  # what is left of an earlier session
    t0 = time.time()
    install()
    prepare_state()
    write_configs()
    start("munged", "munged", MUNGE_SOCKET.parent / "munged.pid",
          "runuser", "-u", "munge", "--", "munged", f"--socket={MUNGE_SOCKET}",
          f"--key-file={STATE / 'munge-key' / 'munge.key'}", f"--pid-file={MUNGE_SOCKET.parent / 'munged.pid'}",
          f"--log-file={STATE / 'munge-key' / 'munged.log'}", f"--seed-file={STATE / 'munge-key' / 'seed'}")
    start("slurmctld", "slurmctld", STATE / "slurmctld.pid", "slurmctld")
    wait_for("slurmctld to answer", lambda: run("scontrol", "ping", check=False).returncode == 0)
    for n in NODES:  # -N: one slurmd per node name, each on its own port and spool directory
        start(f"slurmd-{n}", "slurmd", STATE / f"slurmd-{n}.pid", "slurmd", "-N", n)
    try:
        wait_for("the nodes to be idle", cluster_up, 30)
    except RuntimeError:
        run("scontrol", "update", f"NodeName={','.join(NODES)}", "State=RESUME", check=False)
        wait_for("the nodes to be idle", cluster_up, 30)
    log(f"up in {time.time() - t0:.1f}s: {run('sinfo', '-o', '%P %a %D %T %N %G').stdout.strip()}")
    return True


def cancel_jobs():
    """Jobs outlive slurmd (their slurmstepd keeps running): end them before the daemons."""
    if run("scontrol", "ping", check=False).returncode != 0:
        return
    run("scancel", "--full", "--user=root", check=False)
    def none_running():
        out = run("squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING,SUSPENDED", "-o", "%i", check=False).stdout
        return not out.strip()
    try:
        wait_for("jobs to end", none_running, 30)
    except RuntimeError as e:
        log(str(e))


def stop(name, rec):
    if not alive(rec):
        return
    os.kill(rec["pid"], signal.SIGTERM)
    try:
        wait_for(f"{name} to stop", lambda: not alive(rec), 15)
    except RuntimeError:
        log(f"{name} (pid {rec['pid']}) ignored SIGTERM: SIGKILL")
        os.kill(rec["pid"], signal.SIGKILL)


def down(quiet=False):
    rec = records()
    if not rec and not ours(CONF_DIR / "slurm.conf"):
        if not quiet:
            log("nothing to stop")
        return
    if any(alive(r) for r in rec.values()):
        cancel_jobs()
    for name in [n for n in rec if n.startswith("slurmd")] + ["slurmctld", "munged"]:
        if name in rec:
            stop(name, rec[name])
    for f in ("slurm.conf", "gres.conf"):
        if ours(CONF_DIR / f):
            (CONF_DIR / f).unlink()
    shutil.rmtree(STATE, ignore_errors=True)
    if not quiet:
        log("stopped; its files removed")


if __name__ == "__main__":
    action = sys.argv[1] if len(sys.argv) > 1 else ""
    if action not in ("up", "down"):
        sys.exit(__doc__)
    reason = unavailable()
    if reason and action == "up":
        sys.exit(f"cannot start SLURM here: {reason}")
    up() if action == "up" else down()
