"""Shared fixtures: one SparkSession per test session, the project's sample WARC, shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["s3_server"]  # the moto S3 server and the inputs in its buckets
ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CURATE_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED / "warc").is_dir():
        pytest.skip(f"real sample data not found at {SHARED} (set CURATE_SHARED_DATA)")
    return SHARED


@pytest.fixture(scope="session")
def sample_warc(tmp_path_factory) -> Path:
    from curate_pipeline.examples.sample import write_sample_warc

    path = tmp_path_factory.mktemp("sample") / "sample.warc.gz"
    write_sample_warc(path)
    return path


@pytest.fixture(scope="session")
def cfg():
    from curate_pipeline.config import load_config

    c = load_config(ROOT / "conf" / "default.yaml")
    # every stage runs in the tests: the quality stage too, with the toy model `make models`
    # trains (off in conf/default.yaml: it must not curate real data)
    c.quality.enabled = True
    return c


@pytest.fixture(scope="session")
def spark(cfg):
    from curate_pipeline.engine.spark import get_spark

    session = get_spark(cfg, "local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sample_run(spark, cfg, sample_warc, tmp_path_factory) -> tuple[Path, dict]:
    """The sample WARC run once with the session's config: its output folder and manifest,
    the reference several tests compare their own runs with (read it, never write to it)."""
    from curate_pipeline.run.orchestrate import run

    out = tmp_path_factory.mktemp("sample-run") / "out"
    return out, run(cfg, [str(sample_warc)], out, spark)


@pytest.fixture(scope="session")
def demo_run(spark, cfg, tmp_path_factory):
    """The seven-page demo crawl, run once (the report's and the explorer's tests)."""
    from curate_pipeline.examples.demo import write_demo_warc
    from curate_pipeline.run.orchestrate import run

    out = tmp_path_factory.mktemp("demo") / "out"
    warc = write_demo_warc(out.parent / "pages.warc.gz")
    run(cfg, [str(warc)], out, spark)
    return out


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium (.ci/run installs it): required on CI, else skipped."""
    import shutil

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium not installed: apt-get install chromium")
    return path


# `make test` runs the modules in two processes (pytest-xdist, --dist loadfile: a module's
# fixtures, such as its cluster or its S3 server, are made once). The longest modules go first
# (measured: the S3 module is ~40% of the suite), so that neither process is left alone with
# one at the end. The order inside a module is kept.
LONGEST_FIRST = ("test_s3_spark.py", "test_s3_faults.py", "test_pipeline_spark.py",
                 "test_chunks.py", "test_cluster.py", "test_reliability_spark.py",
                 "test_output_lock.py", "test_cli.py", "test_environment_failures.py",
                 "test_locations.py", "test_serve.py", "test_append.py",
                 "test_append_property.py", "test_published_versions.py")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each module's own order stays
