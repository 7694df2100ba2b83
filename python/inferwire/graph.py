"""A SeldonDeployment's inference graph served by one process.

Seldon runs every node of ``spec.predictors[].graph`` in its own container and its
executor re-encodes the message on each hop. Here the nodes are Python objects in one
server: a node's output (a numpy array, a string, a dict) is the next node's input as is,
and the walk follows the Seldon executor's rules:

- a node first transforms its input: a MODEL predicts, a TRANSFORMER (or a node with the
  ``TRANSFORM_INPUT`` method) calls ``transform_input``; others pass it on;
- with children, a ROUTER (or ``ROUTE``) picks one child by index, ``-1`` meaning all;
  ``RANDOM_ABTEST`` picks child 0 with probability ``ratioA``; other nodes send to all;
- the children's results go to a COMBINER's (or ``AGGREGATE``) ``aggregate``, else the
  first result is taken;
- an OUTPUT_TRANSFORMER (or ``TRANSFORM_OUTPUT``) calls ``transform_output`` last.

Feedback goes down the routes the reply took (``meta.routing``) to every MODEL and
ROUTER node with ``send_feedback``.

Each node is also served on its own, under its name (``/api/NODE/VERSION``,
``/v2/models/NODE/infer``), running that node's step alone.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import loader, modelfile
from .errors import ModelLoadError, SettingsError
from .seldon import SeldonAdapter, SeldonResponse, _own, default_names
from .settings import parse_parameters

log = logging.getLogger("inferwire")

TYPES = ("MODEL", "TRANSFORMER", "OUTPUT_TRANSFORMER", "ROUTER", "COMBINER", "UNKNOWN_TYPE")
METHODS = ("TRANSFORM_INPUT", "TRANSFORM_OUTPUT", "ROUTE", "AGGREGATE", "SEND_FEEDBACK")
# Seldon's prepackaged servers, served here from a local model file by the Python runtime.
PREPACKAGED = {
    "SKLEARN_SERVER",
    "XGBOOST_SERVER",
    "LIGHTGBM_SERVER",
    "MLFLOW_SERVER",
    "TENSORFLOW_SERVER",
    "TRITON_SERVER",
}
# A graph is a handful of nodes; these bound what a malformed or hostile file can cost.
MAX_NODES = 64
MAX_DEPTH = 16
MAX_FILE_BYTES = 1 << 20
# Column names between nodes: a list, or a column count standing for Seldon's ``t:0..``.
Names = list[str] | int


@dataclass
class NodeSpec:
    """One ``graph`` node as the SeldonDeployment declares it."""

    name: str
    type: str
    methods: frozenset[str]
    implementation: str
    model_uri: str
    parameters: dict[str, Any]
    children: list[NodeSpec] = field(default_factory=list)
    # Where its class comes from: ``--graph-nodes``, the container's MODEL_NAME or its
    # ``seldon-core-microservice`` arguments; empty for a prepackaged server.
    model_spec: str = ""
    image: str = ""

    def walk(self) -> list[NodeSpec]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


@dataclass
class GraphSpec:
    deployment: str
    predictor: str
    root: NodeSpec


def is_deployment(spec: str) -> bool:
    """Whether ``spec`` names a YAML or JSON file holding a SeldonDeployment."""
    path = Path(spec)
    if path.suffix.lower() not in (".yaml", ".yml", ".json") or not path.is_file():
        return False
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:MAX_FILE_BYTES]
    except OSError:
        return False
    return "SeldonDeployment" in head


def read(path: str, predictor: str = "", nodes: dict[str, str] | None = None) -> GraphSpec:
    """The graph of ``predictor`` (default: the first) in the SeldonDeployment file."""
    from .bounded_yaml import load_yaml_all

    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise SettingsError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        docs = load_yaml_all(p.read_text(encoding="utf-8"), path)
    except SettingsError:
        raise
    except Exception as e:
        raise SettingsError(f"{path}: not valid YAML/JSON: {e}") from e
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == "SeldonDeployment"]
    if not found:
        raise SettingsError(f"{path}: no document of kind SeldonDeployment")
    sdep = found[0]
    name = str(_dig(sdep, "metadata", "name") or "graph")
    predictors = _dig(sdep, "spec", "predictors")
    if not isinstance(predictors, list) or not predictors:
        raise SettingsError(f"{path}: spec.predictors: a list of predictors is needed")
    chosen = None
    for i, pred in enumerate(predictors):
        if not isinstance(pred, dict):
            raise SettingsError(f"{path}: spec.predictors[{i}]: not a mapping")
        if not predictor or pred.get("name") == predictor:
            chosen = (i, pred)
            break
    if chosen is None:
        names = ", ".join(str(p.get("name")) for p in predictors if isinstance(p, dict))
        raise SettingsError(f"graph_predictor: {path} has no predictor {predictor!r} ({names})")
    i, pred = chosen
    where = f"spec.predictors[{i}]"
    containers = _containers(pred, f"{path}: {where}")
    graph = pred.get("graph")
    if not isinstance(graph, dict):
        raise SettingsError(f"{path}: {where}.graph: a mapping is needed")
    count = [0]
    root = _node(graph, f"{where}.graph", 0, count, containers, nodes or {}, path)
    unknown = set(nodes or {}) - {n.name for n in root.walk()}
    if unknown:
        raise SettingsError(f"graph_nodes: the graph has no node {sorted(unknown)[0]!r}")
    return GraphSpec(name, str(pred.get("name") or "default"), root)


def _dig(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _containers(pred: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """Containers of the predictor's componentSpecs, by name."""
    out: dict[str, dict[str, Any]] = {}
    specs = pred.get("componentSpecs") or []
    if not isinstance(specs, list):
        raise SettingsError(f"{where}.componentSpecs: a list is needed")
    for cs in specs:
        for c in _dig(cs, "spec", "containers") or []:
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                out[c["name"]] = c
    return out


