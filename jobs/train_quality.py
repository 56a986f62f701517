"""spark-submit entry point for training the quality classifier:

    spark-submit jobs/train_quality.py --good PATH --bad PATH --output FILE [--config FILE]

Takes the same arguments as `curate train-quality`; see jobs/curate.py for what executors need.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from curate import main  # noqa: E402  (jobs/curate.py makes `curate_pipeline` importable)

if __name__ == "__main__":
    sys.exit(main(["train-quality", *sys.argv[1:]]))
