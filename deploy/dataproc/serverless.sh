#!/bin/bash
# curate on Dataproc Serverless for Spark, runtime 2.2 (Spark 3.5, Python 3.12): a batch, no
# cluster. Its runtime's Python is 3.12, so the archive carries its own interpreter (conda-pack:
# `curate pack --tool conda-pack --conda-prefix ENV` over a `conda create -p ENV python=3.11`
# environment with the package installed: docs/running.md, shipping the job). Serverless
# scales executors itself and has no resource manager to ask for its size: the config states
# the cores the work is sized for (chunks.cores, here 100 executors x 4 cores), and
# maxExecutors caps the batch at that.
#   gsutil cp build/curate-env.tar.gz deploy/dataproc/serverless.yaml jobs/curate.py gs://BUCKET/curate/
set -euo pipefail
REGION="${REGION:-us-central1}"
gcloud dataproc batches submit pyspark gs://BUCKET/curate/curate.py \
    --region="$REGION" --version=2.2 \
    --archives=gs://BUCKET/curate/curate-env.tar.gz#env \
    --files=gs://BUCKET/curate/serverless.yaml \
    --properties=^#^spark.pyspark.python=./env/bin/python#spark.pyspark.driver.python=./env/bin/python#spark.executor.cores=4#spark.executor.memory=8g#spark.executor.memoryOverhead=6g#spark.driver.cores=4#spark.driver.memory=8g#spark.dynamicAllocation.maxExecutors=100 \
    -- --config serverless.yaml \
    --input gs://BUCKET/crawl/warc.paths.gz \
    --output gs://BUCKET/curated/run1