def _class_of(container: dict[str, Any]) -> str:
    """The model class a Seldon container runs: its ``MODEL_NAME`` variable (what the s2i
    images set), else the argument after ``seldon-core-microservice`` in its command."""
    for env in container.get("env") or []:
        if isinstance(env, dict) and env.get("name") == "MODEL_NAME" and env.get("value"):
            return str(env["value"])
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    for j, w in enumerate(words):
        if w.endswith("seldon-core-microservice") and j + 1 < len(words):
            return words[j + 1]
    return ""


def _node(
    d: Any,
    where: str,
    depth: int,
    count: list[int],
    containers: dict[str, dict[str, Any]],
    nodes: dict[str, str],
    path: str,
) -> NodeSpec:
    if not isinstance(d, dict):
        raise SettingsError(f"{path}: {where}: a mapping is needed")
    count[0] += 1
    if count[0] > MAX_NODES:
        raise SettingsError(f"{path}: the graph has more than {MAX_NODES} nodes")
    if depth >= MAX_DEPTH:
        raise SettingsError(f"{path}: {where}: the graph is nested deeper than {MAX_DEPTH}")
    name = d.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise SettingsError(f"{path}: {where}.name: a node name without '/' is needed")
    kind = str(d.get("type") or "UNKNOWN_TYPE")
    if kind not in TYPES:
        raise SettingsError(f"{path}: {where}.type: {kind!r} is not one of {', '.join(TYPES)}")
    methods = d.get("methods") or []
    if not isinstance(methods, list) or any(m not in METHODS for m in methods):
        raise SettingsError(f"{path}: {where}.methods: each must be one of {', '.join(METHODS)}")
    params = d.get("parameters") or []
    try:
        parameters = parse_parameters(json.dumps(params)) if params else {}
    except SettingsError as e:
        raise SettingsError(f"{path}: {where}.{e}") from None
    implementation = str(d.get("implementation") or "")
    container = containers.get(name, {})
    node = NodeSpec(
        name=name,
        type=kind,
        methods=frozenset(methods),
        implementation=implementation,
        model_uri=str(d.get("modelUri") or ""),
        parameters=parameters,
        model_spec=nodes.get(name) or _class_of(container),
        image=str(container.get("image") or ""),
    )
    children = d.get("children") or []
    if not isinstance(children, list):
        raise SettingsError(f"{path}: {where}.children: a list is needed")
    node.children = [
        _node(c, f"{where}.children[{k}]", depth + 1, count, containers, nodes, path)
        for k, c in enumerate(children)
    ]
    seen: set[str] = set()
    for n in node.walk():
        if n.name in seen:
            raise SettingsError(f"{path}: the graph has two nodes named {n.name!r}")
        seen.add(n.name)
    return node


