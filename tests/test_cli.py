"""The `curate` command: bad config and inputs stop before Spark starts, naming the culprit."""

import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_outputs import published

ROOT = Path(__file__).resolve().parents[1]


def curate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "curate_pipeline.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_unknown_key_stops_before_spark(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("read:\n  max_record_byte: 5\n")
    t0 = time.perf_counter()
    r = curate("run", "--config", str(bad), "--input", "x.warc.gz", "--output", str(tmp_path))
    assert r.returncode == 2
    assert "read.max_record_byte" in r.stderr and str(bad) in r.stderr
    assert "did you mean `read.max_record_bytes`?" in r.stderr
    assert "Spark" not in r.stderr and time.perf_counter() - t0 < 10


def test_missing_input_names_path(tmp_path):
    r = curate(
        "run",
        "--config",
        "conf/default.yaml",
        "--input",
        "/nope/a.warc.gz",
        "--output",
        str(tmp_path),
    )
    assert r.returncode == 2 and "/nope/a.warc.gz" in r.stderr


def test_config_defaults_to_conf_default_yaml_and_says_so(tmp_path):
    r = curate("run", "--input", "/nope/a.warc.gz", "--output", str(tmp_path))
    assert r.returncode == 2 and "/nope/a.warc.gz" in r.stderr
    assert f"config: {ROOT / 'conf' / 'default.yaml'}" in r.stdout


def test_no_input_at_all(tmp_path):
    r = curate("run", "--config", "conf/default.yaml", "--output", str(tmp_path))
    assert r.returncode == 2 and "--input" in r.stderr


def test_sample_command(tmp_path):
    r = curate("sample", "--output", str(tmp_path / "s.warc.gz"))
    assert r.returncode == 0 and (tmp_path / "s.warc.gz").stat().st_size > 1000


