"""benchmarks/floor.py end to end, briefly: the floor servers (`http_floor`, `grpc_floor`)
and inferwire side by side under every pace the table has (vegeta, ghz, inferwire-bench
closed and open loop, the 5 ms model, 1 to 512 gRPC streams on one connection). The
figures of a debug build under a one-second run mean nothing; what is checked is that
every row ran against both servers with every request answered, and that the floor
servers speak their protocols to real clients (grpcio, httpx)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from conftest import ROOT
from floor import FloorProcess
from google.protobuf import json_format
from test_notebook_tools import load_tools  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # every row against both servers, one second each

ROWS = 17


@pytest.fixture(scope="module")
def examples() -> Path:
    subprocess.run(
        ["cargo", "build", "--quiet", "-p", "inferwire-server",
         "--example", "http_floor", "--example", "grpc_floor"],
        cwd=ROOT, check=True, timeout=900,
    )  # fmt: skip
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return Path(json.loads(meta.stdout)["target_directory"]) / "debug" / "examples"


@pytest.fixture
def grpc_floor(examples: Path) -> Iterator[int]:
    server = FloorProcess(examples, "grpc_floor")
    assert server.grpc_port is not None
    yield server.grpc_port
    server.stop()


def test_grpc_floor_answers_grpcio_calls_one_after_another_and_at_once(
    grpc_floor: int, pb: Any
) -> None:
    prediction_pb2 = pb.msgs
    with grpc.insecure_channel(f"127.0.0.1:{grpc_floor}") as channel:
        predict = channel.unary_unary(
            "/seldon.protos.Seldon/Predict",
            request_serializer=prediction_pb2.SeldonMessage.SerializeToString,
            response_deserializer=prediction_pb2.SeldonMessage.FromString,
        )
        msg = json_format.ParseDict({"data": {"ndarray": [[0]]}}, prediction_pb2.SeldonMessage())
        # Its reply is an empty message with status OK, as often as it is asked, on many
        # streams of one connection at once (and past the first connection window).
        for _ in range(3):
            assert predict(msg, timeout=5) == prediction_pb2.SeldonMessage()
        big = json_format.ParseDict(
            {"data": {"ndarray": [list(range(10_000))]}}, prediction_pb2.SeldonMessage()
        )
        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(lambda _: predict(big, timeout=10), range(64)))
        assert replies == [prediction_pb2.SeldonMessage()] * 64


def test_http_floor_waits_the_delay_it_is_given(examples: Path) -> None:
    server = FloorProcess(examples, "http_floor", "50")
    try:
        with httpx.Client() as client:
            t = time.monotonic()
            url = f"http://127.0.0.1:{server.http_port}/api/v1.0/predictions"
            r = client.post(url, json={"x": 1})
            took = time.monotonic() - t
    finally:
        server.stop()
    assert r.status_code == 200 and r.json() == [1]
    assert took >= 0.05


def test_the_floor_table_has_every_row_with_both_servers(
    examples: Path,
    load_tools: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    r = subprocess.run(
        [sys.executable, "benchmarks/floor.py", "--quick", "--examples", str(examples),
         "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    page = (tmp_path / "floor.md").read_text()
    assert page.startswith("# The floor at every pace (")
    assert "## Side by side" in page and "## Cold caches" in page
    rows = [line for line in page.splitlines() if re.match(r"\| (REST|gRPC) \|", line)]
    assert len(rows) == ROWS, page
    paces = [row.split(" | ")[1] for row in rows]
    for pace in ("vegeta, 1 in flight", "ghz, 1 in flight", "open loop 20,000/s",
                 "model sleeps 5 ms, 200/s", "native tree, open loop 200/s",
                 "512 streams, 1 connection"):  # fmt: skip
        assert pace in paces, paces
    for row in rows:
        cells = row.strip("|").split(" | ")
        floor, ours = float(cells[2]), float(cells[3])
        # A 1 s run can end within one of /proc's 10 ms ticks for a server that did
        # little; back to back, inferwire's debug build always spends more.
        assert floor >= 0 and ours >= 0, row
        if "back to back" in cells[1]:
            assert ours > 0, row
        counts = [int(n.replace(",", "")) for n in cells[7].strip(" |").split(", ")]
        assert all(n > 0 for n in counts), row
    assert "The one-connection gRPC floor (1 stream):" in page
    cold = [line for line in page.split("## Cold caches")[1].splitlines() if " µs |" in line]
    assert len(cold) == 5, page
