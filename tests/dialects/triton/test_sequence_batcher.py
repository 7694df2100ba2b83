"""Triton's sequence batcher as a Python-backend model sees it under `inferwire
tritonserver`: every request of a sequence runs on the instance that ran its first, so a
model may keep a sequence's state in ``self`` (as Triton's qa/python_models/sequence_py
and the dyna_sequence test backend do), and the control inputs the config names (START,
END, READY, CORRID) arrive as input tensors, as Triton's sequence batcher adds them
(sequence_batch_scheduler.cc)."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from inferwire.triton.sequences import END, START, Instances
from triton_server import Tritonserver, repository
from tritonclient.utils import InferenceServerException

# Keeps each sequence's running total in the instance, as Triton's QA models do; answers
# with the total and the instance's name.
PER_INSTANCE = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]
        self.totals = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            sid, flags = request.correlation_id(), request.flags()
            x = int(pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy().sum())
            if flags & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.totals[sid] = 0
            if sid not in self.totals:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    f"sequence {sid} did not start on {self.instance}")))
                continue
            self.totals[sid] += x
            total = self.totals[sid]
            if flags & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END:
                del self.totals[sid]
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT", np.array([[total]], np.int32)),
                pb_utils.Tensor("INSTANCE", np.array([[self.instance.encode()]], np.object_)),
            ]))
        return responses
"""

PER_INSTANCE_CONFIG = """
name: "per_instance"
backend: "python"
max_batch_size: 8
sequence_batching { }
input [ { name: "INPUT", data_type: TYPE_INT32, dims: [ 1 ] } ]
output [
  { name: "OUTPUT", data_type: TYPE_INT32, dims: [ 1 ] },
  { name: "INSTANCE", data_type: TYPE_STRING, dims: [ 1 ] }
]
instance_group [ { count: 2, kind: KIND_CPU } ]
"""

# Answers each control input it is given, as it was given.
ECHO = """
import triton_python_backend_utils as pb_utils

CONTROLS = ("START", "END", "READY", "CORRID")


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            outputs = []
            for name in CONTROLS:
                tensor = pb_utils.get_input_tensor_by_name(request, name)
                if tensor is not None:
                    outputs.append(pb_utils.Tensor(name + "_OUT", tensor.as_numpy()))
            responses.append(pb_utils.InferenceResponse(outputs))
        return responses
"""


def controls_config(name: str, max_batch_size: int, corrid: str) -> str:
    return f"""
name: "{name}"
backend: "python"
max_batch_size: {max_batch_size}
sequence_batching {{
  control_input [
    {{ name: "START", control [ {{ kind: CONTROL_SEQUENCE_START, int32_false_true: [ 0, 1 ] }} ] }},
    {{ name: "END", control [ {{ kind: CONTROL_SEQUENCE_END, fp32_false_true: [ 0.5, 2.5 ] }} ] }},
    {{ name: "READY", control [ {{ kind: CONTROL_SEQUENCE_READY, bool_false_true: [ false, true ] }} ] }},
    {{ name: "CORRID", control [ {{ kind: CONTROL_SEQUENCE_CORRID, data_type: {corrid} }} ] }}
  ]
}}
input [ {{ name: "INPUT", data_type: TYPE_INT32, dims: [ 1 ] }} ]
output [
  {{ name: "START_OUT", data_type: TYPE_INT32, dims: [ 1 ] }},
  {{ name: "END_OUT", data_type: TYPE_FP32, dims: [ 1 ] }},
  {{ name: "READY_OUT", data_type: TYPE_BOOL, dims: [ 1 ] }},
  {{ name: "CORRID_OUT", data_type: {corrid}, dims: [ 1 ] }}
]
"""


def model(tmp: Path, name: str, config: str, source: str) -> Path:
    folder = tmp / "src" / name
    (folder / "1").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(textwrap.dedent(config))
    (folder / "1" / "model.py").write_text(source)
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    tmp = tmp_path_factory.mktemp("sequences")
    extra = {
        "per_instance": model(tmp, "per_instance", PER_INSTANCE_CONFIG, PER_INSTANCE),
        "controls": model(tmp, "controls", controls_config("controls", 8, "TYPE_UINT64"), ECHO),
        "controls_unbatched": model(
            tmp, "controls_unbatched", controls_config("controls_unbatched", 0, "TYPE_STRING"), ECHO
        ),
    }
    s = Tritonserver(repository(tmp, extra=extra))
    yield s
    s.stop()


def client(s: Tritonserver, protocol: str) -> Any:
    if protocol == "http":
        return httpclient.InferenceServerClient(f"127.0.0.1:{s.http_port}")
    return grpcclient.InferenceServerClient(s.grpc_target)