def test_spark_submit_runs_the_same_job(sample_warc, tmp_path):
    """jobs/curate.py under the venv's own spark-submit gives the same counts as `curate run`."""
    import json
    import os

    submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    r = subprocess.run(
        [
            str(submit),
            "--master",
            "local[2]",
            "--driver-java-options",
            "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "jobs/curate.py",
            "--config",
            "conf/default.yaml",
            "--input",
            str(sample_warc),
            "--output",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((published(tmp_path / "out") / "manifest.json").read_text())
    assert manifest["spark"]["master"] == "local[2]"
    assert manifest["counts"]["read"] == 25 and manifest["counts"]["kept"] == 2


def test_no_input_that_can_be_read_is_refused_before_spark(tmp_path):
    """A folder of CSV tables named .warc: refused from the files' first bytes, naming the
    file and what it looks like, before Spark starts (no run line is printed)."""
    bad = tmp_path / "crawl" / "table.warc"
    bad.parent.mkdir()
    bad.write_text("name,age\nalice,30\n")
    r = curate("run", "--config", "conf/default.yaml", "--input", str(bad.parent),
               "--output", str(tmp_path / "out"))  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("curate: no input can be read: ")
    assert f"{bad}: not a WARC or ARC file: it looks like text (first line: 'name,age')" in r.stderr
    assert "input file(s)" not in r.stderr and not (tmp_path / "out").exists()


def test_no_record_in_any_input_exits_1_with_the_damage_named(tmp_path):
    """The same inputs unprobed (input.probe_files: 0, as remote ones are): the run reads
    them, finds no record, and says so with the damage named."""
    bad = tmp_path / "crawl" / "table.warc"
    bad.parent.mkdir()
    bad.write_text("name,age\nalice,30\n")
    conf = tmp_path / "c.yaml"
    conf.write_text("input:\n  probe_files: 0\n")
    r = curate("run", "--config", str(conf), "--input", str(bad.parent),
               "--output", str(tmp_path / "out"))  # fmt: skip
    assert r.returncode == 1
    assert "curate: no input yielded any record" in r.stderr
    assert "1 input file(s) unreadable" in r.stderr and "table.warc: not a WARC or ARC" in r.stderr


def test_on_unreadable_fail_is_one_clean_line(tmp_path, sample_warc):
    bad = tmp_path / "table.warc"
    bad.write_text("name,age\nalice,30\n")
    strict = tmp_path / "strict.yaml"
    strict.write_text(
        (ROOT / "conf" / "default.yaml")
        .read_text()
        .replace("on_unreadable: record", "on_unreadable: fail")
        .replace("probe_files: 64", "probe_files: 0")  # found in the run, not before it
    )
    r = curate("run", "--config", str(strict), "--input", str(sample_warc), str(bad),
               "--output", str(tmp_path / "out"))  # fmt: skip
    assert r.returncode == 1
    failed = [line for line in r.stderr.splitlines() if line.startswith("curate: run failed")]
    assert len(failed) == 1 and str(bad) in failed[0] and "not a WARC or ARC file" in failed[0]
    assert "Traceback" not in r.stderr and "\tat org.apache" not in r.stderr


def test_ctrl_c_is_one_line_with_the_resume_command(sample_warc, tmp_path):
    """SIGINT to the process group, as a terminal's Ctrl-C: exit 130, no traceback, one line
    naming what is committed and the command that resumes; that command reuses it."""
    import json
    import os
    import shlex
    import signal
    import threading

    inputs = []
    for i in range(6):  # a chunk per file: some committed when the signal comes
        p = tmp_path / f"part-{i}.warc.gz"
        p.write_bytes(sample_warc.read_bytes())
        inputs += ["--input", str(p)]
    conf = tmp_path / "c.yaml"
    conf.write_text("chunks:\n  files: 1\n  parallel: 1\n")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "curate_pipeline.cli", "run", "--config", str(conf), *inputs,
         "--output", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr))
    reader.start()
    t0 = time.perf_counter()
    while not any("chunk-00000" in line for line in err) and time.perf_counter() - t0 < 300:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=120)
    reader.join()
    text = "".join(err)
    assert proc.returncode == 130, text
    assert "Traceback" not in text
    last = [line for line in err if line.strip()][-1]
    assert last.startswith("curate: interrupted; ") and "records committed in" in last
    chunks = int(last.split("interrupted; ")[1].split(" chunk(s)")[0])
    assert 1 <= chunks < 6
    cmd = shlex.split(last.split("resume with: ", 1)[1])
    assert cmd[:2] == ["curate", "run"] and cmd[-2:] == ["--output", str(out)]
    r = subprocess.run([sys.executable, "-m", "curate_pipeline.cli", *cmd[1:]], cwd=ROOT,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    statuses = [
        c["status"] for c in json.loads((published(out) / "manifest.json").read_text())["chunks"]
    ]
    assert statuses.count("reused") >= chunks and len(statuses) == 6


def test_another_runs_output_is_refused_with_the_choices(tmp_path, sample_warc):
    """What the output holds (DIR/_stages/run.json, written as a run starts) against this run:
    other inputs or other settings are refused before Spark starts, naming what is there and
    the choices; the same inputs (a resume) or more after them (added inputs) go on."""
    import shutil

    from curate_pipeline.config import ConfigError, load_config
    from curate_pipeline.location import Location
    from curate_pipeline.run import run_record

    cfg = load_config(ROOT / "conf" / "default.yaml")
    a, b = tmp_path / "a.warc.gz", tmp_path / "b.warc.gz"
    shutil.copy(sample_warc, a)
    shutil.copy(sample_warc, b)
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)  # an earlier run's output
    run_record.write(Location.of(out), [str(a)], cfg, "conf/default.yaml")
    run_record.check(out, [str(a)], cfg, None)  # a resume
    run_record.check(out, [str(a), str(b)], cfg, None)  # added inputs, after the old ones
    r = curate("run", "--input", str(b), "--output", str(out))
    assert r.returncode == 2 and "Spark" not in r.stderr
    assert "holds a run of 1 input(s) (a.warc.gz)" in r.stderr
    assert "--overwrite" in r.stderr and f"--input {a} --input {b} --output {out}" in r.stderr
    tuned = cfg.model_copy(deep=True)
    tuned.langid.threshold = 0.9
    with pytest.raises(ConfigError, match=r"differs in langid.threshold \(0.65 -> 0.9\).*--retune"):
        run_record.check(out, [str(a)], tuned, None)
    run_record.check(out, [str(a)], tuned, None, retune=True)
    moved = cfg.model_copy(deep=True)
    moved.spark.arrow_batch_rows = 8  # how it runs, not what it decides: no refusal
    moved.input.probe_files = 3
    run_record.check(out, [str(a)], moved, None)
    # a record written before a key existed (the key at its default): no refusal; a
    # weights table filled in: refused, naming the entry
    import json

    record = out / "_stages" / "run.json"
    held = json.loads(record.read_text())
    del held["settings"]["langid.threshold"]
    record.write_text(json.dumps(held))
    run_record.check(out, [str(a)], cfg, None)
    weighted = cfg.model_copy(deep=True)
    weighted.mixture.weights = {"news": 2.0}
    with pytest.raises(ConfigError, match=r"mixture.weights.news \(null -> 2.0\)"):
        run_record.check(out, [str(a)], weighted, None)
    from curate_pipeline.run.preflight import clear_output

    clear_output(Location.of(out))  # --overwrite: the working state goes; what was published
    # stays until the new version's commit (an old layout's data/ then, versions by retention)
    assert out.is_dir() and [p.name for p in out.iterdir()] == ["data"]