def parse_node_map(text: str) -> dict[str, str]:
    """``--graph-nodes``: ``name=spec,name=spec`` (a spec as ``inferwire serve`` takes)."""
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, eq, spec = item.partition("=")
        if not eq or not name.strip() or not spec.strip():
            raise SettingsError(f"graph_nodes: {item!r} is not name=module:Class")
        out[name.strip()] = spec.strip()
    return out


# -- calling one node ---------------------------------------------------------------------


class _RawCall:
    """``predict_raw(message)`` inside a graph: the input is wrapped in a message dict and
    the reply's payload taken out again; arrays stay numpy arrays."""

    def __init__(self, adapter: SeldonAdapter, fn: Any) -> None:
        self.adapter = adapter
        self.fn = fn

    def __call__(self, x: Any, names: list[str], meta: Any) -> Any:
        msg: dict[str, Any] = {"meta": meta}
        if isinstance(x, str):
            msg["strData"] = x
        elif isinstance(x, (bytes, bytearray)):
            msg["binData"] = bytes(x)
        elif isinstance(x, dict):
            msg["jsonData"] = x
        else:
            msg["data"] = {"names": names, "ndarray": x}
        reply = self.adapter._resolve(self.fn(msg))
        # The reply's own tags and metrics count, as its meta's would under Seldon.
        meta = reply.get("meta") if isinstance(reply, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        data = SeldonResponse(payload_of(reply), meta.get("tags"), meta.get("metrics"))
        return self.adapter._result(data)


def payload_of(reply: Any) -> Any:
    """The payload of a ``predict_raw`` reply dict: its array, string, bytes or JSON."""
    if not isinstance(reply, dict):
        return reply
    data = reply.get("data")
    if isinstance(data, dict):
        if "ndarray" in data:
            return np.asarray(data["ndarray"])
        tensor = data.get("tensor")
        if isinstance(tensor, dict):
            return np.asarray(tensor.get("values", []), dtype=float).reshape(
                tensor.get("shape", [-1])
            )
    for key in ("strData", "binData", "jsonData"):
        if key in reply:
            return reply[key]
    raise TypeError(
        "predict_raw in a graph must answer a message with data.ndarray, data.tensor, "
        f"strData, binData or jsonData (got keys {sorted(reply)})"
    )


class Node:
    """A built node: its spec, the user's object behind a SeldonAdapter (Seldon's calling
    conventions, fallbacks and low-level methods), and the steps it takes. Each step
    returns the adapter's ``(output, names, tags, metrics)``."""

    def __init__(self, spec: NodeSpec, model: Any) -> None:
        self.spec = spec
        self.name = spec.name
        self.model = model
        self.adapter: SeldonAdapter | None = None
        if model is not None:
            self.adapter = SeldonAdapter(model, spec.name)
        kind, methods = spec.type, spec.methods
        self.predicts = kind == "MODEL"
        self.transforms_input = kind == "TRANSFORMER" or "TRANSFORM_INPUT" in methods
        self.transforms_output = kind == "OUTPUT_TRANSFORMER" or "TRANSFORM_OUTPUT" in methods
        self.routes = kind == "ROUTER" or "ROUTE" in methods
        self.aggregates = kind == "COMBINER" or "AGGREGATE" in methods
        self.takes_feedback = kind in ("MODEL", "ROUTER") or "SEND_FEEDBACK" in methods
        self.ab_ratio: float | None = None
        if spec.implementation == "RANDOM_ABTEST":
            self.ab_ratio = float(spec.parameters.get("ratioA", 0.5))
            if not 0.0 <= self.ab_ratio <= 1.0:
                raise ModelLoadError(f"graph node {self.name!r}: ratioA must be in [0, 1]")
        # What Seldon's executor calls on this node; a missing route() or aggregate()
        # fails here, at start, rather than on every request.
        self.predict = self._predictor() if self.predicts else None
        if self.routes and self.ab_ratio is None:
            self._need("route")
        if self.aggregates:
            self._need("aggregate")
        self.children: list[Node] = []

    def _predictor(self) -> Any:
        """The adapter's ``predict``, else ``predict_raw`` given the node's input as a
        message dict (numpy arrays in it, as ``SeldonAdapter`` passes them)."""
        a = self._need("predict", "predict_raw")
        if callable(_own(self.model, "predict")):
            return a.predict
        return _RawCall(a, _own(self.model, "predict_raw"))

    def _need(self, *names: str) -> SeldonAdapter:
        if self.adapter is None or not any(callable(_own(self.model, n)) for n in names):
            what = " or ".join(f"{n}()" for n in names)
            raise ModelLoadError(
                f"graph node {self.name!r} ({self.spec.type}): "
                f"{type(self.model).__name__} has no {what}"
            )
        return self.adapter

    def transform_input(self, x: Any, names: list[str], meta: dict[str, Any]) -> Any:
        assert self.adapter is not None
        return self.adapter.transform_input(x, names, meta)

    def transform_output(self, x: Any, names: list[str], meta: dict[str, Any]) -> Any:
        assert self.adapter is not None
        return self.adapter.transform_output(x, names, meta)

    def aggregate(self, xs: list[Any], names: list[list[str]], meta: dict[str, Any]) -> Any:
        assert self.adapter is not None
        return self.adapter.aggregate(xs, names)

    def choose(self, x: Any, names: list[str], meta: dict[str, Any]) -> tuple[int, Any]:
        """Which child takes the message (an index, or -1 for all), and the step's
        result (None when no code ran)."""
        if self.ab_ratio is not None:
            return (0 if random.random() < self.ab_ratio else 1), None
        if not self.routes or self.adapter is None:
            return -1, None
        result = self.adapter.route(x, names, meta)
        return route_index(int(result[0][0][0]), self.name, len(self.children)), result


def route_index(index: int, name: str, children: int) -> int:
    """A router's child index, checked against the node's children."""
    if index < -1 or index >= children:
        raise ValueError(
            f"graph node {name!r}: route() chose child {index}, but the node has {children} "
            f"children (0..{children - 1}, or -1 for all)"
        )
    return index


# -- the whole graph ------------------------------------------------------------------------


class _Trace(threading.local):
    """What one walk collected for the reply (per model thread)."""

    def __init__(self) -> None:
        self.tags: dict[str, Any] = {}
        self.metrics: list[dict[str, Any]] = []
        self.names: list[str] | None = None
        self.routing: dict[str, int] = {}
        self.path: dict[str, str] = {}


class Graph:
    """The graph as one model with Seldon's model interface: ``predict`` walks it,
    ``send_feedback`` follows the routes, ``tags``/``metrics``/``class_names`` report what
    the last walk on this thread collected."""

    def __init__(self, spec: GraphSpec, root: Node) -> None:
        self.spec = spec
        self.root = root
        self.nodes = _flatten(root)
        self._trace = _Trace()

    # Seldon's model interface, called by SeldonAdapter.
    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None = None) -> Any:
        trace = self._trace
        trace.tags, trace.metrics, trace.names, trace.path = {}, [], None, {}
        m = dict(meta or {})
        m["tags"] = dict(m.get("tags") or {})
        m["routing"] = trace.routing = {}
        m["requestPath"] = trace.path
        out, out_names = self._walk(self.root, X, list(names), m)
        # Default names stay a count: the core writes them.
        trace.names = None if isinstance(out_names, int) else out_names
        return out

    def walked(self) -> dict[str, Any]:
        """The routes taken and the nodes run by this thread's last walk, for the
        reply's meta."""
        return {"routing": self._trace.routing, "requestPath": self._trace.path}

    def tags(self) -> dict[str, Any] | None:
        return self._trace.tags or None

    def metrics(self) -> list[dict[str, Any]] | None:
        return self._trace.metrics or None

    def class_names(self) -> list[str] | None:
        return self._trace.names

    def send_feedback(
        self,
        features: Any,
        feature_names: list[str],
        reward: float,
        truth: Any,
        routing: dict[str, int] | None = None,
    ) -> Any:
        self._feedback(self.root, features, feature_names, reward, truth, routing or {})
        return None

    def metadata(self) -> dict[str, Any]:
        """Seldon's graph metadata: every node's model metadata, and the graph's inputs
        and outputs taken from its edge nodes as Seldon's executor takes them."""
        models = {
            n.name: n.adapter.metadata() if n.adapter else {"name": n.name} for n in self.nodes
        }
        inputs, outputs = _edges(self.root, models)
        return {
            "name": self.spec.predictor,
            "models": models,
            "graphinputs": inputs,
            "graphoutputs": outputs,
        }

    # The walk, as Seldon's executor does it, without encoding between nodes.
    def _took(self, node: Node, result: Any, names: Names, meta: dict[str, Any]) -> Any:
        """Records a step's ``(output, names, tags, metrics)``; returns (output, names)."""
        out, out_names, tags, metrics = result
        trace = self._trace
        trace.path[node.name] = node.spec.image or node.name
        if tags:
            trace.tags.update(tags)
            meta["tags"] = {**meta.get("tags", {}), **tags}
        if metrics:
            trace.metrics.extend(metrics)
        return out, names if out_names is None else out_names

    def _walk(self, node: Node, x: Any, names: Names, meta: dict[str, Any]) -> tuple[Any, Names]:
        if node.predict is not None:
            x, names = self._took(node, node.predict(x, _listed(names), meta), names, meta)
        elif node.transforms_input:
            step = node.transform_input(x, _listed(names), meta)
            x, names = self._took(node, step, names, meta)
        if node.children:
            route, result = node.choose(x, _listed(names), meta)
            if result is not None:
                self._took(node, result, names, meta)
            if node.routes or node.ab_ratio is not None:
                meta["routing"][node.name] = route
                self._trace.path[node.name] = node.spec.image or node.name
            chosen = node.children if route == -1 else [node.children[route]]
            results = [self._walk(c, x, names, meta) for c in chosen]
            if node.aggregates:
                xs, all_names = [r[0] for r in results], [_listed(r[1]) for r in results]
                step = node.aggregate(xs, all_names, meta)
                x, names = self._took(node, step, results[0][1], meta)
            else:
                x, names = results[0]
        if node.transforms_output:
            step = node.transform_output(x, _listed(names), meta)
            x, names = self._took(node, step, names, meta)
        return x, names

    def _feedback(
        self,
        node: Node,
        features: Any,
        names: list[str],
        reward: float,
        truth: Any,
        routing: dict[str, int],
    ) -> None:
        if node.children:
            route = routing.get(node.name, -1)
            if not -1 <= route < len(node.children):
                raise ValueError(
                    f"feedback: meta.routing[{node.name!r}] is {route}, but the node has "
                    f"{len(node.children)} children"
                )
            chosen = node.children if route == -1 else [node.children[route]]
            for c in chosen:
                self._feedback(c, features, names, reward, truth, routing)
        if node.takes_feedback and node.adapter is not None:
            node.adapter.send_feedback(features, names, reward, truth, routing)


