"""A Spark standalone cluster on this machine: a master and N workers on 127.0.0.1, started
with the pyspark distribution's own `spark-class`, their pids and logs in a run folder, and
stopped by exactly those pids.

    python -m curate_pipeline.engine.cluster up   --run-dir build/cluster [--workers 2] [--port
    7077]
    python -m curate_pipeline.engine.cluster down --run-dir build/cluster
    python -m curate_pipeline.engine.cluster wait --ui http://HOST:8080 --workers N [--timeout 300]

(`wait`: until a master, started elsewhere, has N workers alive: deploy/slurm/curate.sbatch.)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _start(cmd: list[str], log: Path, env: dict) -> int:
    fh = open(log, "wb")  # noqa: SIM115 (the child keeps it)
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)  # fmt: skip
    return proc.pid


def cluster_up(
    run_dir: str | Path, workers: int = 2, cores: int = 1, memory: str = "1g",
    port: int | None = None, timeout_s: float = 90, hide: list[str] | None = None,
    keep: list[str] = (), spark_home: str | Path | None = None,
) -> dict:  # fmt: skip
    """Start the cluster; returns {"master": url, "ui": url, "pids": [...]} (also written to
    run_dir/cluster.json). Waits until every worker has registered.

    `hide` (root only): the workers run in a mount namespace of their own where /tmp and each
    of these folders is an empty tmpfs, so executors see nothing the driver wrote on its disk,
    as on EMR or Kubernetes: only what travels through a URI or SparkFiles reaches them. The
    folders in `keep` (the code and its venv) stay visible even under a hidden one (a
    checkout in /tmp). The workers share that namespace (they read each other's shuffle
    files from disk).

    `spark_home`: a Spark installation of its own (a platform's, or pyspark's distribution
    copied out as one) whose `spark-class` starts master and workers, with nothing of this
    process's Python in their environment: a bare node, where the job must ship its own
    (spark-submit --archives, `curate pack`)."""
    run = Path(run_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    if spark_home is None:
        spark_class = SPARK_CLASS
        env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    else:
        spark_class = Path(spark_home) / "bin" / "spark-class"
        venv_bins = {str(Path(sys.executable).parent), os.environ.get("VIRTUAL_ENV", "") + "/bin"}
        path = ":".join(p for p in os.environ.get("PATH", "").split(":") if p not in venv_bins)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYSPARK_", "VIRTUAL_ENV", "PYTHON", "SPARK_"))}  # fmt: skip
        env.update(PATH=path, SPARK_HOME=str(spark_home))
    env.update(SPARK_LOCAL_IP=HOST, SPARK_LOG_DIR=str(run))
    # The master and workers only schedule and launch executors: C1-only JIT and the serial
    # GC start them with half the CPU (measured: 6.1 s vs 13.1 s for a master and 2 workers,
    # wall 4.1 s vs 7.2 s). The executors' own options come from the job's config.
    env.setdefault("SPARK_DAEMON_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    port = port or free_port()
    ui_port = free_port()
    master = f"spark://{HOST}:{port}"
    pids = [_start([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", HOST,
                    "--port", str(port), "--webui-port", str(ui_port)],
                   run / "master.log", env)]  # fmt: skip

    def worker(i: int, work: str) -> list[str]:
        return [str(spark_class), "org.apache.spark.deploy.worker.Worker", master, "--host",
                HOST, "--cores", str(cores), "--memory", memory, "--webui-port",
                str(free_port()), "--work-dir", work]  # fmt: skip

    if hide is None:
        for i in range(workers):
            work = run / f"worker-{i}"
            work.mkdir(exist_ok=True)
            pids.append(_start(worker(i, str(work)), run / f"worker-{i}.log", env))
    else:
        # one shell in a private mount namespace: tmpfs over /tmp and the hidden folders,
        # then every worker in the background (their work dirs on that tmpfs)
        # (their output goes to workers.log, opened before /tmp was hidden)
        starts = " ".join(f"{shlex.join(worker(i, f'/tmp/worker-{i}'))} &" for i in range(workers))
        kept = " ".join(shlex.quote(str(Path(k).resolve())) for k in keep)
        script = (
            "set -e; keep=(" + kept + "); stash=$(mktemp -d -p /dev/shm); i=0; "
            'for k in "${keep[@]}"; do mkdir -p "$stash/$i"; mount --bind "$k" "$stash/$i"; '
            "i=$((i+1)); done; "
            'for d in /tmp "$@"; do if [ -d "$d" ]; then mount -t tmpfs tmpfs "$d"; fi; done; '
            'i=0; for k in "${keep[@]}"; do mkdir -p "$k"; mount --bind "$stash/$i" "$k"; '
            f"i=$((i+1)); done; {starts} wait"
        )
        pids.append(_start(["unshare", "-m", "--propagation", "private", "bash", "-c", script,
                            "hide", *hide], run / "workers.log", env))  # fmt: skip
    info = {"master": master, "ui": f"http://{HOST}:{ui_port}", "pids": pids, "run_dir": str(run)}
    (run / "cluster.json").write_text(json.dumps(info, indent=2))
    if wait_for_workers(info["ui"], workers, timeout_s):
        return info
    cluster_down(run)
    raise RuntimeError(f"cluster in {run} did not come up in {timeout_s:g} s: see its logs")


def wait_for_workers(ui: str, workers: int, timeout_s: float) -> bool:
    """Until the master whose web UI is `ui` has `workers` workers alive (False at timeout)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(ui.rstrip("/") + "/json/", timeout=2) as r:  # noqa: S310
                state = json.load(r)
            if sum(w.get("state") == "ALIVE" for w in state.get("workers", [])) >= workers:
                return True
        except (OSError, ValueError):
            pass
        time.sleep(1)
    return False


