"""A real Slurm on this machine for the tests: Debian's slurm-wlm and munge, a controller and
one slurmd per node (n1, n2, ... all on 127.0.0.1, one CPU each), state and spool in a temp
folder, the ports chosen free. `slurm(run_dir)` yields the environment (SLURM_CONF) that
sbatch, squeue and scancel need; everything it started is stopped at the end."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

QUIET = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}  # their logs: run folder
NEEDED = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def missing() -> list[str]:
    """The Slurm and munge programs this machine lacks (.ci/run installs them)."""
    return [p for p in NEEDED if not (shutil.which(p) or Path("/usr/sbin", p).exists())]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _munge(run: Path) -> tuple[dict[str, str], subprocess.Popen | None]:
    """munged as the munge user, its files in a short folder of its own under /tmp (a socket
    path has at most 107 bytes, and pytest's folders are closed to other users)."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="munge-"))
    home.chmod(0o755)
    shutil.chown(home, "munge", "munge")
    (run / "munge").symlink_to(home)
    sock = home / "munge.socket.2"
    cmd = ["runuser", "-u", "munge", "--", _exe("munged"), "--foreground", "--force",
           f"--socket={sock}", f"--pid-file={home / 'munged.pid'}",
           f"--seed-file={home / 'munged.seed'}", f"--log-file={home / 'munged.log'}"]  # fmt: skip
    proc = subprocess.Popen(cmd, start_new_session=True, **QUIET)
    deadline = time.monotonic() + 20
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            log = (home / "munged.log").read_text(errors="replace") if (
                home / "munged.log").exists() else ""  # fmt: skip
            raise RuntimeError(f"munged did not start: {log[-2000:]}")
        time.sleep(0.1)
    return {"MUNGE_SOCKET": str(sock)}, proc


CONF = """\
ClusterName=curate
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation={run}/state
SlurmdSpoolDir={run}/spool/%n
SlurmctldPidFile={run}/slurmctld.pid
SlurmdPidFile={run}/slurmd-%n.pid
SlurmctldLogFile={run}/slurmctld.log
SlurmdLogFile={run}/slurmd-%n.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=10
InactiveLimit=0
MinJobAge=300
{nodes}
PartitionName=main Nodes={names} Default=YES MaxTime=INFINITE State=UP
"""


@contextlib.contextmanager
def slurm(run_dir: str | Path, nodes: int = 2, cpus: int = 1) -> Iterator[dict[str, str]]:
    run = Path(run_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    (run / "state").mkdir()
    host = socket.gethostname()
    names = [f"n{i + 1}" for i in range(nodes)]
    for n in names:
        (run / "spool" / n).mkdir(parents=True)
    ports = [_port() for _ in names]
    node = "NodeName={} NodeHostname={} NodeAddr=127.0.0.1 Port={} CPUs={} RealMemory=2048"
    lines = [node.format(n, host, p, cpus) for n, p in zip(names, ports, strict=True)]
    procs: list[subprocess.Popen] = []
    munge_env, munged = _munge(run)
    if munged:
        procs.append(munged)
    conf = run / "slurm.conf"
    conf.write_text(CONF.format(host=host, ctld_port=_port(), slurmd_port=ports[0], run=run,
                                munge_socket=munge_env["MUNGE_SOCKET"], nodes="\n".join(lines),
                                names=",".join(names)))  # fmt: skip
    env = {**os.environ, "SLURM_CONF": str(conf), **munge_env}
    try:
        procs.append(subprocess.Popen([_exe("slurmctld"), "-D", "-i", "-f", str(conf)], env=env,
                                      start_new_session=True, **QUIET))  # fmt: skip
        for n in names:
            procs.append(subprocess.Popen([_exe("slurmd"), "-D", "-f", str(conf), "-N", n],
                                          env=env, start_new_session=True, **QUIET))  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=env,
                                 capture_output=True, text=True).stdout  # fmt: skip
            idle = [ln.split()[0] for ln in out.splitlines() if ln.split()[-1:] == ["idle"]]
            if sorted(idle) == sorted(names):
                break
            if time.monotonic() > deadline:
                logs = "".join(
                    (run / f).read_text(errors="replace")[-1500:]
                    for f in ("slurmctld.log", "slurmd-n1.log")
                    if (run / f).exists()
                )
                raise RuntimeError(f"Slurm nodes not idle in 60 s (sinfo: {out!r}): {logs}")
            time.sleep(0.5)
        yield env
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        shutil.rmtree((run / "munge").resolve(), ignore_errors=True)