def test_every_subcommand_help_ends_with_an_example_that_parses():
    import shlex

    from curate_pipeline.cli import EXAMPLES, _parser

    parser = _parser()
    commands = set(parser._subparsers._group_actions[0].choices)  # noqa: SLF001
    assert commands == set(EXAMPLES)
    for name, example in EXAMPLES.items():
        args = shlex.split(example)
        assert args[:2] == ["curate", name]
        assert parser.parse_args(args[1:]).command == name
        r = curate(name, "--help")
        assert r.returncode == 0 and f"example:\n  {example}" in r.stdout


def test_without_pyspark_the_run_says_which_extra(sample_warc, tmp_path):
    """pyspark is the `spark` extra (a cluster brings its own): where none is importable, a
    run says so in one line instead of a traceback."""
    code = ("import sys; sys.modules['pyspark'] = None; from curate_pipeline.cli import main; "
            "sys.exit(main(sys.argv[1:]))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code, "run", "--input", str(sample_warc),
                        "--output", str(tmp_path / "out")], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    assert "pip install 'curate-pipeline[spark]'" in r.stderr and "Traceback" not in r.stderr


def test_version_log_level_and_set_overrides():
    """Issue 64: `curate --version` (pyproject's version, the one place it is written),
    --log-level before or after the command, and --set section.key=value over the config,
    named as such by `curate config show`; a malformed --set is one line."""
    from importlib import metadata

    from curate_pipeline.cli import _parser

    r = curate("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"curate {metadata.version('curate-pipeline')}"
    for argv in (["--log-level", "warning", "config", "show"],
                 ["config", "show", "--log-level", "DEBUG"]):  # fmt: skip
        assert _parser().parse_args(argv).log_level in ("WARNING", "DEBUG")
    assert not hasattr(_parser().parse_args(["config", "show"]), "log_level")  # INFO
    r = curate("config", "show", "--set", "langid.threshold=0.5", "--set", "output.delta=false")
    lines = dict(ln.split(":", 1) for ln in r.stdout.splitlines() if ln.startswith(
        ("langid.threshold:", "output.delta:")))  # fmt: skip
    assert lines["langid.threshold"].split("#")[0].strip() == "0.5"
    assert lines["output.delta"].split("#")[0].strip() == "false"
    assert all(v.strip().endswith("# --set") for v in lines.values())
    r = curate("config", "show", "--set", "langid")
    assert r.returncode == 2 and "give section.key=value" in r.stderr
    r = curate("config", "show", "--set", "langid.treshold=0.5")
    assert r.returncode == 2 and "langid.treshold" in r.stderr  # unknown keys are refused