def install_spark(spark_home: str | Path, dest: str | Path) -> Path:
    """A Spark installation at `dest` from a pyspark package's distribution (`bin/`, `sbin/`,
    `jars/`, `python/lib`'s pyspark.zip and py4j), as a platform lays Spark out: nothing of it
    is imported from a Python environment. Files are hard-linked where the disk allows."""
    import shutil

    src, dest = Path(spark_home), Path(dest)

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    for part in ("bin", "sbin", "jars", "python/lib"):
        if (src / part).is_dir():
            shutil.copytree(src / part, dest / part, copy_function=link, dirs_exist_ok=True)
    (dest / "RELEASE").write_text(f"Spark {spark_version(src)} (from {src})\n")
    return dest


def spark_version(spark_home: str | Path) -> str:
    """The version of a Spark installation, from its spark-core jar's name."""
    jars = sorted((Path(spark_home) / "jars").glob("spark-core_*.jar"))
    if not jars:
        raise RuntimeError(f"{spark_home}: no jars/spark-core_*.jar: not a Spark installation")
    return jars[0].stem.split("-")[-1]


def cluster_down(run_dir: str | Path) -> None:
    """Stop exactly the processes cluster_up started (their process groups)."""
    path = Path(run_dir) / "cluster.json"
    if not path.is_file():
        return
    pids = json.loads(path.read_text())["pids"]
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 20
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
            except ChildProcessError:
                pass
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    path.unlink()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("action", choices=["up", "down", "wait"])
    ap.add_argument("--run-dir", default="build/cluster")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--port", type=int, default=7077)
    ap.add_argument("--ui", help="wait: the master's web UI (http://HOST:PORT)")
    ap.add_argument("--timeout", type=float, default=300, help="wait: seconds (300)")
    args = ap.parse_args(argv)
    if args.action == "wait":
        if wait_for_workers(args.ui, args.workers, args.timeout):
            print(f"{args.workers} worker(s) alive at {args.ui}")
            return 0
        print(f"fewer than {args.workers} worker(s) registered with {args.ui} in "
              f"{args.timeout:g} s: see the workers' logs", file=sys.stderr)  # fmt: skip
        return 1
    if args.action == "up":
        info = cluster_up(args.run_dir, args.workers, port=args.port)
        print(f"master {info['master']}, UI {info['ui']}, pids {info['pids']}")
    else:
        cluster_down(args.run_dir)
        print(f"stopped the cluster of {args.run_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
