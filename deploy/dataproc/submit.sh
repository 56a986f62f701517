#!/bin/bash
# curate on Dataproc 2.2/2.3 (Spark 3.5, Python 3.11 at /opt/conda/default): cluster deploy
# mode, so the driver runs from the archive too. Build the archive for the nodes' Python, on a
# machine of the nodes' CPU (the 2.3 images come for arm too: pack on arm for those):
#   curate pack build/curate-env.tar.gz --python-prefix /opt/conda/default
#   gsutil cp build/curate-env.tar.gz deploy/dataproc/curate.yaml jobs/curate.py gs://BUCKET/curate/
#   gsutil cp models/lid.176.ftz gs://BUCKET/curate/models/
# Create the cluster so that YARN schedules by cores as well as memory (its default is memory
# alone, which over- or under-fills nodes with 4-core executors depending on the machine type):
#   gcloud dataproc clusters create CLUSTER --region=REGION --image-version=2.2-debian12 \
#       --properties='capacity-scheduler:yarn.scheduler.capacity.resource-calculator=org.apache.hadoop.yarn.util.resource.DominantResourceCalculator'
# Spark's own Parquet writes use the image's GCS connector (output.spark_io: auto). The UI and
# the event log (the persistent history server) are the image's defaults.
set -euo pipefail
CLUSTER="${CLUSTER:?name the cluster}"
REGION="${REGION:-us-central1}"
gcloud dataproc jobs submit pyspark gs://BUCKET/curate/curate.py \
    --cluster="$CLUSTER" --region="$REGION" \
    --archives=gs://BUCKET/curate/curate-env.tar.gz#env \
    --files=gs://BUCKET/curate/curate.yaml \
    --properties=^#^spark.submit.deployMode=cluster#spark.pyspark.python=./env/bin/python#spark.pyspark.driver.python=./env/bin/python#spark.executor.cores=4#spark.executor.memoryOverhead=6g#spark.dynamicAllocation.maxExecutors=400#spark.driver.memory=4g#spark.driver.memoryOverhead=4g \
    -- --config curate.yaml \
    --input gs://BUCKET/crawl/warc.paths.gz \
    --output gs://BUCKET/curated/run1
