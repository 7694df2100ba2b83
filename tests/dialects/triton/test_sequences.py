"""Triton's sequence parameters (``sequence_id``, integer or string, ``sequence_start``,
``sequence_end``) as tritonclient sends them over HTTP and gRPC, reaching a stateful model
that keeps one running total per sequence, interleaved sequences included."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from conftest import Served
from tritonclient.utils import InferenceServerException


@pytest.fixture(scope="module")
def srv(serve: Any) -> Served:
    return serve("tritonmodels:Accumulate", "--model-name", "acc")


def client(s: Served, protocol: str) -> Any:
    if protocol == "http":
        return httpclient.InferenceServerClient(url=f"127.0.0.1:{s.http_port}")
    return grpcclient.InferenceServerClient(url=s.grpc_target)


def step(c: Any, seq: int | str, value: float, start: bool = False, end: bool = False) -> float:
    mod = httpclient if isinstance(c, httpclient.InferenceServerClient) else grpcclient
    i = mod.InferInput("x", [1], "FP64")
    i.set_data_from_numpy(np.array([value], np.float64))
    r = c.infer("acc", [i], sequence_id=seq, sequence_start=start, sequence_end=end)
    return float(r.as_numpy("total")[0])


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_interleaved_sequences(srv: Served, protocol: str) -> None:
    c = client(srv, protocol)
    a, b = (11, "user-b") if protocol == "http" else (12, "user-c")
    assert step(c, a, 1, start=True) == 1
    assert step(c, b, 100, start=True) == 100
    assert step(c, a, 2) == 3
    assert step(c, b, 5) == 105
    assert step(c, a, 3, end=True) == 6
    # Ended: the model forgot it, and says so (a 500 with its message).
    with pytest.raises(InferenceServerException) as e:
        step(c, a, 1)
    assert f"sequence {a!r} was not started here" in (e.value.message() or "")
    assert step(c, b, 1, end=True) == 106


@pytest.fixture(scope="module")
def two_workers(serve: Any) -> Served:
    return serve("tritonmodels:Accumulate", "--model-name", "acc", "--workers", "2")


def step_pid(
    c: Any, seq: int | str, value: float, start: bool = False, end: bool = False
) -> tuple[float, int]:
    mod = httpclient if isinstance(c, httpclient.InferenceServerClient) else grpcclient
    i = mod.InferInput("x", [1], "FP64")
    i.set_data_from_numpy(np.array([value], np.float64))
    r = c.infer("acc", [i], sequence_id=seq, sequence_start=start, sequence_end=end)
    return float(r.as_numpy("total")[0]), int(r.as_numpy("pid")[0])


def test_one_sequence_one_worker(two_workers: Served) -> None:
    """With two workers, each request on a new connection (the kernel hands connections
    to either worker), every sequence still reaches one copy of the model."""
    seqs: list[int | str] = [*range(1, 6), *(f"s-{i}" for i in range(5))]
    pids: dict[int | str, set[int]] = {s: set() for s in seqs}
    totals = dict.fromkeys(seqs, 0.0)
    for round_ in range(4):
        for n, s in enumerate(seqs):
            protocol = "http" if (n + round_) % 2 else "grpc"
            c = client(two_workers, protocol)  # a new connection each time
            value = float(n + 1)
            total, pid = step_pid(c, s, value, start=round_ == 0, end=round_ == 3)
            totals[s] += value
            assert total == totals[s], (s, round_, total, totals[s])
            pids[s].add(pid)
            c.close()
    assert all(len(p) == 1 for p in pids.values()), pids
    owners = {next(iter(p)) for p in pids.values()}
    assert len(owners) == 2, f"the sequences are spread over both workers: {pids}"
    assert all(p != two_workers.proc.pid for p in owners)  # workers, not the supervisor


def test_sequences_at_once(two_workers: Served) -> None:
    """Eight sequences at once from eight threads, each request on a new connection:
    every sequence keeps one worker and its own total."""
    from concurrent.futures import ThreadPoolExecutor

    def run(seq: int) -> set[int]:
        pids: set[int] = set()
        total = 0.0
        for k in range(10):
            c = client(two_workers, "grpc" if k % 2 else "http")
            got, pid = step_pid(c, 1000 + seq, 1.0, start=k == 0, end=k == 9)
            c.close()
            total += 1.0
            assert got == total, (seq, k, got)
            pids.add(pid)
        return pids

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, range(8)))
    assert all(len(p) == 1 for p in results), results


# A body near the limit whose tensor is wider raw than as JSON: `1,` is two bytes of JSON
# and eight of FP64, so the request forwarded to its sequence's worker is four times its
# body. Each worker must serve it the same, whichever accepted the connection.
LIMIT = 200_000


@pytest.fixture(scope="module")
def two_workers_small_bodies(serve: Any) -> Served:
    return serve("tritonmodels:Accumulate", "--model-name", "acc", "--workers", "2",
                 "--max-body-bytes", str(LIMIT))  # fmt: skip


def test_forwarded_requests_at_the_body_limit(two_workers_small_bodies: Served) -> None:
    """Requests just inside --max-body-bytes as JSON, each on a new connection (so both
    workers accept some and pass them on): every one is served by its sequence's worker,
    with the right total, none refused by the hop between workers."""
    import httpx

    n = (LIMIT - 300) // 2
    body = json.dumps(
        {"inputs": [{"name": "x", "shape": [n], "datatype": "FP64", "data": [1] * n}],
         "parameters": {}}, separators=(",", ":"))  # fmt: skip
    assert LIMIT - 400 < len(body) <= LIMIT and 8 * n > LIMIT
    seqs: list[int | str] = [1, 2, 3, "a", "b", "c"]
    pids: dict[int | str, set[int]] = {s: set() for s in seqs}
    for round_ in range(6):
        for s in seqs:
            doc = json.loads(body)
            doc["parameters"] = {"sequence_id": s, "sequence_start": round_ == 0,
                                 "sequence_end": round_ == 5}  # fmt: skip
            with httpx.Client() as c:  # a new connection each time
                r = c.post(f"{two_workers_small_bodies.url}/v2/models/acc/infer",
                           content=json.dumps(doc, separators=(",", ":")), timeout=30)  # fmt: skip
            assert r.status_code == 200, (s, round_, r.text)
            out = {o["name"]: o["data"] for o in r.json()["outputs"]}
            assert out["total"] == [float(n * (round_ + 1))], (s, round_, out)
            pids[s].add(out["pid"][0])
    assert all(len(p) == 1 for p in pids.values()), pids
    assert len({next(iter(p)) for p in pids.values()}) == 2, pids


def test_forwarded_grpc_requests_at_the_body_limit(two_workers_small_bodies: Served) -> None:
    """The widest case: packed INT64 contents take one byte an element as sent and eight
    raw. Each message just inside the limit, on a new channel, is served by its
    sequence's worker."""
    from tritonclient.grpc import service_pb2 as v2
    from tritonclient.grpc import service_pb2_grpc

    n = LIMIT - 200
    seqs: list[int | str] = [7, 8, "g", "h"]
    for round_ in range(6):
        for s in seqs:
            req = v2.ModelInferRequest(model_name="acc")
            req.inputs.add(name="x", datatype="INT64", shape=[n],
                           contents=v2.InferTensorContents(int64_contents=[1] * n))  # fmt: skip
            seq = req.parameters["sequence_id"]
            if isinstance(s, int):
                seq.int64_param = s
            else:
                seq.string_param = s
            req.parameters["sequence_start"].bool_param = round_ == 0
            req.parameters["sequence_end"].bool_param = round_ == 5
            assert LIMIT - 400 < req.ByteSize() <= LIMIT
            with two_workers_small_bodies.channel() as ch:
                stub = service_pb2_grpc.GRPCInferenceServiceStub(ch)
                reply = stub.ModelInfer(req, timeout=30)
            # Typed contents back, as a request in typed contents asked.
            total = next(o for o in reply.outputs if o.name == "total")
            assert list(total.contents.fp64_contents) == [n * (round_ + 1)], (s, round_)
