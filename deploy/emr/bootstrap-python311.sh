#!/bin/bash
# EMR 7 bootstrap action: Python 3.11 at /usr/bin/python3.11 on every node (Amazon Linux 2023
# ships 3.9), the interpreter the packed environment links to (curate pack --python-prefix /usr).
#   aws emr create-cluster ... --bootstrap-actions Path=s3://BUCKET/curate/bootstrap-python311.sh
set -euo pipefail
sudo dnf install -y python3.11