def _listed(names: Names) -> list[str]:
    """Names as a node gets them: Seldon's ``t:0..`` for a column count."""
    return default_names(names) if isinstance(names, int) else names


def _edges(node: Node, models: dict[str, Any]) -> tuple[Any, Any]:
    """The graph's (inputs, outputs): a leaf's own; a MODEL or TRANSFORMER takes its
    inputs and its first child's outputs; an OUTPUT_TRANSFORMER or COMBINER its first
    child's inputs and its own outputs; a ROUTER its first child's."""
    own = models[node.name]
    if not node.children:
        return own.get("inputs", []), own.get("outputs", [])
    child_in, child_out = _edges(node.children[0], models)
    kind = node.spec.type
    if kind in ("MODEL", "TRANSFORMER"):
        return own.get("inputs", []), child_out
    if kind in ("OUTPUT_TRANSFORMER", "COMBINER"):
        return child_in, own.get("outputs", [])
    return child_in, child_out


def _flatten(root: Node) -> list[Node]:
    out = [root]
    for c in root.children:
        out.extend(_flatten(c))
    return out


def _describe(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "type": node.spec.type,
        "children": [_describe(c) for c in node.children],
    }


# -- building ------------------------------------------------------------------------------


class GraphAdapter(SeldonAdapter):
    """SeldonAdapter for a whole graph: its result also carries the walk's routing and
    request path (the core puts them in the reply's meta)."""

    def __init__(self, graph: Graph, name: str, raw_arrays: str = "numpy") -> None:
        super().__init__(graph, name, raw_arrays)
        self.graph = graph

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None) -> Any:
        return (*super().predict(X, names, meta), self.graph.walked())

    def metadata(self) -> dict[str, Any]:
        return self.graph.metadata()

    def send_feedback(
        self, features: Any, names: list[str], reward: float, truth: Any, routing: dict[str, int]
    ) -> Any:
        # The whole routing map: each router below takes its own entry.
        self.graph.send_feedback(features, names, reward, truth, routing)
        return None, None, None, None