def step(c: Any, name: str, seq: int | str, value: int, shape: list[int], **flags: bool) -> Any:
    mod = httpclient if isinstance(c, httpclient.InferenceServerClient) else grpcclient
    i = mod.InferInput("INPUT", shape, "INT32")
    i.set_data_from_numpy(np.full(shape, value, np.int32))
    return c.infer(name, [i], sequence_id=seq, **flags)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_sequence_stays_on_the_instance_it_started_on(
    server: Tritonserver, protocol: str
) -> None:
    c = client(server, protocol)
    seqs = [100, 101, 102] if protocol == "http" else [200, "s-201", 202]
    seen: dict[int | str, set[str]] = {s: set() for s in seqs}
    totals = dict.fromkeys(seqs, 0)
    for n in range(5):  # interleaved: each instance runs requests of other sequences between
        for k, seq in enumerate(seqs):
            value = 10 * k + n
            r = step(
                c, "per_instance", seq, value, [1, 1], sequence_start=n == 0, sequence_end=n == 4
            )
            totals[seq] += value
            assert r.as_numpy("OUTPUT")[0, 0] == totals[seq]
            got = r.as_numpy("INSTANCE")[0, 0]
            seen[seq].add(got.decode() if isinstance(got, bytes) else got)
    assert all(len(on) == 1 for on in seen.values()), seen
    # Three sequences at once on two instances: both in use.
    assert len(set().union(*seen.values())) == 2, seen


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_control_inputs_arrive_as_tensors(server: Tritonserver, protocol: str) -> None:
    c = client(server, protocol)
    first = step(c, "controls", 77, 5, [1, 1], sequence_start=True)
    middle = step(c, "controls", 77, 5, [1, 1])
    last = step(c, "controls", 77, 5, [1, 1], sequence_end=True)
    for r, start, end in ((first, 1, 0.5), (middle, 0, 0.5), (last, 0, 2.5)):
        # [1, 1]: a batch dimension before the control's [1], as Triton gives it.
        assert r.as_numpy("START_OUT").tolist() == [[start]]
        assert r.as_numpy("START_OUT").dtype == np.int32
        assert r.as_numpy("END_OUT").tolist() == [[end]]
        assert r.as_numpy("END_OUT").dtype == np.float32
        assert r.as_numpy("READY_OUT").tolist() == [[True]]
        assert r.as_numpy("CORRID_OUT").tolist() == [[77]]
        assert r.as_numpy("CORRID_OUT").dtype == np.uint64


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_control_inputs_without_batching_and_a_string_id(
    server: Tritonserver, protocol: str
) -> None:
    c = client(server, protocol)
    r = step(c, "controls_unbatched", "user-9", 1, [1], sequence_start=True, sequence_end=True)
    assert r.as_numpy("START_OUT").tolist() == [1]
    assert r.as_numpy("END_OUT").tolist() == [2.5]
    got = r.as_numpy("CORRID_OUT")[0]
    assert (got.decode() if isinstance(got, bytes) else got) == "user-9"


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_string_id_for_a_numeric_corrid_is_tritons_error(
    server: Tritonserver, protocol: str
) -> None:
    c = client(server, protocol)
    with pytest.raises(InferenceServerException) as e:
        step(c, "controls", "abc", 1, [1, 1], sequence_start=True)
    assert (
        "sequence batching control 'CORRID' data-type is 'BYTES', but model 'controls' "
        "expects 'UINT64'" in (e.value.message() or "")
    )
    assert e.value.status() in ("400", "StatusCode.INVALID_ARGUMENT")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_requests_triton_s_sequence_batcher_refuses_are_refused_in_its_words(
    server: Tritonserver, protocol: str
) -> None:
    c = client(server, protocol)
    bad = ("400", "StatusCode.INVALID_ARGUMENT")
    # No correlation id.
    with pytest.raises(InferenceServerException) as e:
        step(c, "controls", 0, 1, [1, 1], sequence_start=True)
    assert e.value.status() in bad
    assert (e.value.message() or "").endswith(
        "inference request to model 'controls' must specify a non-zero or non-empty correlation ID"
    )
    # A sequence's first request without START, and one after its END.
    seq = 4242 if protocol == "http" else 4343
    for attempt in ("never started", "ended"):
        with pytest.raises(InferenceServerException) as e:
            step(c, "controls", seq, 1, [1, 1])
        assert e.value.status() in bad, attempt
        assert (e.value.message() or "").endswith(
            f"inference request for sequence {seq} to model 'controls' must specify the "
            "START flag on the first request of the sequence"
        ), attempt
        step(c, "controls", seq, 1, [1, 1], sequence_start=True)
        step(c, "controls", seq, 1, [1, 1], sequence_end=True)
    # A model without sequence batching takes requests of no sequence.
    r = step(c, "per_instance", 9, 1, [1, 1], sequence_start=True, sequence_end=True)
    assert r.as_numpy("OUTPUT")[0, 0] == 1


def test_instances_place_new_sequences_on_the_least_loaded() -> None:
    pool = Instances(["a", "b"], idle_s=60)
    with pool.take(1, START) as first:
        pass
    with pool.take(2, START) as second:
        pass
    assert {first, second} == {"a", "b"}
    with pool.take(1) as again:
        assert again == first
    with pool.take(1, END) as last:
        assert last == first
    # Ended: sequence 1's instance is free for the next new sequence.
    with pool.take(3, START) as third:
        assert third == first


def test_instances_forget_an_idle_sequence() -> None:
    pool = Instances(["a", "b"], idle_s=0.01)
    with pool.take(1, START) as first:
        pass
    time.sleep(0.05)
    with pool.take(2, START) as second:
        # sequence 1 was idle past the limit: forgotten, so "a" is as free as "b"
        assert second == "a" == first
