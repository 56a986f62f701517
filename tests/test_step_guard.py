"""A per-document step that raises on one row drops that row with the error, not the task."""

from __future__ import annotations

from pipeline.stages.extract import run_steps


class _Seconds:
    def add(self, _: float) -> None:
        pass


def test_a_failing_row_is_dropped_with_its_error_and_the_rest_go_on():
    def step(rows: list[dict]) -> list[dict]:
        for r in rows:
            if "boom" in r["text"]:
                raise UnicodeError(f"cannot handle {r['doc_id']}")
            r["n"] = len(r["text"])
        return rows

    def after(rows: list[dict]) -> list[dict]:
        for r in rows:
            r["after"] = True
        return rows

    rows = [{"doc_id": f"d{i}", "text": t, "reject_reason": None, "reject_stage": None,
             "reject_detail": None} for i, t in enumerate(["ok", "boom here", "fine"])]  # fmt: skip
    run_steps(rows, [("rules", step, _Seconds()), ("quality", after, _Seconds())])
    assert [r["reject_reason"] for r in rows] == [None, "error", None]
    bad = rows[1]
    assert bad["reject_stage"] == "rules"
    assert bad["reject_detail"] == "UnicodeError: cannot handle d1"
    assert [r.get("n") for r in rows] == [2, None, 4]
    assert [r.get("after") for r in rows] == [True, None, True]  # later steps skip it
