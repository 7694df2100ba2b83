"""TorchServe handlers served unchanged by inferwire.torchserve.HandlerModel, called in
process: TorchServe's own example and test handlers (tests/vendor/torchserve_examples)
archived with torch-model-archiver, and handlers written here to look at exactly what a
handler is given (the data list, the context) and what its return becomes."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from inferwire.errors import ModelLoadError
from inferwire.torchserve.handler_model import HandlerModel, Reply, Request
from torchserve_archives import (
    VENDOR,
    archive,
    handler_file,
    needs_ts,
    needs_vision,
    streaming_handler_source,
)

# Shows the handler's view of each request: types and values of the data dict, the
# context's headers and ids; sets a content type, a status and a header from a query.
INSPECT = """
import json

def handle(data, context):
    if data is None:
        context.initialized_with = "None"
        return None
    out = []
    for i, row in enumerate(data):
        seen = {k: [type(v).__name__, v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else v]
                for k, v in row.items()}
        status = row.get("status")
        if status:
            context.set_response_status(int(status.decode()), "Custom Phrase", idx=i)
        context.set_response_content_type(i, "application/x-inspect")
        context.set_response_header(i, "x-index", str(i))
        out.append({
            "data": seen,
            "id": context.get_request_id(i),
            "ids": context.request_ids,
            "ua": context.get_request_header(i, "User-Agent"),
            "body_ct": context.get_request_header(i, "body"),
            "headers": sorted(context.get_all_request_header(i)),
            "props": {k: context.system_properties[k] for k in ("batch_size", "gpu_id", "server_name", "server_version")},
            "init": context.initialized_with,
        })
    return out
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("src")


@pytest.fixture(scope="module")
def inspect_model(store: Path, src: Path) -> Iterator[HandlerModel]:
    mar = archive(store, "inspect", handler_file(src, "inspect_handler.py", INSPECT))
    model = HandlerModel(mar, batch_size=4)
    yield model
    model.close()


def _json(reply: Reply) -> dict:  # type: ignore[type-arg]
    assert reply.status < 300, reply
    return json.loads(reply.body)


def test_batch_gets_bodies_decoded_as_torchserve_decodes_them(inspect_model: HandlerModel) -> None:
    replies = inspect_model.handle_batch(
        [
            Request(
                b'{"x": [1, 2]}',
                "application/json; charset=utf-8",
                {"user-agent": "curl/8"},
                request_id="r0",
            ),
            Request("héllo".encode(), "text/plain"),
            Request(b"\x00\xff", "application/octet-stream"),
            Request(b"{not json", "application/json"),
        ]
    )
    assert len(replies) == 4
    seen = [_json(r) for r in replies]
    assert seen[0]["data"] == {"body": ["dict", {"x": [1, 2]}]}
    assert seen[1]["data"] == {"body": ["str", "héllo"]}
    assert seen[2]["data"] == {"body": ["bytearray", "\x00\xff"]}
    assert seen[3]["data"] == {"body": ["bytearray", "{not json"]}  # forwarded undecoded
    # One call for the batch: every request sees the batch's ids; its own comes first.
    assert seen[0]["id"] == "r0" and len(seen[0]["ids"]) == 4 and seen[0]["ids"]["0"] == "r0"
    assert seen[1]["id"] == seen[0]["ids"]["1"] != ""
    # Headers: case-insensitive lookup; per parameter its content type; replies carry theirs.
    assert seen[0]["ua"] == "curl/8"
    assert seen[0]["body_ct"] == {"content-type": "application/json"}
    assert seen[0]["headers"] == ["body", "user-agent"]
    assert seen[0]["props"] == {
        "batch_size": 4,
        "gpu_id": None,
        "server_name": "MMS",
        "server_version": "0.12.0",
    }
    assert seen[0]["init"] == "None"  # a module-level handle is initialized with data=None
    for i, r in enumerate(replies):
        assert (r.status, r.content_type, r.headers) == (
            200,
            "application/x-inspect",
            {"x-index": str(i)},
        )
    # dict replies are TorchServe's indented JSON.
    assert replies[0].body.startswith(b'{\n  "data": {\n')


