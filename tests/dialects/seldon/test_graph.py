"""A SeldonDeployment's inference graph served in one process (``inferwire serve
sdep.yaml``): each test writes the YAML a Seldon user would apply, starts a real server
and checks which nodes ran, in what order, over REST and gRPC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from google.protobuf import empty_pb2
from seldon_client import rest, send

HERE = Path(__file__).parent


def deployment(tmp: Path, graph: dict[str, Any], classes: dict[str, str], **extra: Any) -> str:
    """Writes a SeldonDeployment whose containers name their class in MODEL_NAME."""
    containers = [
        {
            "name": name,
            "image": f"example/{name}:1.0",
            "env": [{"name": "MODEL_NAME", "value": cls}],
        }
        for name, cls in classes.items()
    ]
    sdep = {
        "apiVersion": "machinelearning.seldon.io/v1",
        "kind": "SeldonDeployment",
        "metadata": {"name": extra.pop("name", "graph")},
        "spec": {
            "predictors": [
                {
                    "name": "main",
                    "componentSpecs": [{"spec": {"containers": containers}}],
                    "graph": graph,
                    **extra,
                }
            ]
        },
    }
    path = tmp / "sdep.yaml"
    path.write_text(yaml.safe_dump(sdep))
    return str(path)


def body(*rows: list[float]) -> dict[str, Any]:
    return {"data": {"ndarray": [list(r) for r in rows]}}


@pytest.fixture(scope="module")
def chain(serve: Any) -> Any:
    return serve(str(HERE / "graphs/chain.yaml"))


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_transformer_model_output_transformer_run_in_order(
    protocol: str, chain: Any, pb: Any
) -> None:
    # (x + 1) * 3, rounded to 1 decimal: the order shows in the numbers.
    got = send(protocol, chain, pb, {"meta": {"tags": {"client": "x"}}, **body([1.04, 2.0])})
    assert got["data"]["ndarray"] == [[6.1, 9.0]]
    tags = got["meta"]["tags"]
    assert tags["client"] == "x" and tags["transformer"] == "ran" and tags["output"] == "rounded"
    # Every node that ran, with its container's image, as Seldon's graph lists them.
    assert got["meta"]["requestPath"] == {
        "round": "example/round:1.0",
        "add-one": "example/add-one:1.0",
        "double": "example/double:1.0",
    }
    # (protobuf's JSON mapping leaves out type COUNTER, the enum's zero)
    metrics = [(m["key"], m["value"]) for m in got["meta"]["metrics"]]
    assert ("double_calls", 1.0) in metrics


def test_each_node_is_served_on_its_own_routes(chain: Any) -> None:
    # The model node alone: 3 x, with its class names; the transformer alone: x + 1.
    got = rest(chain.url, body([1, 2]), "/api/double/default").json()
    assert got["data"]["ndarray"] == [[3, 6]]
    assert got["data"]["names"] == ["c0", "c1"]
    # A model on its own route names itself in requestPath, not the graph.
    assert got["meta"]["requestPath"] == {"double": "double"}
    got = rest(chain.url, body([1, 2]), "/api/add-one/default").json()
    assert got["data"]["ndarray"] == [[2, 3]]
    v2 = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [1, 2]}]}
    got = httpx.post(f"{chain.url}/v2/models/round/infer", json=v2).json()
    assert got["outputs"][0]["data"] == [1.0, 2.0]


def test_graph_metadata_describes_the_nodes(chain: Any, pb: Any) -> None:
    # Seldon's graph metadata: each node's, and the graph's edges (the transformer's
    # inputs, the output transformer's outputs).
    got = httpx.get(f"{chain.url}/api/v1.0/metadata").json()
    assert got["name"] == "default"
    assert set(got["models"]) == {"round", "add-one", "double"}
    assert got["models"]["double"]["name"] == "double"
    assert got["graphinputs"] == [{"name": "x", "datatype": "FP32"}]
    assert got["graphoutputs"] == [{"name": "rounded", "datatype": "FP64"}]
    with chain.channel() as ch:
        stub = pb.grpc.SeldonStub(ch)
        g = stub.GraphMetadata(empty_pb2.Empty(), timeout=10)
        assert g.name == "default" and set(g.models) == {"round", "add-one", "double"}
        assert [t.name for t in g.inputs] == ["x"] and [t.name for t in g.outputs] == ["rounded"]
        node = stub.ModelMetadata(pb.msgs.SeldonModelMetadataRequest(name="add-one"), timeout=10)
        assert node.name == "add-one" and [t.name for t in node.inputs] == ["x"]


def test_router_sends_to_one_child_and_feedback_follows_the_route(
    serve: Any, tmp_path: Path, pb: Any
) -> None:
    graph = {
        "name": "router",
        "type": "ROUTER",
        "children": [
            {"name": "negate", "type": "MODEL"},
            {"name": "square", "type": "MODEL"},
        ],
    }
    classes = {
        "router": "graph_models.FirstColumnRouter",
        "negate": "graph_models.Negate",
        "square": "graph_models.Square",
    }
    s = serve(deployment(tmp_path, graph, classes))
    for protocol in ("rest", "grpc"):
        low = send(protocol, s, pb, body([3, 4]))
        assert low["data"]["ndarray"] == [[-3, -4]]
        assert low["meta"]["routing"] == {"router": 0}
        high = send(protocol, s, pb, body([12, 2]))
        assert high["data"]["ndarray"] == [[144, 4]]
        assert high["meta"]["routing"] == {"router": 1}
    feedback = {
        "request": body([12, 2]),
        "response": {"meta": {"routing": {"router": 1}}, **body([144, 4])},
        "reward": 0.5,
    }
    r = rest(s.url, feedback, "/api/v1.0/feedback")
    assert r.status_code == 200, r.text
    # A routing index past the children is the client's error, named.
    bad = {**feedback, "response": {"meta": {"routing": {"router": 7}}}}
    r = rest(s.url, bad, "/api/v1.0/feedback")
    assert r.status_code in (400, 500) and "routing" in r.text


def test_combiner_aggregates_every_child(serve: Any, tmp_path: Path, pb: Any) -> None:
    graph = {
        "name": "sum",
        "type": "COMBINER",
        "children": [
            {"name": "double", "type": "MODEL"},
            {"name": "negate", "type": "MODEL"},
            {"name": "square", "type": "MODEL"},
        ],
    }
    classes = {
        "sum": "graph_models.Sum",
        "double": "graph_models.Double",
        "negate": "graph_models.Negate",
        "square": "graph_models.Square",
    }
    s = serve(deployment(tmp_path, graph, classes))
    for protocol in ("rest", "grpc"):
        # 2x - x + x^2
        got = send(protocol, s, pb, body([1, 2], [3, 4]))
        assert got["data"]["ndarray"] == [[2, 6], [12, 20]]


def test_nested_graph_with_ab_test_and_raw_node(serve: Any, tmp_path: Path, pb: Any) -> None:
    # A transformer in front of an A/B split (all traffic to A) whose A side is a
    # combiner over a predict_raw model and a plain model.
    graph = {
        "name": "add-one",
        "type": "TRANSFORMER",
        "children": [
            {
                "name": "ab",
                "implementation": "RANDOM_ABTEST",
                "parameters": [{"name": "ratioA", "value": "1.0", "type": "FLOAT"}],
                "children": [
                    {
                        "name": "sum",
                        "type": "COMBINER",
                        "children": [
                            {"name": "raw", "type": "MODEL"},
                            {"name": "negate", "type": "MODEL"},
                        ],
                    },
                    {"name": "square", "type": "MODEL"},
                ],
            }
        ],
    }
    classes = {
        "add-one": "graph_models.AddOne",
        "sum": "graph_models.Sum",
        "raw": "graph_models.RawEcho",
        "negate": "graph_models.Negate",
        "square": "graph_models.Square",
    }
    s = serve(deployment(tmp_path, graph, classes))
    for protocol in ("rest", "grpc"):
        # (x+1+100) + -(x+1) = 100 everywhere; A/B sent it all to child 0.
        got = send(protocol, s, pb, body([1, 2]))
        assert got["data"]["ndarray"] == [[100, 100]]
        assert got["meta"]["routing"]["ab"] == 0
        # The predict_raw node's reply tags count, as its meta's would under Seldon.
        assert got["meta"]["tags"]["raw"] == "yes"


def test_a_failing_node_answers_500_and_the_graph_keeps_serving(serve: Any, tmp_path: Path) -> None:
    graph = {
        "name": "router",
        "type": "ROUTER",
        "children": [
            {"name": "failing", "type": "MODEL"},
            {"name": "square", "type": "MODEL"},
        ],
    }
    classes = {
        "router": "graph_models.FirstColumnRouter",
        "failing": "graph_models.Failing",
        "square": "graph_models.Square",
    }
    s = serve(deployment(tmp_path, graph, classes))
    r = rest(s.url, body([1, 2]))
    assert r.status_code == 500 and "the model broke" in r.text
    r = rest(s.url, body([20, 2]))
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[400, 4]]


def test_a_router_answering_a_non_index_is_an_error_naming_it(serve: Any, tmp_path: Path) -> None:
    graph = {
        "name": "router",
        "type": "ROUTER",
        "children": [{"name": "square", "type": "MODEL"}],
    }
    classes = {"router": "graph_models.BadRouter", "square": "graph_models.Square"}
    s = serve(deployment(tmp_path, graph, classes))
    r = rest(s.url, body([1, 2]))
    # Seldon's status and words for it.
    assert r.status_code == 400 and "Routing response must be int but got 'left'" in r.text
    assert httpx.get(f"{s.url}/health/ping").status_code == 200


@pytest.mark.parametrize(
    ("graph", "classes", "message"),
    [
        ({"name": "m", "type": "MODEL"}, {}, "no class for it"),
        (
            {"name": "m", "type": "ROUTER", "children": [{"name": "n", "type": "MODEL"}]},
            {"m": "graph_models.Square", "n": "graph_models.Square"},
            "has no route()",
        ),
        ({"name": "m", "type": "MODLE"}, {}, "type: 'MODLE' is not one of"),
        (
            {"name": "m", "type": "MODEL", "children": [{"name": "m", "type": "MODEL"}]},
            {"m": "graph_models.Square"},
            "two nodes named 'm'",
        ),
        (
            {
                "name": "m",
                "type": "MODEL",
                "implementation": "SKLEARN_SERVER",
                "modelUri": "gs://bucket/model",
            },
            {},
            "inferwire reads a local path",
        ),
    ],
)
def test_a_bad_graph_does_not_start_and_says_why(
    serve: Any, tmp_path: Path, graph: dict[str, Any], classes: dict[str, str], message: str
) -> None:
    with pytest.raises(RuntimeError) as e:
        serve(deployment(tmp_path, graph, classes))
    assert message in str(e.value)


def test_graph_nodes_flag_names_classes(serve: Any, tmp_path: Path, pb: Any) -> None:
    # Containers without MODEL_NAME (the class is baked into the image): --graph-nodes.
    graph = {"name": "t", "type": "TRANSFORMER", "children": [{"name": "m", "type": "MODEL"}]}
    path = deployment(tmp_path, graph, {})
    s = serve(path, "--graph-nodes", "t=graph_models.AddOne, m=graph_models:Square")
    assert send("rest", s, pb, body([1, 2]))["data"]["ndarray"] == [[4, 9]]


def test_graph_with_workers_and_batching(serve: Any, pb: Any) -> None:
    # Forked workers each walk their copy of the graph; batched requests walk it once
    # together and each gets its own rows back.
    s = serve(str(HERE / "graphs/chain.yaml"), "--workers", "2", "--max-batch-size", "4")
    for i in range(8):
        got = send("rest" if i % 2 else "grpc", s, pb, body([float(i), 1.0]))
        assert got["data"]["ndarray"] == [[round((i + 1) * 3, 1), 6.0]]
        assert set(got["meta"]["requestPath"]) == {"round", "add-one", "double"}
