"""A model that fails on every request must not flood the log: the first error of a kind
is logged with its traceback, repeats are counted and summed up periodically and when the
worker stops, and every client still gets its 500 with the model's message."""

from __future__ import annotations

import time
from typing import Any

import grpc
import httpx
from google.protobuf import json_format

PREDICT = "/api/v1.0/predictions"
BODY = {"data": {"ndarray": [[1.0, 2.0]]}}


def fail_rest(url: str, n: int) -> None:
    with httpx.Client(base_url=url) as c:
        for _ in range(n):
            r = c.post(PREDICT, json=BODY)
            assert r.status_code == 500 and "model exploded" in r.json()["status"]["info"]


def test_one_traceback_then_counted_repeats_in_summaries(serve: Any, pb: Any) -> None:
    s = serve("models:Failing", "--log-repeats-every", "1")
    fail_rest(s.url, 30)
    with s.channel() as ch:
        stub = pb.grpc.SeldonStub(ch)
        for _ in range(5):
            msg = json_format.ParseDict(BODY, pb.msgs.SeldonMessage())
            try:
                stub.Predict(msg, timeout=10)
                raise AssertionError("the model should fail")
            except grpc.RpcError as e:
                assert "model exploded" in (e.details() or "")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "again" not in s.log():
        time.sleep(0.1)
    time.sleep(1.5)  # requests answered just before a summary come in the next one
    log = s.log()
    assert log.count("Traceback (most recent call last)") == 1, log
    assert "Failing.predict raised (repeats of this error are counted" in log
    summaries = [line for line in log.splitlines() if " again " in line]
    assert summaries, log
    assert all("Failing.predict raised ValueError at models.py:" in x for x in summaries)
    assert all(x.endswith("model exploded: bad luck") for x in summaries), summaries
    repeats = sum(int(x.split(" again ")[1].split()[0]) for x in summaries)
    assert repeats == 34, summaries  # 35 failures: the first in full, 34 counted
    assert "(35 in all;" in summaries[-1]
    # The server keeps serving.
    r = httpx.post(s.url + PREDICT, json={"strData": "ok"})
    assert r.status_code == 200 and r.json()["strData"] == "fine"


def test_repeats_are_summed_up_when_the_worker_stops(serve: Any) -> None:
    s = serve("models:Failing")  # the default: a summary a minute
    fail_rest(s.url, 200)
    log = s.log()
    assert log.count("Traceback (most recent call last)") == 1 and " again " not in log, log
    assert s.stop() == 0
    summary = [line for line in s.log_path.read_text().splitlines() if " again " in line]
    assert len(summary) == 1 and "again 199 times (200 in all;" in summary[0], summary


def test_every_traceback_when_asked(serve: Any) -> None:
    s = serve("models:Failing", "--log-repeats-every", "0")
    fail_rest(s.url, 3)
    time.sleep(0.2)
    assert s.log().count("Traceback (most recent call last)") == 3


def test_a_bad_setting_is_refused(serve: Any) -> None:
    import pytest

    with pytest.raises(RuntimeError, match="log_repeats_every: must be 0"):
        serve("models:Failing", "--log-repeats-every", "-1")


def test_kinds_are_bounded_and_each_says_where_it_was_raised(monkeypatch: Any, caplog: Any) -> None:
    """In process: the table of kinds stays bounded however many distinct lines raise."""
    import logging

    from inferwire import error_log

    monkeypatch.setattr(error_log, "MAX_KINDS", 2)
    errors = error_log.ErrorLog(every=3600)

    def raise_at(line: int) -> None:
        exec(compile("\n" * line + f"raise KeyError({line})", f"m{line}.py", "exec"))

    with caplog.at_level(logging.ERROR, logger="inferwire.model"):
        for line in range(5):
            for _ in range(3):
                try:
                    raise_at(line)
                except KeyError as e:
                    errors.error("M.predict", e)
        errors.flush()
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 2  # the first of each of the two kinds remembered
    lines = [r.getMessage() for r in caplog.records if not r.exc_info]
    assert "M.predict raised KeyError at m0.py:1 again 2 times (3 in all;" in lines[0]
    assert "M.predict raised KeyError at m1.py:2 again 2 times (3 in all;" in lines[1]
    assert lines[2].startswith("9 more model errors of kinds past the first 2 (9 in all;")
    assert len(errors._kinds) == 3