def test_query_form_and_grpc_inputs_become_named_parameters(inspect_model: HandlerModel) -> None:
    boundary = "XyZ"
    form = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="data"\r\n\r\nplain field\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.json"\r\n'
        f'Content-Type: application/json\r\n\r\n{{"k": 1}}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="img"; filename="a.bin"\r\n\r\n\x01\x02\r\n'
        f"--{boundary}--\r\n"
    ).encode("latin-1")
    replies = inspect_model.handle_batch(
        [
            Request(b"body!", "text/plain", query=[("topk", "3"), ("body", "from query")]),
            Request(form, f"multipart/form-data; boundary={boundary}"),
            Request(b"a=1&b=two+words", "application/x-www-form-urlencoded"),
            Request(inputs={"data": b"grpc bytes", "extra": b"{}"}),
        ]
    )
    seen = [_json(r)["data"] for r in replies]
    # Query parameters come first and are bytes; the body replaces one of the same name.
    assert seen[0] == {"topk": ["bytearray", "3"], "body": ["str", "body!"]}
    assert seen[1] == {
        "data": ["bytearray", "plain field"],
        "file": ["dict", {"k": 1}],
        "img": ["bytearray", "\x01\x02"],
    }
    assert seen[2] == {"a": ["bytearray", "1"], "b": ["bytearray", "two words"]}
    assert seen[3] == {"data": ["bytearray", "grpc bytes"], "extra": ["bytearray", "{}"]}


def test_status_and_phrase_set_by_the_handler(inspect_model: HandlerModel) -> None:
    ok, teapot = inspect_model.handle_batch(
        [Request(b"a"), Request(b"b", query=[("status", "418")])]
    )
    assert (ok.status, ok.message) == (200, "")
    assert (teapot.status, teapot.message, teapot.error) == (418, "Custom Phrase", False)
    assert json.loads(teapot.body)["data"]["body"] == ["bytearray", "b"]


def test_bad_form_is_a_400_for_that_request_only(inspect_model: HandlerModel) -> None:
    bad, good = inspect_model.handle_batch(
        [Request(b"--x\r\nno headers", "multipart/form-data"), Request(b"fine")]
    )
    assert (bad.status, bad.error) == (400, True)
    assert json.loads(bad.body) == {
        "code": 400,
        "type": "BadRequestException",
        "message": "multipart/form-data without a boundary",
    }
    assert good.status == 200 and _json(good)["ids"] == {"0": _json(good)["id"]}


# -- TorchServe's own handlers -------------------------------------------------------


def test_noop_no_archive_folder_with_its_class_handler(tmp_path: Path) -> None:
    model = HandlerModel(VENDOR / "noop")
    try:
        assert (model.name, model.version, model.archive.extracted) == ("noop", "1.11", False)
        replies = model.handle_batch(
            [Request(b"1"), Request(b"2", "text/plain"), Request(b"{}", "application/json")]
        )
        assert [r.body for r in replies] == [b"OK", b"OK", b"OK"]
        # It sets request 0's content type only, as written.
        assert [r.content_type for r in replies] == ["text/plain", "", ""]
        names = {s.name for s in model.metrics.samples()}
        assert {"PreprocessTime", "InferenceTime", "PostprocessTime", "PredictionTime"} <= names
        sample = next(s for s in model.metrics.samples() if s.name == "InferenceTime")
        assert (
            dict(sample.dimensions) == {"ModelName": "noop", "Level": "Model"}
            and sample.unit == "ms"
        )
    finally:
        model.close()
    assert (VENDOR / "noop" / "service.py").exists()  # a folder served in place stays


def test_echo_from_its_archive(store: Path) -> None:
    mar = archive(store, "echo", VENDOR / "echo" / "handler.py")
    model = HandlerModel(mar)
    try:
        replies = model.handle_batch(
            [
                Request(query=[("data", "hi")]),
                Request(b"a=b%20c", "application/x-www-form-urlencoded", query=[("data", "q")]),
            ]
        )
        assert [r.body for r in replies] == [b"hi", b"q"]
    finally:
        model.close()


def test_error_batch_length_mismatch_and_per_request_status(store: Path) -> None:
    mar = archive(store, "error_batch", VENDOR / "error_batch" / "service.py")
    model = HandlerModel(mar)
    try:
        one, two = model.handle_batch([Request(b"x"), Request(b"y")])
        for r in (one, two):
            assert (r.status, r.error) == (503, True)
            assert json.loads(r.body) == {
                "code": 503,
                "type": "InternalServerException",
                "message": "number of batch response mismatched",
            }
        [single] = model.handle_batch([Request(b"x")])
        assert (single.status, single.body, single.error) == (507, b"Invalid response", False)
    finally:
        model.close()


