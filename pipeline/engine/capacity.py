"""The cores a run sizes its work for: what the cluster can reach, not what it has at start.

Under dynamic allocation (EMR's and Dataproc's default) a job starts with a handful of
executors and grows to `spark.dynamicAllocation.maxExecutors`; `defaultParallelism` at
start-up is then 2, and work sized from it (chunks of 2 GiB, 4 shuffle partitions) keeps a
1,600-core cluster idle. The order, first that applies:

1. dynamic allocation on and `spark.dynamicAllocation.maxExecutors` set: max x executor cores;
2. `spark.executor.instances` set: instances x executor cores;
3. `spark.cores.max` set (standalone's cap on an application's cores);
4. the config's `chunks.cores`;
5. the cores Spark has now (`defaultParallelism`): local mode, or a cluster that says nothing.

Executor cores are `spark.executor.cores`, or 1 (YARN's and Kubernetes' default) when unset.
Local mode always takes 5 (it has no executors to allocate). `plan_capacity` is the pure
decision; the run logs the line it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

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


def plan_capacity(
    conf: Mapping[str, str], master: str, default_parallelism: int, chunks_cores: int = 0
) -> Capacity:
    """The cores to size for, from Spark's settings (`conf`), the master URL, the cores
    Spark has now, and the config's `chunks.cores` (0: unset)."""
    now = max(1, default_parallelism)
    if master.startswith("local"):
        return Capacity(now, f"local mode: {master}")
    per = _int(conf, "spark.executor.cores")
    per_text = (
        f"spark.executor.cores {per}" if per else "1 core an executor (spark.executor.cores unset)"
    )
    per = per or 1
    dynamic = str(conf.get("spark.dynamicAllocation.enabled", "false")).lower() == "true"
    most = _int(conf, "spark.dynamicAllocation.maxExecutors")
    if dynamic and most and most < UNBOUNDED:
        return Capacity(most * per, f"dynamic allocation: maxExecutors {most} x {per_text}")
    instances = _int(conf, "spark.executor.instances")
    if instances:
        return Capacity(instances * per, f"spark.executor.instances {instances} x {per_text}")
    cap = _int(conf, "spark.cores.max")
    if cap:
        return Capacity(cap, f"spark.cores.max {cap}")
    if chunks_cores:
        return Capacity(chunks_cores, f"chunks.cores {chunks_cores}")
    why = f"the {now} cores Spark has at start"
    if dynamic:
        why += (" (dynamic allocation without spark.dynamicAllocation.maxExecutors: set it or"
                " chunks.cores, or the work is cut for the start-up executors)")  # fmt: skip
    return Capacity(now, why)


_seen: dict[str, Capacity] = {}


def capacity(spark, chunks_cores: int = 0) -> Capacity:
    """The session's capacity, logged once per application."""
    sc = spark.sparkContext
    key = f"{sc.applicationId}:{chunks_cores}"
    if key not in _seen:
        conf = dict(sc.getConf().getAll())
        _seen[key] = plan_capacity(conf, sc.master, sc.defaultParallelism, chunks_cores)
        log.info("%s", _seen[key].line())
    return _seen[key]