def build(spec: GraphSpec) -> Graph:
    """Imports and loads every node's class (``load()`` called once per node)."""
    return Graph(spec, _build_node(spec.root))


def _build_node(spec: NodeSpec) -> Node:
    where = f"graph node {spec.name!r}"
    if spec.implementation in PREPACKAGED:
        model = _prepackaged(spec, where)
    elif spec.model_spec:
        try:
            model = loader.build(spec.model_spec, spec.parameters)
        except ModelLoadError as e:
            raise ModelLoadError(f"{where}: {e}") from None
    elif spec.implementation == "RANDOM_ABTEST" or (
        spec.type == "UNKNOWN_TYPE" and not spec.methods
    ):
        model = None  # no code of its own: the walk routes around it
    else:
        raise ModelLoadError(
            f"{where}: no class for it: set MODEL_NAME in the env of its container in "
            f"componentSpecs, or give --graph-nodes {spec.name}=module:Class"
        )
    node = Node(spec, model)
    node.children = [_build_node(c) for c in spec.children]
    if node.ab_ratio is not None and len(node.children) != 2:
        raise ModelLoadError(f"{where}: RANDOM_ABTEST needs exactly two children")
    return node


def _prepackaged(spec: NodeSpec, where: str) -> Any:
    uri = spec.model_uri
    if uri.startswith("file://"):
        uri = uri[len("file://") :]
    if "://" in uri or not uri:
        raise ModelLoadError(
            f"{where}: modelUri {spec.model_uri!r}: inferwire reads a local path here "
            "(download the model first)"
        )
    path = Path(uri)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if modelfile.is_model_file(str(p)))
        if len(files) != 1:
            raise ModelLoadError(f"{where}: modelUri {uri}: expected one model file in it")
        path = files[0]
    if not modelfile.is_model_file(str(path)):
        raise ModelLoadError(f"{where}: modelUri {uri}: not a model file inferwire reads")
    built, how = modelfile.build(str(path), "python", "{class}")
    log.info("%s: %s", where, how)
    return built