@needs_ts
def test_prediction_exception_code_and_message(store: Path) -> None:
    mar = archive(
        store, "pred_custom_return_code", VENDOR / "pred_custom_return_code" / "service.py"
    )
    model = HandlerModel(mar)
    try:
        [r] = model.handle_batch([Request(b"x")])
        assert (r.status, r.message, r.error) == (599, "Some Prediction Error", True)
    finally:
        model.close()


FAILING = """
calls = []

def handle(data, context):
    if data is None:
        return None
    calls.append(len(data))
    body = data[0].get("body")
    if body == "raise":
        raise KeyError("boom")
    if body == "oom":
        raise MemoryError()
    if body == "cuda":
        raise RuntimeError("CUDA out of memory. Tried to allocate 2 GiB")
    if body == "tuple":
        return ("a",)
    if body == "numpy":
        return [object()]
    return ["fine"] * len(data)
"""


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ("raise", 503, "Prediction failed"),
        ("oom", 507, "Out of resources"),
        ("cuda", 507, "Out of resources"),
        ("tuple", 503, "Invalid model predict output"),
        ("numpy", 503, "Unsupported model output data type."),
    ],
)
def test_failures_answer_as_torchserve_and_the_model_serves_on(
    store: Path, src: Path, body: str, status: int, message: str
) -> None:
    mar = archive(store, "failing", handler_file(src, "failing.py", FAILING))
    model = HandlerModel(mar)
    try:
        [r] = model.handle_batch([Request(body.encode(), "text/plain")])
        assert (r.status, r.message, r.error, r.content_type) == (
            status,
            message,
            True,
            "application/json",
        )
        assert json.loads(r.body)["message"] == message
        [after] = model.handle_batch([Request(b"next", "text/plain")])
        assert (after.status, after.body) == (200, b"fine")
    finally:
        model.close()


# -- how the handler is found --------------------------------------------------------

TWO_CLASSES = "class A:\n    pass\n\nclass B:\n    pass\n"
CLASS = """
import json
from collections import OrderedDict  # imported classes do not count

class Handler:
    def initialize(self, context):
        self.prefix = context.model_yaml_config.get("handler", {}).get("prefix", "")

    def handle(self, data, context):
        return [self.prefix + row["body"] for row in data]
"""
FUNCTIONS = (
    "def predict(data, context):\n    return None if data is None else ['predict'] * len(data)\n"
)


def test_class_function_and_module_function_entry_points(store: Path, src: Path) -> None:
    cfg = handler_file(src, "cfg.yaml", "handler:\n  prefix: 'got: '\n")
    cls = HandlerModel(
        archive(store, "cls", handler_file(src, "cls_handler.py", CLASS), config=cfg)
    )
    # The archiver takes module:function without ".py" (it adds it to copy the file).
    handler_file(src, "fn_handler.py", FUNCTIONS)
    fn = HandlerModel(archive(store, "fn", f"{src}/fn_handler:predict"))
    try:
        assert cls.handle_batch([Request(b"x", "text/plain")])[0].body == b"got: x"
        assert fn.manifest["model"]["handler"] == "fn_handler:predict"
        assert fn.handle_batch([Request(b"x")])[0].body == b"predict"
    finally:
        cls.close()
        fn.close()
    with pytest.raises(
        ModelLoadError, match=r"expected only one class .* \(classes defined: A, B\)"
    ):
        HandlerModel(archive(store, "two", handler_file(src, "two_classes.py", TWO_CLASSES)))


# Opens its extra file by a relative path, as handlers written for TorchServe's worker
# (started in the model's folder) do.
RELATIVE = """
import json
import os

LABELS = json.load(open("labels.json"))  # at import


class Labeller:
    def initialize(self, context):
        with open("labels.json") as f:  # and in initialize
            self.labels = json.load(f)
        self.folder = os.getcwd()

    def handle(self, data, context):
        return [self.labels[str(row["body"].decode())] for row in data]
"""


def test_a_handler_finds_its_files_by_relative_path_as_in_torchserve(
    store: Path, src: Path
) -> None:
    labels = handler_file(src, "labels.json", '{"0": "cat", "1": "dog"}')
    before = os.getcwd()
    model = HandlerModel(
        archive(store, "relative", handler_file(src, "relative.py", RELATIVE), extra=[labels])
    )
    try:
        assert [r.body for r in model.handle_batch([Request(b"1"), Request(b"0")])] == [
            b"dog",
            b"cat",
        ]
        # Loaded in the model's folder; the server's own working directory is back.
        assert model._instances[0].resolved.handle.__self__.folder == str(model.folder)
        assert os.getcwd() == before
    finally:
        model.close()


