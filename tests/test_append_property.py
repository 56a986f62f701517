"""Issue 61: random splits of a crawl into a first run plus appends decide the added files'
documents as one run over all the files does (tests/append_property.py; one split here, 20
on real text in bench/append_property_bench.py)."""

from __future__ import annotations

import random

import pytest
from append_property import decisions, random_cuts, split_differences

from curate_pipeline.examples.corpus import synthetic_pages, with_duplicates, write_pages_warc

pytestmark = pytest.mark.spark


def test_random_splits_decide_the_added_files_as_one_run(spark, cfg, tmp_path):
    from curate_pipeline.run.orchestrate import run

    pages = with_duplicates(synthetic_pages(100, seed=61), share=0.3, seed=61)
    files = []
    for k in range(5):
        f = tmp_path / f"crawl-{k}.warc.gz"
        write_pages_warc(f, pages[k * 25 : (k + 1) * 25] if k < 4 else pages[100:], f"p{k}")
        files.append(str(f))
    c = cfg.model_copy(deep=True)
    c.chunks.files = 1

    def curate(inputs, out):
        return run(c, inputs, out, spark)

    curate(files, tmp_path / "whole")
    whole = decisions(tmp_path / "whole")
    assert sum(v != "kept" and v.startswith(("exact_dup", "near_dup")) for v in whole.values())
    rng = random.Random(61)
    for i in range(1):  # one split here (the suite's time); 20 in the benchmark
        cuts = random_cuts(len(files), rng)
        n, allowed, other = split_differences(curate, files, cuts, tmp_path / f"split-{i}", whole)
        assert n > 0 and not other, (cuts, other)
        print(f"split {cuts}: {n} documents compared, {len(allowed)} documented differences")
