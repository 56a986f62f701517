"""The console's progress lines for steps that run as Spark jobs
(curate_pipeline/engine/progress.py)."""

from __future__ import annotations

import logging
import time

from curate_pipeline.engine.progress import SparkProgress, TaskFigures, _Seen, eta_of, progress_line


def test_eta_is_the_tasks_left_at_the_rate_since_each_stage_began():
    # 10 of 40 tasks in 5 s: 2 a second, 30 left -> 15 s
    assert eta_of([_Seen(first=0.0, tasks=40, done=10)], now=5.0) == 15.0
    # two stages: rates add (2/s + 1/s), tasks left add (30 + 15) -> 15 s
    both = [_Seen(0.0, 40, 10), _Seen(0.0, 20, 5)]
    assert eta_of(both, now=5.0) == 15.0
    assert eta_of([_Seen(0.0, 40, 0)], now=5.0) is None  # no task done yet: unknown
    assert eta_of([_Seen(0.0, 4, 4)], now=5.0) == 0.0


def test_the_line_names_the_step_the_tasks_and_the_eta():
    fig = TaskFigures(running=[7], tasks=400, done=120, finished_stages=3, eta=12.4)
    line = progress_line("stage near_dedup (2 of 5)", 35.2, fig)
    assert line == ("stage near_dedup (2 of 5): 35 s, 3 Spark stage(s) done, "
                    "Spark stage 7: 120/400 tasks, ETA 12 s for them")  # fmt: skip
    idle = progress_line("mixture (5 of 5)", 2.0, TaskFigures())
    assert idle == "mixture (5 of 5): 2 s, no Spark stage running"


def test_a_running_job_is_reported_with_its_tasks(spark, caplog):
    """A real job of 6 tasks of 1.5 s on 2 cores: lines while it runs count its tasks out of
    6, and once the first wave is done the ETA is a number."""
    sc = spark.sparkContext
    sc.parallelize(range(4), 4).count()  # Python workers started: the waves are the sleeps

    def slow(it):
        time.sleep(1.5)
        return it

    with caplog.at_level(logging.INFO, logger="curate_pipeline.engine.progress"):
        with SparkProgress(sc, "stage test (1 of 1)", every=0.2, poll=0.2):
            sc.parallelize(range(6), 6).mapPartitions(slow).count()
    lines = [r.getMessage() for r in caplog.records if r.name == "curate_pipeline.engine.progress"]
    running = [line for line in lines if "/6 tasks" in line]
    assert running, lines
    assert all(line.startswith("stage test (1 of 1): ") for line in lines)
    assert any("ETA unknown" not in line for line in running), running
