"""Every Seldon graph component type (seldon-core 1.x's wrapper), over REST and gRPC:
TRANSFORMER (``transform_input``), OUTPUT_TRANSFORMER (``transform_output``), ROUTER
(``route`` and feedback routing), COMBINER (``aggregate``) and MODEL, with the routes and
services Seldon's wrapper serves on every component, the fallbacks Seldon answers for a
method a class lacks, the low-level ``*_raw`` / ``*_rest`` / ``*_grpc`` methods, and
bad input. The behaviours are those of seldon-core's own tests
(test_transformer_microservice.py, test_router_microservice.py,
test_combiner_microservice.py, test_model_microservice.py); the classes are in
tests/seldon_types_models.py."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import grpc
import httpx
import pytest
from google.protobuf import json_format
from seldon_client import grpc_call, rest

M = "seldon_types_models.py:"


def body(*row: float, **meta: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"data": {"names": ["a", "b"][: len(row)], "ndarray": [list(row)]}}
    if meta:
        msg["meta"] = meta
    return msg


def call(server: Any, pb: Any, protocol: str, path: str, rpc: tuple[str, str], msg: Any) -> Any:
    """``msg`` to a REST ``path`` or a gRPC ``(service, method)``; the reply as a dict
    (asserting success)."""
    if protocol == "rest":
        r = rest(server.url, msg, path=path)
        assert r.status_code == 200, r.text
        return r.json()
    service, method = rpc
    with server.channel() as ch:
        if method == "Aggregate":
            return aggregate_grpc(ch, pb, msg, service)
        return grpc_call(ch, pb, msg, service=service, method=method)


def aggregate_grpc(ch: grpc.Channel, pb: Any, msgs: list[dict[str, Any]], service: str) -> Any:
    request = json_format.ParseDict({"seldonMessages": msgs}, pb.msgs.SeldonMessageList())
    stub = getattr(pb.grpc, f"{service}Stub")(ch)
    return json_format.MessageToDict(stub.Aggregate(request, timeout=30))


def grpc_error(server: Any, pb: Any, service: str, method: str, msg: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call(server, pb, "grpc", "", (service, method), msg)
    return e.value


@pytest.fixture(scope="module")
def transformer(serve: Any) -> Any:
    return serve(M + "Transformer")


@pytest.fixture(scope="module")
def router(serve: Any) -> Any:
    return serve(M + "Router")


@pytest.fixture(scope="module")
def combiner(serve: Any) -> Any:
    return serve(M + "Combiner")


@pytest.fixture(scope="module")
def model_only(serve: Any) -> Any:
    return serve(M + "ModelOnly")


TRANSFORM_INPUT = [
    ("rest", ("", "")),
    ("grpc", ("Transformer", "TransformInput")),
    ("grpc", ("Generic", "TransformInput")),
]


# -- TRANSFORMER ----------------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "rpc"), TRANSFORM_INPUT)
def test_transform_input(protocol: str, rpc: Any, transformer: Any, pb: Any) -> None:
    msg = body(1, 2, puid="p-1", tags={"from": "client"})
    got = call(transformer, pb, protocol, "/transform-input", rpc, msg)
    assert got["data"]["ndarray"] == [[2.0, 4.0]]
    assert got["data"]["names"] == ["t:0", "t:1"]  # Seldon names a reply by class_names
    # (X, names, meta) reach the method; its tags and metrics join the request's tags.
    assert got["meta"]["tags"]["from"] == "client"
    saw = got["meta"]["tags"]["transformer_saw"]
    assert saw == {"names": ["a", "b"], "puid": "p-1", "from": "client"}
    assert got["meta"]["puid"] == "p-1"
    assert any(m["key"] == "transformed" for m in got["meta"]["metrics"])


def test_transform_input_by_get_and_form(transformer: Any) -> None:
    q = quote(json.dumps(body(3)))
    r = httpx.get(f"{transformer.url}/transform-input?json={q}")
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"] == [[6.0]]
    r = httpx.post(f"{transformer.url}/transform-input", data={"json": json.dumps(body(4))})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"] == [[8.0]]
    r = httpx.get(f"{transformer.url}/transform-input")
    assert r.status_code == 400 and "`json` query parameter" in r.text


def test_a_tensor_request_gets_a_tensor_reply(transformer: Any) -> None:
    msg = {"data": {"tensor": {"shape": [1, 2], "values": [1, 5]}}}
    r = rest(transformer.url, msg, path="/transform-input")
    assert r.status_code == 200, r.text
    assert r.json()["data"]["tensor"] == {"shape": [1, 2], "values": [2.0, 10.0]}


# -- OUTPUT_TRANSFORMER ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "rpc"),
    [
        ("rest", ("", "")),
        ("grpc", ("OutputTransformer", "TransformOutput")),
        ("grpc", ("Generic", "TransformOutput")),
    ],
)
def test_transform_output(protocol: str, rpc: Any, serve: Any, pb: Any) -> None:
    server = serve(M + "OutputTransformer") if protocol == "rest" else _output(serve)
    got = call(server, pb, protocol, "/transform-output", rpc, body(1, 2))
    assert got["data"]["ndarray"] == [[2.0, 3.0]]
    assert got["data"]["names"] == ["first", "second"]  # the class's class_names


_OUTPUT: list[Any] = []


def _output(serve: Any) -> Any:
    if not _OUTPUT:
        _OUTPUT.append(serve(M + "OutputTransformer"))
    return _OUTPUT[0]


# -- ROUTER -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "rpc"),
    [("rest", ("", "")), ("grpc", ("Router", "Route")), ("grpc", ("Generic", "Route"))],
)
@pytest.mark.parametrize("child", [0, 1, -1])
def test_route(protocol: str, rpc: Any, child: int, router: Any, pb: Any) -> None:
    got = call(router, pb, protocol, "/route", rpc, body(child, 7))
    # Seldon's reply to a route: a SeldonMessage whose data is [[child]] (-1: all).
    assert got["data"]["ndarray"] == [[child]]


@pytest.mark.parametrize(
    ("protocol", "rpc"),
    [
        ("rest", ("", "")),
        ("grpc", ("Router", "SendFeedback")),
        ("grpc", ("Generic", "SendFeedback")),
        ("grpc", ("Model", "SendFeedback")),
    ],
)
def test_router_feedback_gets_its_routing(protocol: str, rpc: Any, router: Any, pb: Any) -> None:
    # The routing decision for this unit (named as served: the class name) reaches
    # send_feedback(features, names, reward, truth, routing); others' entries do not.
    fb = {
        "request": body(1),
        "response": {"meta": {"routing": {"Router": 1, "other": 5}}, **body(1)},
        "reward": 0.5,
    }
    got = call(router, pb, protocol, "/send-feedback", rpc, fb)
    assert got["data"]["ndarray"] == [[1.0, 0.5]]
    no_routing = {"request": body(1), "reward": 1.0}
    got = call(router, pb, protocol, "/api/v1.0/feedback", rpc, no_routing)
    assert got["data"]["ndarray"] == [[-99.0, 1.0]]


def test_feedback_by_get_as_seldon_takes_it(router: Any) -> None:
    fb = {"request": body(1), "response": {"meta": {"routing": {"Router": 0}}}, "reward": 2}
    r = httpx.get(f"{router.url}/send-feedback?json={quote(json.dumps(fb))}")
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"] == [[0.0, 2.0]]
    r = httpx.get(f"{router.url}/send-feedback")
    assert r.status_code == 400 and "`json` query parameter" in r.text
    # Seldon takes GET on /send-feedback only; /api/v1.0/feedback stays POST.
    assert httpx.get(f"{router.url}/api/v1.0/feedback").status_code == 405


def test_the_unit_id_comes_from_predictive_unit_id(serve: Any) -> None:
    server = serve(M + "Router", env={"PREDICTIVE_UNIT_ID": "router-a"})
    fb = {"request": body(1), "response": {"meta": {"routing": {"router-a": 2}}}, "reward": 1}
    r = rest(server.url, fb, path="/send-feedback")
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"] == [[2.0, 1.0]]


def test_an_async_route(serve: Any, pb: Any) -> None:
    server = serve(M + "AsyncRouter")
    for protocol, rpc in [("rest", ("", "")), ("grpc", ("Router", "Route"))]:
        assert call(server, pb, protocol, "/route", rpc, body(0))["data"]["ndarray"] == [[2]]


def test_a_route_that_is_no_int_is_a_400_and_a_raise_a_500(serve: Any, pb: Any) -> None:
    server = serve(M + "BadRouter")
    r = rest(server.url, body(1), path="/route")
    assert r.status_code == 400
    assert "Routing response must be int but got 'left'" in r.text
    e = grpc_error(server, pb, "Router", "Route", body(1))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Routing response must be int" in (e.details() or "")
    r = rest(server.url, body(-1), path="/route")
    assert r.status_code == 500 and "router broke" in r.text
    e = grpc_error(server, pb, "Generic", "Route", body(-1))
    assert e.code() == grpc.StatusCode.INTERNAL and "router broke" in (e.details() or "")
    # ... and it keeps serving.
    assert httpx.get(server.url + "/health/ping").status_code == 200
    assert rest(server.url, body(1), path="/route").status_code == 400


# -- COMBINER -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "rpc"),
    [("rest", ("", "")), ("grpc", ("Combiner", "Aggregate")), ("grpc", ("Generic", "Aggregate"))],
)
def test_aggregate(protocol: str, rpc: Any, combiner: Any, pb: Any) -> None:
    msgs = [body(1, 2, tags={"left": 1}), body(3, 6, tags={"right": 2})]
    got = call(combiner, pb, protocol, "/aggregate", rpc, msgs)
    assert got["data"]["ndarray"] == [[2.0, 4.0]]
    # Every child's tags, then the combiner's own.
    assert got["meta"]["tags"] == {"left": 1, "right": 2, "combined": True}


def test_aggregate_takes_both_json_forms_and_get(combiner: Any) -> None:
    msgs = [body(2), body(4)]
    for sent in (msgs, {"seldonMessages": msgs}):
        r = rest(combiner.url, sent, path="/aggregate")
        assert r.status_code == 200, r.text
        assert r.json()["data"]["ndarray"] == [[3.0]]
    r = httpx.get(f"{combiner.url}/aggregate?json={quote(json.dumps(msgs))}")
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[3.0]]
    # As SeldonClient.microservice(method="aggregate") posts it: a `json` form field.
    form = {"json": json.dumps({"seldonMessages": msgs})}
    r = httpx.post(f"{combiner.url}/aggregate", data=form)
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[3.0]]


def test_route_as_seldon_client_posts_it(router: Any) -> None:
    r = httpx.post(f"{router.url}/route", data={"json": json.dumps(body(1, 3))})
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"] == [[1]]


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        (body(1), "takes a SeldonMessageList"),
        ({"seldonMessages": 3}, "takes a SeldonMessageList"),
        ("5", "not a number"),
        ("[1, null]", "seldonMessages[0] is a number"),
        ([], "is empty"),
        ([body(1), 7], "seldonMessages[1] is a number"),
        ([{"data": {"ndarray": "x"}}], "seldonMessages[0]"),
    ],
)
def test_aggregate_bad_input_is_a_400_naming_it(sent: Any, said: str, combiner: Any) -> None:
    r = rest(combiner.url, sent, path="/aggregate")
    assert r.status_code == 400, r.text
    assert said in r.text, r.text


def test_a_combiner_that_raises_is_a_500(combiner: Any, pb: Any) -> None:
    msgs = [body(1, 2), {"data": {"names": ["x"], "ndarray": [[1]]}}]
    r = rest(combiner.url, msgs, path="/aggregate")
    assert r.status_code == 500 and "children disagree on names" in r.text
    e = grpc_error(combiner, pb, "Combiner", "Aggregate", msgs)
    assert e.code() == grpc.StatusCode.INTERNAL
    e = grpc_error(combiner, pb, "Combiner", "Aggregate", [])
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and "empty" in (e.details() or "")
    assert rest(combiner.url, [body(1)], path="/aggregate").status_code == 200


def test_aggregate_refuses_more_messages_than_its_bound_before_decoding(
    combiner: Any, pb: Any
) -> None:
    # Many tiny messages: a few bytes each on the wire, far more once decoded. Past 1024
    # the list is refused while it is read, over REST in both JSON forms and over gRPC.
    many = "[" + ",".join(["{}"] * 200_000) + "]"
    for text in (many, '{"seldonMessages": ' + many + "}"):
        r = httpx.post(
            f"{combiner.url}/aggregate", content=text, headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 400 and "more than 1024 messages" in r.text, r.text[:300]
    e = grpc_error(combiner, pb, "Combiner", "Aggregate", [{}] * 1025)
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "more than 1024 seldonMessages" in (e.details() or "")
    # At the bound it is served.
    r = rest(combiner.url, [body(1)] * 1024, path="/aggregate")
    assert r.status_code == 200, r.text[:300]


# -- what a type a class does not implement answers (as Seldon) -----------------------------


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_a_model_answers_the_other_types_as_seldon(protocol: str, model_only: Any, pb: Any) -> None:
    # transform_input / transform_output without the method: the input, unchanged.
    got = call(
        model_only, pb, protocol, "/transform-input", ("Transformer", "TransformInput"), body(1, 2)
    )
    assert got["data"]["ndarray"] == [[1.0, 2.0]]
    got = call(
        model_only,
        pb,
        protocol,
        "/transform-output",
        ("OutputTransformer", "TransformOutput"),
        body(3),
    )
    assert got["data"]["ndarray"] == [[3.0]]
    # route and aggregate without the method: 400, "... not defined".
    if protocol == "rest":
        r = rest(model_only.url, body(1), path="/route")
        assert r.status_code == 400 and "Route not defined" in r.text
        r = rest(model_only.url, [body(1)], path="/aggregate")
        assert r.status_code == 400 and "Aggregate not defined" in r.text
    else:
        e = grpc_error(model_only, pb, "Router", "Route", body(1))
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "Route not defined" in (e.details() or "")
        e = grpc_error(model_only, pb, "Combiner", "Aggregate", [body(1)])
        assert "Aggregate not defined" in (e.details() or "")
    # ... and predict still serves.
    assert rest(model_only.url, body(1)).json()["data"]["ndarray"] == [[10.0]]


def test_a_component_subclass_without_predict_answers_an_empty_predict(serve: Any) -> None:
    server = serve("seldon_types_models.py:StubRouter")
    r = rest(server.url, body(1))
    assert r.status_code == 200, r.text
    assert r.json()["data"] == {"names": [], "ndarray": []}
    assert rest(server.url, body(1), path="/route").json()["data"]["ndarray"] == [[0]]
    # The base's transform_input stub: the input unchanged.
    assert rest(server.url, body(5), path="/transform-input").json()["data"]["ndarray"] == [[5]]


# -- low-level methods ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def raw(serve: Any) -> Any:
    return serve(M + "RawComponent")


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_raw_methods_get_the_request_dict(protocol: str, raw: Any, pb: Any) -> None:
    got = call(
        raw, pb, protocol, "/transform-input", ("Generic", "TransformInput"), body(1, puid="x")
    )
    assert got["jsonData"] == {"op": "transform_input", "keys": ["data", "meta"]}
    got = call(
        raw, pb, protocol, "/transform-output", ("Generic", "TransformOutput"), {"strData": "s"}
    )
    assert got["strData"] == "output:s"
    got = call(raw, pb, protocol, "/route", ("Router", "Route"), body(1))
    assert got["data"]["ndarray"] == [[3]] and got["meta"]["tags"] == {"raw": True}
    got = call(
        raw, pb, protocol, "/aggregate", ("Combiner", "Aggregate"), [body(1), body(2), body(3)]
    )
    assert got["jsonData"] == {"children": 3}
    fb = {"request": body(1), "reward": 0.25}
    got = call(raw, pb, protocol, "/send-feedback", ("Router", "SendFeedback"), fb)
    assert got["jsonData"] == {"reward": 0.25, "keys": ["request", "reward"]}


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_a_raw_method_that_declines_falls_back(protocol: str, serve: Any, pb: Any) -> None:
    server = _declining(serve)
    for _ in range(2):  # the second time, the method is known to decline
        got = call(server, pb, protocol, "/transform-input", ("Generic", "TransformInput"), body(2))
        assert got["data"]["ndarray"] == [[6.0]]
        got = call(server, pb, protocol, "/route", ("Router", "Route"), body(2))
        assert got["data"]["ndarray"] == [[1]]
        msgs = [body(1, 2), body(3, 4)]
        got = call(server, pb, protocol, "/aggregate", ("Combiner", "Aggregate"), msgs)
        assert got["data"]["ndarray"] == [[4.0, 6.0]]
        fb = {"request": body(1), "reward": 0.5}
        got = call(server, pb, protocol, "/send-feedback", ("Router", "SendFeedback"), fb)
        assert got["data"]["ndarray"] == [[0.5]]
    health = httpx.get(server.url + "/health/status")
    assert health.json()["jsonData"] == {"fallback": True}


_DECLINING: list[Any] = []


def _declining(serve: Any) -> Any:
    if not _DECLINING:
        _DECLINING.append(serve(M + "DecliningRaw"))
    return _DECLINING[0]


def test_health_status_raw_is_the_reply(raw: Any) -> None:
    r = httpx.get(raw.url + "/health/status")
    assert r.status_code == 200 and r.json()["strData"] == "raw health"


def test_rest_methods_get_the_request_dict(serve: Any, pb: Any) -> None:
    server = serve(M + "RestComponent")
    r = rest(server.url, body(1))
    assert r.status_code == 200 and r.json() == {"jsonData": {"rest": ["data"]}}
    r = rest(server.url, {"jsonData": {"k": 1}}, path="/transform-output")
    assert r.json() == {"jsonData": {"rest_output": {"k": 1}}}
    r = rest(server.url, {"request": body(1), "reward": 2}, path="/send-feedback")
    assert r.status_code == 200, r.text
    assert r.json()["jsonData"] == {"reward": 2.0}


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_grpc_methods_get_protobuf_messages(protocol: str, serve: Any, pb: Any) -> None:
    server = _grpc_component(serve)
    got = call(server, pb, protocol, "/predict", ("Model", "Predict"), body(1))
    assert got["strData"] == "grpc:SeldonMessage:data"
    got = call(server, pb, protocol, "/route", ("Router", "Route"), body(1))
    assert got["data"]["ndarray"] == [[1.0]]
    got = call(server, pb, protocol, "/aggregate", ("Combiner", "Aggregate"), [body(1), body(2)])
    assert got["strData"] == "SeldonMessageList:2"


_GRPC: list[Any] = []


def _grpc_component(serve: Any) -> Any:
    if not _GRPC:
        _GRPC.append(serve(M + "GrpcComponent"))
    return _GRPC[0]


# -- the service type ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "kind"),
    [("Transformer", "TRANSFORMER"), ("Combiner", "COMBINER"), ("ModelOnly", "MODEL")],
)
def test_the_type_is_decided_from_the_methods_and_logged(cls: str, kind: str, serve: Any) -> None:
    server = serve(M + cls)
    assert f"serving as a Seldon {kind} (from its methods)" in server.log()


def test_service_type_by_flag_and_seldon_env(serve: Any) -> None:
    server = serve(M + "Router", "--service-type", "COMBINER")
    log = server.log()
    assert "serving as a Seldon COMBINER (service_type)" in log
    assert "has no aggregate()" in log
    # Every type's routes are served whatever the type, as Seldon's wrapper does.
    assert rest(server.url, body(1), path="/route").json()["data"]["ndarray"] == [[1]]
    server = serve(M + "Router", env={"SERVICE_TYPE": "ROUTER"})
    assert "serving as a Seldon ROUTER (service_type)" in server.log()


def test_an_unknown_service_type_does_not_start(serve: Any) -> None:
    with pytest.raises(RuntimeError, match="service_type"):
        serve(M + "Router", "--service-type", "SPLITTER")


def test_each_type_is_counted_under_its_route(router: Any, pb: Any) -> None:
    assert rest(router.url, body(0), path="/route").status_code == 200
    call(router, pb, "grpc", "", ("Router", "Route"), body(0))
    text = httpx.get(router.url + "/prometheus").text
    lines = [line for line in text.splitlines() if 'route="route"' in line]
    assert any('protocol="rest"' in line for line in lines), text[:2000]
    assert any('protocol="grpc"' in line for line in lines), text[:2000]


def test_every_component_service_is_healthy_and_listed(router: Any) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    services = [
        f"seldon.protos.{s}"
        for s in ("Generic", "Router", "Transformer", "OutputTransformer", "Combiner")
    ]
    with router.channel() as ch:
        health = health_pb2_grpc.HealthStub(ch)
        for service in services:
            r = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert r.status == health_pb2.HealthCheckResponse.SERVING, service
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        replies = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    listed = {s.name for s in replies[0].list_services_response.service}
    assert set(services) <= listed