def test_two_archives_with_the_same_handler_file_name_keep_their_own(
    store: Path, tmp_path: Path
) -> None:
    models = []
    for word in ("first", "second"):
        folder = tmp_path / word
        handler_file(folder, "helper.py", f"WORD = {word!r}\n")
        h = handler_file(
            folder,
            "handler.py",
            "import helper\n\ndef handle(data, context):\n    return None if data is None else [helper.WORD]\n",
        )
        models.append(HandlerModel(archive(store, f"same_{word}", h, extra=[folder / "helper.py"])))
    try:
        assert [m.handle_batch([Request(b"")])[0].body for m in models] == [b"first", b"second"]
    finally:
        for m in models:
            m.close()


def test_default_handler_without_torchserve_says_what_to_install(
    store: Path, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mar = archive(store, "img", "image_classifier", serialized=handler_file(src, "model.pt", ""))
    monkeypatch.setitem(sys.modules, "ts", None)  # as where the torchserve package is absent
    with pytest.raises(
        ModelLoadError,
        match=r"ts\.torch_handler\.image_classifier needs `pip install torchserve torch torchvision`",
    ):
        HandlerModel(mar)


def test_initialize_failure_is_a_load_error_and_cleans_up(
    store: Path, src: Path, tmp_path: Path
) -> None:
    bad = "class H:\n    def initialize(self, ctx):\n        raise ValueError('no weights')\n    def handle(self, d, c):\n        return d\n"
    mar = archive(store, "bad_init", handler_file(src, "bad_init.py", bad))
    with pytest.raises(
        ModelLoadError, match="handler H: initialize failed: ValueError: no weights"
    ):
        HandlerModel(mar, temp_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


# -- intermediate responses ----------------------------------------------------------


@needs_ts
def test_torchserves_streaming_handler_pieces_then_final(store: Path, src: Path) -> None:
    mar = archive(
        store, "tp_model", handler_file(src, "stream_handler.py", streaming_handler_source())
    )
    model = HandlerModel(mar)
    try:
        pieces: list[tuple[int, Reply]] = []
        [final] = model.handle_batch(
            [Request(b"x", request_id="req-1")], lambda i, p: pieces.append((i, p))
        )
        assert [(i, p.body, p.status, p.last, p.headers) for i, p in pieces] == [
            (0, b"hello", 200, False, {"ts_stream_next": "true"})
        ] * 3
        assert (final.body, final.last, final.headers) == (
            b"hello world ",
            True,
            {"ts_stream_next": "false"},
        )
        # As an iterator: the same pieces, then the final reply.
        got = list(model.stream_batch([Request(b"x")]))
        assert [(i, r.body, r.last) for i, r in got] == [(0, b"hello", False)] * 3 + [
            (0, b"hello world ", True)
        ]
        # Without a callback the pieces ride along with the final reply.
        [kept] = model.handle_batch([Request(b"x")])
        assert [p.body for p in kept.pieces] == [b"hello"] * 3 and kept.body == b"hello world "
    finally:
        model.close()


# -- TorchServe's MNIST example on its default ImageClassifier ----------------------------


@needs_vision
def test_mnist_example_classifies_a_batch_of_images(
    store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("mnist_net", VENDOR / "mnist" / "mnist.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    net = module.Net().eval()
    weights = tmp_path / "mnist_cnn.pt"
    torch.save(net.state_dict(), weights)  # untrained: the trained file is a Git LFS object
    mar = archive(
        store,
        "mnist",
        VENDOR / "mnist" / "mnist_handler.py",
        serialized=weights,
        model_file=VENDOR / "mnist" / "mnist.py",
    )
    image = (VENDOR / "mnist" / "test_data" / "0.png").read_bytes()
    with caplog.at_level(logging.WARNING):
        model = HandlerModel(mar)
    try:
        replies = model.handle_batch(
            [
                Request(image, "image/png"),
                Request(image, "application/octet-stream"),
                Request(image),
            ]
        )
        digits = [json.loads(r.body) for r in replies]
        assert (
            all(r.status == 200 for r in replies)
            and len(set(digits)) == 1
            and digits[0] in range(10)
        )
        # The same digit the network gives for the image, computed here without the handler.
        from PIL import Image
        from torchvision import transforms

        x = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])(
            Image.open(VENDOR / "mnist" / "test_data" / "0.png")
        )
        with torch.no_grad():
            assert int(net(x.unsqueeze(0)).argmax(1)) == digits[0]
        assert any(s.name == "HandlerTime" for s in model.metrics.samples())
    finally:
        model.close()
