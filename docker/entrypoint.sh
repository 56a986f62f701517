#!/usr/bin/env bash
# The image's entrypoint, for every role the image plays:
#   driver ARGS...   Spark on Kubernetes starts the driver pod with this: spark-submit in client
#                    mode inside the pod, bound to the pod's address.
#   executor         Spark on Kubernetes starts executor pods with this: the executor backend,
#                    configured from the SPARK_* variables the driver sets on the pod.
#   master | worker URL   a standalone master or worker (docker/compose.yaml).
#   anything else    run as given (spark-submit ..., curate ..., bash).
# SPARK_HOME is pyspark's own folder (its jars and bin/); CURATE_ENTRYPOINT_DRY_RUN=1 prints
# the command instead of running it (tests/test_cluster_recipes.py).
set -euo pipefail

SPARK_HOME="${SPARK_HOME:-$(python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
export SPARK_HOME
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-python3}"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"

# Executor JVM options the driver passes as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in order.
java_opts=()
while IFS='=' read -r name value; do
    java_opts+=("$value")
done < <(env | grep -E '^SPARK_JAVA_OPT_[0-9]+=' | sort -t_ -k4 -n)

role="${1:-}"
case "$role" in
    driver)
        shift
        cmd=("$SPARK_HOME/bin/spark-submit"
             --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}"
             --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}"
             --deploy-mode client "$@")
        ;;
    executor)
        shift
        cmd=("$JAVA" "${java_opts[@]}"
             -Xms"${SPARK_EXECUTOR_MEMORY:-1g}" -Xmx"${SPARK_EXECUTOR_MEMORY:-1g}"
             -cp "${SPARK_CLASSPATH:-$SPARK_HOME/jars/*}"
             org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
             --driver-url "${SPARK_DRIVER_URL:?set by the driver}"
             --executor-id "${SPARK_EXECUTOR_ID:?set by the driver}"
             --cores "${SPARK_EXECUTOR_CORES:-1}"
             --app-id "${SPARK_APPLICATION_ID:?set by the driver}"
             --hostname "${SPARK_EXECUTOR_POD_IP:-$(hostname -i 2>/dev/null || hostname)}"
             --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}"
             --podName "${SPARK_EXECUTOR_POD_NAME:-$(hostname)}")
        ;;
    master)
        shift
        cmd=("$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master
             --host "${SPARK_MASTER_HOST:-0.0.0.0}" "$@")
        ;;
    worker)
        shift
        cmd=("$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker "$@")
        ;;
    "")
        cmd=(bash)
        ;;
    *)
        cmd=("$@")
        ;;
esac

if [ "${CURATE_ENTRYPOINT_DRY_RUN:-0}" = "1" ]; then
    printf '%s\n' "${cmd[@]}"
    exit 0
fi
exec "${cmd[@]}"
