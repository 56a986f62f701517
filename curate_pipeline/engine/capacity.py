"""The cores a run sizes its work for: what the cluster really has, never a ceiling.

Under dynamic allocation (EMR's and Dataproc's default) a job starts with a handful of
executors and may grow to `spark.dynamicAllocation.maxExecutors`, a ceiling (Dataproc logs
10000, Serverless 1000; unset it is unbounded), not the cluster: sizing from it cuts a
snapshot into a few chunks of tens of TB; sizing from the start-up cores cuts 90,000. The
order, first that applies:

1. local mode: the cores it has;
2. `chunks.cores` (the user's word);
3. dynamic allocation: the cluster's cores as its resource manager reports them (YARN's
   cluster metrics, the standalone master's JSON), capped by maxExecutors x executor cores;
   where the resource manager cannot be read (Kubernetes, Databricks, a REST API closed), the
   run refuses before any work, naming `chunks.cores`;
4. `spark.executor.instances` x executor cores (static allocation requests exactly these),
   capped by the cluster's cores where known;
5. `spark.cores.max` (standalone's cap on an application), capped likewise;
6. the cluster's cores where known;
7. standalone without dynamic allocation: the executors registered (the master hands an
   application every free core at once; waited for until their count settles);
8. otherwise the run refuses, naming `chunks.cores`.

Executor cores are `spark.executor.cores`, or 1 (YARN's and Kubernetes' default) when unset.
`plan_capacity` is the pure decision; `capacity` reads the cluster and logs the line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from curate_pipeline.config.base import ConfigError

log = logging.getLogger(__name__)
UNBOUNDED = 2**31 - 1  # Spark's default maxExecutors (Int.MaxValue): no bound to size for


@dataclass(frozen=True)
class Capacity:
    cores: int
    why: str

    def line(self) -> str:
        return f"sizing work for {self.cores:,} cores ({self.why})"


def _int(conf: Mapping[str, str], key: str) -> int | None:
    value = conf.get(key)
    if value is None or str(value).strip() == "":
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


class CapacityUnknown(ConfigError):
    """The cores a cluster has cannot be known: the run refuses before any work."""


def plan_capacity(
    conf: Mapping[str, str], master: str, default_parallelism: int, chunks_cores: int = 0,
    cluster_cores: int | None = None, cluster_source: str = "",
) -> Capacity:  # fmt: skip
    """The cores to size for, from Spark's settings (`conf`), the master URL, the cores
    Spark has now, the config's `chunks.cores` (0: unset) and the cluster's cores as its
    resource manager reports them (`cluster_cores`, from `cluster_source`; None: unknown).
    CapacityUnknown where none of them says."""
    now = max(1, default_parallelism)
    if master.startswith("local"):
        return Capacity(now, f"local mode: {master}")
    if chunks_cores:
        return Capacity(chunks_cores, f"chunks.cores {chunks_cores}")
    per = _int(conf, "spark.executor.cores")
    per_text = (
        f"spark.executor.cores {per}" if per else "1 core an executor (spark.executor.cores unset)"
    )
    per = per or 1
    known = f"the cluster's {cluster_cores:,} cores ({cluster_source})" if cluster_cores else ""

    def capped(cores: int, why: str) -> Capacity:
        if cluster_cores and cluster_cores < cores:
            return Capacity(cluster_cores, f"{known}, below {why}")
        return Capacity(cores, why)

    dynamic = str(conf.get("spark.dynamicAllocation.enabled", "false")).lower() == "true"
    most = _int(conf, "spark.dynamicAllocation.maxExecutors")
    bounded = most is not None and 0 < most < UNBOUNDED
    if dynamic:
        if cluster_cores:
            if bounded:
                return capped(most * per, f"dynamic allocation's ceiling: maxExecutors {most} "
                                          f"x {per_text}")  # fmt: skip
            return Capacity(cluster_cores, f"dynamic allocation on {known}")
        ceiling = f"maxExecutors {most}" if bounded else "maxExecutors unset (unbounded)"
        raise CapacityUnknown(
            f"dynamic allocation is on and the cluster's cores cannot be read ({ceiling} is a "
            f"ceiling, not the cluster; {cluster_source or 'no resource manager to ask'}): set "
            "chunks.cores to the cores this run may use (e.g. chunks.cores: 1600 in the config), "
            "or spark.executor.instances with dynamic allocation off"
        )
    instances = _int(conf, "spark.executor.instances")
    if instances:
        return capped(instances * per, f"spark.executor.instances {instances} x {per_text}")
    cap = _int(conf, "spark.cores.max")
    if cap:
        return capped(cap, f"spark.cores.max {cap}")
    if cluster_cores:
        return Capacity(cluster_cores, known)
    if master.startswith("spark://"):
        return Capacity(now, f"the {now} cores of the executors registered (standalone)")
    raise CapacityUnknown(
        f"{master}: neither spark.executor.instances nor spark.cores.max is set and the "
        f"cluster's cores cannot be read ({cluster_source or 'no resource manager to ask'}): set "
        "chunks.cores to the cores this run may use, or spark.executor.instances"
    )


def _get_json(url: str, timeout: float = 5.0) -> dict:
    import json
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (the cluster's own)
        return json.load(r)


def yarn_cores(hadoop_conf: Mapping[str, str]) -> tuple[int | None, str]:
    """YARN's total vcores from the ResourceManager's REST API (/ws/v1/cluster/metrics), at
    each address the Hadoop configuration names (HA: every RM id)."""
    host = hadoop_conf.get("yarn.resourcemanager.hostname") or "0.0.0.0"
    ids = [i.strip() for i in (hadoop_conf.get("yarn.resourcemanager.ha.rm-ids") or "").split(",")
           if i.strip()]  # fmt: skip
    addresses = [hadoop_conf.get(f"yarn.resourcemanager.webapp.address.{i}") for i in ids]
    addresses.append(hadoop_conf.get("yarn.resourcemanager.webapp.address") or f"{host}:8088")
    tried = []
    for a in filter(None, addresses):
        a = a.replace("0.0.0.0", host if host != "0.0.0.0" else "localhost")
        url = f"http://{a}/ws/v1/cluster/metrics"
        try:
            total = int(_get_json(url)["clusterMetrics"]["totalVirtualCores"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            tried.append(f"{url}: {type(e).__name__}")
            continue
        if total > 0:
            return total, f"YARN's cluster metrics, {url}"
    return None, "YARN's ResourceManager did not answer: " + "; ".join(tried)


def standalone_cores(master: str, ui: str | None) -> tuple[int | None, str]:
    """A standalone master's cores, from its web UI's JSON (`ui`: spark.curate.masterUi, else
    the master's host at SPARK_MASTER_WEBUI_PORT, Spark's own variable for it, or 8080)."""
    import os

    host = master.removeprefix("spark://").split(",")[0].rsplit(":", 1)[0]
    port = os.environ.get("SPARK_MASTER_WEBUI_PORT") or "8080"
    url = (ui or f"http://{host}:{port}").rstrip("/") + "/json/"
    try:
        total = int(_get_json(url)["cores"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"the standalone master's {url}: {type(e).__name__} (give its web UI as " \
            "spark.curate.masterUi)"  # fmt: skip
    return (total, f"the standalone master's {url}") if total > 0 else (None, url)


def _settled_parallelism(sc, wait_s: float = 20.0) -> int:
    """defaultParallelism once the executors' count stops growing (standalone hands an
    application its cores at once; they register within seconds)."""
    import time

    deadline, last, stable = time.monotonic() + wait_s, -1, 0
    while time.monotonic() < deadline:
        n = sc._jsc.sc().getExecutorMemoryStatus().size()  # the driver counts itself
        stable = stable + 1 if n == last and n > 1 else 0
        if stable >= 4:
            break
        last = n
        time.sleep(0.5)
    return sc.defaultParallelism


_seen: dict[str, Capacity] = {}


def capacity(spark, chunks_cores: int = 0) -> Capacity:
    """The session's capacity, logged once per application."""
    sc = spark.sparkContext
    key = f"{sc.applicationId}:{chunks_cores}"
    if key not in _seen:
        conf = dict(sc.getConf().getAll())
        cores, source, now = None, "", sc.defaultParallelism
        if not sc.master.startswith("local") and not chunks_cores:
            if sc.master.startswith("yarn"):
                hadoop = sc._jsc.hadoopConfiguration()
                keys = ("yarn.resourcemanager.hostname", "yarn.resourcemanager.ha.rm-ids",
                        "yarn.resourcemanager.webapp.address")  # fmt: skip
                hconf = {k: hadoop.get(k) for k in keys}
                for i in (hconf["yarn.resourcemanager.ha.rm-ids"] or "").split(","):
                    k = f"yarn.resourcemanager.webapp.address.{i.strip()}"
                    hconf[k] = hadoop.get(k) if i.strip() else None
                cores, source = yarn_cores({k: v for k, v in hconf.items() if v})
            elif sc.master.startswith("spark://"):
                cores, source = standalone_cores(sc.master, conf.get("spark.curate.masterUi"))
                dynamic = conf.get("spark.dynamicAllocation.enabled", "false").lower() == "true"
                if cores is None and not dynamic:
                    now = _settled_parallelism(sc)
        _seen[key] = plan_capacity(conf, sc.master, now, chunks_cores, cores, source)
        log.info("%s", _seen[key].line())
    return _seen[key]
