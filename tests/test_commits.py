"""The Hadoop path's commit (curate_pipeline/engine/storage.py): a write's files are found by
listing, so only what Spark's committer put in place counts, and only when the footers' rows
add up to the rows Spark counted."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate_pipeline.engine.storage import StorageError, write_parquet
from curate_pipeline.location import Location

pytestmark = pytest.mark.spark


def _frame(spark, target: Path, stray: str | None, stray_rows: int = 5):
    """20 rows in 2 tasks; the first task also drops a Parquet file of `stray_rows` rows at
    `stray` under `target`, as a zombie task attempt or another writer would, mid-write."""
    schema = "n long"

    def tasks(batches):
        from pyspark import TaskContext

        for b in batches:
            if stray and TaskContext.get().partitionId() == 0:
                path = target / stray
                path.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(pa.table({"n": pa.array(range(stray_rows), pa.int64())}), path)
            yield b

    return spark.range(20).repartition(2).selectExpr("id AS n").mapInArrow(tasks, schema)


def test_files_of_a_task_attempt_not_committed_never_count(spark, tmp_path):
    out = tmp_path / "out"
    w = write_parquet(_frame(spark, out, "__magic/job-9/tasks/attempt_9/part-9.parquet"),
                      Location.of(out), "zstd", "hadoop", file_rows=True)  # fmt: skip
    assert w.rows == 20 == sum(f["rows"] for f in w.files)
    assert all("magic" not in f["file"] for f in w.files)
    assert (out / "__magic" / "job-9").is_dir()  # still there: the committer left it


def test_another_writers_file_in_the_folder_refuses_the_commit(spark, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(StorageError, match="hold 25 rows where Spark wrote 20: files of another"):
        write_parquet(_frame(spark, out, "part-99999-foreign.parquet"), Location.of(out),
                      "zstd", "hadoop")  # fmt: skip


def test_another_jobs_file_is_refused_even_when_the_rows_add_up(spark, tmp_path):
    """A stray file of no rows, named as another Spark write job names its files: the rows
    still add up, but a write is one job, so the commit is refused."""
    out = tmp_path / "out"
    other = "part-00007-0f0e0d0c-0b0a-4908-8706-050403020100-c000.zstd.parquet"
    with pytest.raises(StorageError, match="files of 2 write jobs are there"):
        write_parquet(_frame(spark, out, other, stray_rows=0), Location.of(out), "zstd",
                      "hadoop")  # fmt: skip