# -- each node on its own routes -----------------------------------------------------------


class NodeStep:
    """One node served alone under its own name: its own step only (a MODEL's predict,
    a transformer's transform, a router's choice as ``[[index]]``), never its children."""

    # The node's own answers to these, whatever its type.
    SHARED = ("tags", "metrics", "class_names", "init_metadata", "health_status", "send_feedback")

    def __init__(self, node: Node) -> None:
        self._node = node

    def __getattr__(self, name: str) -> Any:
        if name in NodeStep.SHARED and self._node.model is not None:
            return getattr(self._node.model, name)
        raise AttributeError(name)

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None = None) -> Any:
        node, m = self._node, dict(meta or {})
        if node.predict is not None:
            return node.predict(X, names, m)[0]
        if node.transforms_input:
            return node.transform_input(X, names, m)[0]
        if node.transforms_output:
            return node.transform_output(X, names, m)[0]
        if node.routes or node.ab_ratio is not None:
            return np.array([[node.choose(X, names, m)[0]]])
        if node.aggregates:
            from .errors import BadRequest

            raise BadRequest(
                f"graph node {node.name!r} is a COMBINER: its aggregate() takes the list of "
                "its children's results, which the graph gives it"
            )
        return X


def node_adapters(graph: Graph) -> list[tuple[str, Any]]:
    """(name, adapter) for each node, to serve it on its own routes. A plain MODEL node is
    its class as ``inferwire serve`` would serve it (predict_raw included)."""
    out: list[tuple[str, Any]] = []
    for node in graph.nodes:
        if node.spec.type == "MODEL" and not node.spec.methods and node.adapter is not None:
            out.append((node.name, node.adapter))
        else:
            out.append((node.name, SeldonAdapter(NodeStep(node), node.name)))
    return out
