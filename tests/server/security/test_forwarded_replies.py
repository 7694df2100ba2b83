"""The reply of a request passed between workers (issue 41): with ``--workers 2`` a V2
request of a sequence another worker owns is forwarded to it over a unix socket and its
reply read back. That reply's frame is bounded as the request's is (9 x
``--max-body-bytes`` + 1 MiB): one within it is relayed whole, one past it is refused by
the owner before it is written, and the client gets an error naming the limit at once,
not a hang, a lost worker or a reply sized by a length read off the socket."""

from __future__ import annotations

import time
from typing import Any

import httpx

LIMIT = 65_536  # --max-body-bytes
FRAME = 9 * LIMIT + (1 << 20)


def infer(url: str, elements: int) -> httpx.Response:
    body = {
        "inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [1]}],
        "parameters": {"sequence_id": 41, "reply_elements": elements},
    }
    with httpx.Client() as c:  # a new connection each time: either worker accepts it
        return c.post(f"{url}/v2/models/sized/infer", json=body, timeout=30)


def test_a_forwarded_reply_past_the_frame_limit_is_a_clear_error(serve: Any) -> None:
    server = serve(
        "sequence_models:SizedReply",
        "--model-name",
        "sized",
        "--workers",
        "2",
        "--max-body-bytes",
        str(LIMIT),
    )
    # Within the limit (8 raw bytes an element): the same reply whichever worker accepts.
    small = FRAME // 8 - 10_000
    owners = set()
    for _ in range(8):
        r = infer(server.url, small)
        assert r.status_code == 200, r.text
        out = {o["name"]: o for o in r.json()["outputs"]}
        assert out["values"]["shape"] == [small]
        owners.add(out["pid"]["data"][0])
    assert len(owners) == 1, owners  # one worker owns the sequence
    # Past it: the owner answers a request it accepted itself; one forwarded to it gets
    # the limit's error.
    statuses = []
    for _ in range(16):
        started = time.monotonic()
        r = infer(server.url, 4 * FRAME // 8)
        assert time.monotonic() - started < 20
        statuses.append(r.status_code)
        if r.status_code == 200:
            assert r.json()["outputs"][1]["data"] == list(owners)
        else:
            assert r.status_code == 500, r.text
            error = r.json()["error"]
            assert "too large to pass back from the worker that serves this sequence" in error
            assert f"more than the {FRAME} allowed" in error and "--max-body-bytes" in error
    assert 500 in statuses, statuses  # 16 new connections all on the owner: 1 in 65,536
    # The workers' sockets are still in step: the next forwarded reply arrives whole.
    for _ in range(4):
        r = infer(server.url, small)
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][1]["data"] == list(owners)
