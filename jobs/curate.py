"""spark-submit entry point: `spark-submit jobs/curate.py --config FILE --output DIR ...`.

Takes the same arguments as `curate run`. The `curate_pipeline` package must be importable on the
driver and executors: installed, or shipped with `--py-files`.
"""

import sys
from pathlib import Path

try:
    import curate_pipeline  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curate_pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
