"""`inferwire bench` end to end: the load generator against real inferwire servers, its
request files against the notebook's, and the seldon-matrix suite in a short mode."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import notebook_payloads
import pytest
from conftest import ROOT, Served, free_port
from google.protobuf import json_format
from PIL import Image


def bench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferwire", "bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def attack_json(*args: str, returncode: int = 0) -> dict[str, Any]:
    r = bench("attack", "--format", "json", *args)
    assert r.returncode == returncode, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def noop(serve: Any) -> Served:
    return serve("models:Noop")


@pytest.fixture(scope="module")
def noop_raw(serve: Any) -> Served:
    return serve("models:NoopRaw")


BODY = '{"data":{"ndarray":[[1,2,3]]}}'

# The README's model and a request it takes (4 features); the old example sent 3.
QUICK_START = f"{ROOT}/examples/seldon_model/model.py:IrisLikeClassifier"
IRIS_ROW = '{"data": {"ndarray": [[5.1, 3.5, 1.4, 0.2]]}}'
THREE_FEATURES = '{"data": {"ndarray": [[1, 2, 3]]}}'


@pytest.fixture(scope="module")
def quick_start(serve: Any) -> Served:
    """The quick-start model as a supervisor and two workers, all holding its sockets."""
    return serve(QUICK_START, "--workers", "2")


@pytest.fixture(scope="module")
def slow(serve: Any) -> Served:
    """20 ms per call with one request queued at most: 8 clients get 200s and 503s."""
    return serve("models:Slow", "--max-queue", "1")


@pytest.mark.parametrize("transport", ["http1", "h2c", "grpc"])
def test_attack_counts_every_request(noop: Served, transport: str) -> None:
    pid = str(noop.proc.pid)
    common = ["-n", "60", "-c", "3", "--server-pid", pid]
    if transport == "grpc":
        args = [noop.grpc_target, "--call", "seldon.protos.Seldon/Predict", "--seldon-json"]
        code = "OK"
    else:
        args = [f"{noop.url}/api/v1.0/predictions", *(["--http2"] if transport == "h2c" else [])]
        code = "200"
    rep = attack_json(*args, "-d", BODY, *common)
    assert (rep["requests"], rep["ok"], rep["success"]) == (60, 60, 1.0)
    assert rep["status_codes"] == {code: 60}
    assert rep["errors"] == []
    lat = rep["latency"]
    assert 0 < lat["min_ns"] <= lat["p50_ns"] <= lat["p99_ns"] <= lat["max_ns"]
    assert rep["bytes_in"] > 0 and rep["bytes_out"] > 0
    assert rep["server_pid"] == noop.proc.pid
    assert rep["server_cpu_ns_per_request"] is not None
    assert sum(b["count"] for b in rep["histogram"]) == 60


def test_attack_reports_server_errors_by_kind(noop: Served, pb: Any, tmp_path: Path) -> None:
    bad = '{"data":{"tensor":{"shape":[2,2],"values":[1]}}}'
    # Every request failed: the report is written all the same, and the exit status is 1.
    rep = attack_json(f"{noop.url}/api/v1.0/predictions", "-d", bad, "-n", "5", returncode=1)
    assert rep["status_codes"] == {"400": 5}
    assert rep["success"] == 0
    assert len(rep["errors"]) == 1 and "shape" in rep["errors"][0]
    # --seldon-json checks the message before sending; a raw protobuf file is sent as is.
    r = bench("attack", noop.grpc_target, "--call", "a.B/C", "--seldon-json", "-d", bad)
    assert r.returncode == 1 and "needs 4 values" in r.stderr
    msg = json_format.Parse(bad, pb.msgs.SeldonMessage())
    (tmp_path / "bad.bin").write_bytes(msg.SerializeToString())
    rep = attack_json(
        noop.grpc_target, "--call", "seldon.protos.Model/Predict",
        "-D", str(tmp_path / "bad.bin"), "-n", "5", returncode=1,
    )  # fmt: skip
    assert rep["status_codes"] == {"InvalidArgument": 5}
    assert "shape" in rep["errors"][0]


def test_attack_reports_latency_by_status_code(slow: Served) -> None:
    """Under overload, refusals and answers are timed apart: a model that takes 20 ms
    with one request queued at most turns most of 8 clients' requests away at once."""
    body = '{"strData":"0.02"}'
    rep = attack_json(f"{slow.url}/api/v1.0/predictions", "-d", body, "-c", "8", "-n", "200")
    assert set(rep["status_codes"]) == {"200", "503"}, rep["status_codes"]
    by_code = rep["latency_by_code"]
    assert set(by_code) == {"200", "503"}
    assert by_code["200"]["p50_ns"] >= 20_000_000  # the model's own 20 ms
    assert by_code["503"]["p50_ns"] < by_code["200"]["p50_ns"] / 4
    r = bench("attack", f"{slow.url}/api/v1.0/predictions", "-d", body, "-c", "8", "-n", "50")
    assert "  503         [mean, 50, 99, max]" in r.stdout, r.stdout


def test_attack_text_report_has_the_vegeta_fields(noop: Served) -> None:
    r = bench("attack", f"{noop.url}/health/ping", "-n", "20")
    assert r.returncode == 0, r.stderr
    for field in ("Requests", "Latencies", "Bytes In", "Success", "Status Codes", "Error Set"):
        assert field in r.stdout
    assert "200:20" in r.stdout
    assert "histogram" in r.stdout


def test_attack_open_loop(noop: Served) -> None:
    rep = attack_json(f"{noop.url}/health/ping", "-r", "100", "-z", "1s")
    assert rep["mode"] == "open"
    assert rep["requests"] == 100
    assert abs(rep["sent_rate"] - 100) < 5


def test_attack_unreachable_and_bad_arguments() -> None:
    r = bench("attack", f"http://127.0.0.1:{free_port()}/x", "-n", "1")
    assert r.returncode == 1 and "connect" in r.stderr
    r = bench("attack", "ftp://example/x", "-n", "1")
    assert r.returncode == 1 and "expected http:// or https://" in r.stderr
    r = bench("attack", "127.0.0.1:1", "--call", "Predict", "-n", "1")
    assert r.returncode == 1 and "package.Service/Method" in r.stderr
    r = bench("attack", "http://127.0.0.1:1/", "--rate", "fast")
    assert r.returncode == 2 and "--rate" in r.stderr


def test_a_build_without_the_bench_feature_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from inferwire import _core, cli

    monkeypatch.delattr(_core, "bench_main", raising=False)
    assert cli.main(["bench", "attack", "--help"]) == 2
    err = capsys.readouterr().err
    assert "--features bench" in err and "inferwire-bench" in err


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def test_server_cpu_measures_the_server_on_the_targets_port(quick_start: Served) -> None:
    """The README's example as pasted: --server-cpu finds the server by its port, and what
    it measures is the process the test started (the supervisor, with its workers below
    it), though every worker holds the same listening sockets."""
    pid = quick_start.proc.pid
    assert len(children(pid)) >= 2  # the workers
    url = f"{quick_start.url}/api/v1.0/predictions"
    rep = attack_json(url, "-d", IRIS_ROW, "-z", "1s", "--server-cpu")
    assert rep["requests"] == rep["ok"] > 100
    assert rep["server_pid"] == pid and rep["server_pids"] == [pid]
    assert rep["server_cpu_ns_per_request"] > 0
    # gRPC: the port of host:port; --server-port: the server on another port than the
    # target's (here the same server's gRPC port).
    grpc = attack_json(
        quick_start.grpc_target, "--call", "seldon.protos.Seldon/Predict", "--seldon-json",
        "-d", IRIS_ROW, "-n", "50", "--server-cpu",
    )  # fmt: skip
    assert grpc["ok"] == 50 and grpc["server_pids"] == [pid]
    other = attack_json(
        url, "-d", IRIS_ROW, "-n", "50", "--server-port", str(quick_start.grpc_port)
    )
    assert other["server_pids"] == [pid] and other["server_cpu_ns_per_request"] is not None
    text = bench("attack", url, "-d", IRIS_ROW, "-n", "50", "--server-cpu")
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.startswith("CPU/request"))
    assert line.endswith(f" (pid {pid})"), line
    plain = bench("attack", url, "-d", IRIS_ROW, "-n", "5")
    assert "- (no --server-cpu or --server-pid)" in plain.stdout


def test_server_cpu_needs_a_listener_on_this_machine(noop: Served) -> None:
    port = free_port()
    r = bench("attack", f"http://127.0.0.1:{port}/x", "-n", "1", "--server-cpu")
    assert r.returncode == 1
    assert (
        r.stderr
        == f"inferwire bench: --server-cpu: no process listens on port {port} on this machine\n"
    )
    r = bench("attack", f"{noop.url}/health/ping", "-n", "1", "--server-port", str(port))
    assert r.returncode == 1 and f"--server-port: no process listens on port {port}" in r.stderr
    r = bench("attack", "http://example.com:9000/x", "-n", "1", "--server-cpu")
    assert r.returncode == 1
    assert "--server-cpu needs a server on this machine, and example.com is not" in r.stderr
    r = bench("attack", f"{noop.url}/health/ping", "--server-cpu", "--server-pid", "1")
    assert r.returncode == 2 and "cannot be used with" in r.stderr


def test_attack_exits_1_when_every_request_failed(quick_start: Served) -> None:
    """The README's old request (3 features for a 4-feature model): every answer is a 500.
    The report is still written; the exit status and stderr say that nothing succeeded."""
    url = f"{quick_start.url}/api/v1.0/predictions"
    r = bench("attack", url, "-d", THREE_FEATURES, "-n", "20")
    assert r.returncode == 1
    assert "Status Codes  [code:count]               500:20" in r.stdout
    first = r.stderr.splitlines()[0]
    assert first.startswith('inferwire bench: every request failed (20 of 20): {"status"'), first
    assert "MODEL_ERR" in r.stdout or "matmul" in r.stdout


def test_fail_exits_1_when_any_request_failed(slow: Served, noop: Served) -> None:
    args = (f"{slow.url}/api/v1.0/predictions", "-d", '{"strData":"0.02"}', "-c", "8")
    rep = attack_json(*args, "-n", "100", "--fail", returncode=1)
    failed = rep["requests"] - rep["ok"]
    assert rep["ok"] > 0 and failed > 0, rep["status_codes"]
    r = bench("attack", *args, "-n", "100", "--fail")
    assert r.returncode == 1
    assert (
        r.stderr.startswith("inferwire bench: ")
        and " of 100 requests failed (--fail): " in r.stderr
    )
    # Without --fail some failures are a result, not an error; with it, none is fine too.
    assert attack_json(*args, "-n", "50")["ok"] > 0
    assert attack_json(f"{noop.url}/health/ping", "-n", "20", "--fail")["ok"] == 20


@pytest.mark.parametrize(
    "transport",
    [
        [],  # HTTP/1.1 on a thread per connection
        ["-c", "80"],  # HTTP/1.1 on tasks
        ["--http2"],  # h2c, blocking on a thread
        ["--http2", "-c", "2"],  # h2c, two streams on a connection: the h2 crate
    ],
)
def test_cut_error_messages_end_with_an_ellipsis(quick_start: Served, transport: list[str]) -> None:
    """An error body longer than what a report keeps is shown cut, and says so."""
    url = f"{quick_start.url}/api/v1.0/predictions"
    whole = httpx.post(url, content=THREE_FEATURES, headers={"content-type": "application/json"})
    assert whole.status_code == 500 and len(whole.content) > 200
    rep = attack_json(url, "-d", THREE_FEATURES, "-n", "100", *transport, returncode=1)
    (message,) = rep["errors"]
    assert message.endswith("…"), message
    kept = message.removesuffix("…")
    assert whole.text.startswith(kept) and 150 < len(kept.encode()) <= 200, message
    text = bench("attack", url, "-d", THREE_FEATURES, "-n", "5", *transport)
    listed = text.stdout.split("Error Set:\n", 1)[1].splitlines()[0]
    assert listed == message


@pytest.mark.parametrize("size", [1, 100_000])
def test_payload_files_are_the_notebooks(tmp_path: Path, pb: Any, size: int) -> None:
    url = "http://127.0.0.1:9000/api/v1.0/predictions"
    r = bench("payload", "--size", str(size), "--out", str(tmp_path / "ours"), "--url", url)
    assert r.returncode == 0, r.stderr
    notebook_payloads.write(tmp_path / "notebook", size, url)
    for enc in notebook_payloads.ENCODINGS:
        for name in (f"data_{enc}.json", f"vegeta_{enc}.json"):
            ours = (tmp_path / "ours" / name).read_bytes()
            assert ours == (tmp_path / "notebook" / name).read_bytes(), name
        # The protobuf file is what a gRPC client builds from the same JSON.
        expected = json_format.Parse(
            (tmp_path / "ours" / f"data_{enc}.json").read_text(), pb.msgs.SeldonMessage()
        )
        got = pb.msgs.SeldonMessage.FromString((tmp_path / "ours" / f"grpc_{enc}.bin").read_bytes())
        if enc == "ndarray":
            assert json_format.MessageToDict(got) == json_format.MessageToDict(expected)
        else:
            assert got == expected


def test_seldon_matrix_suite_short(noop: Served, noop_raw: Served) -> None:
    r = bench(
        "suite", "seldon-matrix",
        "--target", noop.url, "--grpc-target", noop.grpc_target,
        "--raw-target", noop_raw.url, "--raw-grpc-target", noop_raw.grpc_target,
        "--server-cpu", "-z", "200ms", "--warmup", "0s", "--format", "json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    cells = json.loads(r.stdout)
    # predict: 2 protocols × 3 encodings × 2 sizes; predict_raw at 100,000 only.
    assert len(cells) == 12 + 6
    for c in cells:
        (rep,) = c["reports"]
        assert rep["requests"] > 0 and rep["success"] == 1.0, c
        # --server-cpu: the server on --target's port, and on --raw-target's for predict_raw.
        server = noop_raw if c["method"] == "predict_raw" else noop
        assert rep["server_pids"] == [server.proc.pid], c
        assert rep["server_cpu_ns_per_request"] is not None


def test_seldon_matrix_suite_tables_and_vs(noop: Served, noop_raw: Served) -> None:
    r = bench(
        "suite", "seldon-matrix", "--target", noop.url, "--grpc-target", noop.grpc_target,
        "--vs", noop_raw.url, "--vs-grpc", noop_raw.grpc_target,
        "--vs-raw", noop_raw.url, "--vs-raw-grpc", noop_raw.grpc_target,
        "--name-target", "inferwire", "--name-vs", "other",
        "--sizes", "1,100000", "--protocols", "rest", "--encodings", "ndarray,tftensor",
        "-z", "200ms", "--warmup", "0s",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "#### predict · REST · 100,000 integers" in out
    assert "#### predict · REST · 1 integer" in out
    assert "| notebook (published, Seldon 1.10) | 19.8ms | 16.2ms |" in out
    assert "| other / inferwire, latency |" in out
    # The predict server has no predict_raw model given: those cells say so.
    assert "predict_raw needs a server running a predict_raw model" in out
    assert "inferwire: answered OK" in out and "other: answered OK" in out


def test_ray_micro_suite_short(serve: Any, noop: Served, tmp_path: Path) -> None:
    batched = serve("models:Echo", "--max-batch-size", "4")
    r = bench(
        "suite", "ray-micro", "--target", batched.url, "--server-pid", str(batched.proc.pid),
        "--vs", noop.url, "--vs-cpu", "--config", "10000/10000/1",
        "--name-target", "batched", "--name-vs", "plain", "-z", "300ms", "--warmup", "0s",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "{'max_batch_size': 10000, 'max_concurrent_queries': 10000, 'num_replicas': 1}" in out
    single = next(line for line in out.splitlines() if "single client small data" in line)
    eight = next(line for line in out.splitlines() if "8 clients small data" in line)
    assert single.rstrip().endswith("| 602.93 |") and eight.rstrip().endswith("| 1723.73 |")
    cells = [c.strip() for c in single.split("|")]
    assert float(cells[2]) > 0 and float(cells[5]) > 0, single  # both servers answered
    assert cells[4].endswith(" µs") and cells[7].endswith(" µs"), single  # and their CPU
    plain = bench(
        "suite", "ray-micro", "--target", noop.url, "-z", "200ms", "--warmup", "0s",
        "--format", "json",
    )  # fmt: skip
    rows = json.loads(plain.stdout)
    assert [row["clients"] for row in rows] == [1, 8]
    page = tmp_path / "ray.html"
    with_html = bench(
        "suite", "ray-micro", "--target", noop.url, "-z", "100ms", "--warmup", "0s",
        "--html", str(page),
    )  # fmt: skip
    assert with_html.returncode == 0, with_html.stderr
    assert "8 clients · target" in page.read_text() and "<svg" in page.read_text()
    assert all(row["reports"][0]["success"] == 1.0 for row in rows)
    bad = bench("suite", "ray-micro", "--target", noop.url, "--config", "1/2")
    assert bad.returncode == 1 and "BATCH/CONCURRENT/REPLICAS" in bad.stderr


def test_v2_rest_and_grpc_attacks(serve: Any) -> None:
    v2 = serve("models:Echo", "--model-name", "echo")
    body = '{"inputs": [{"name": "x", "shape": [3], "datatype": "INT64", "data": [1, 2, 3]}]}'
    rest = attack_json(f"{v2.url}/v2/models/echo/infer", "-d", body, "-n", "50")
    assert rest["ok"] == 50 and rest["status_codes"] == {"200": 50}
    for contents in ("raw", "typed"):
        r = attack_json(
            v2.grpc_target, "--call", "inference.GRPCInferenceService/ModelInfer",
            "--v2", contents, "--model", "echo", "-d", body, "-n", "50",
        )  # fmt: skip
        assert r["ok"] == 50, r
    wrong = attack_json(
        v2.grpc_target, "--call", "inference.GRPCInferenceService/ModelInfer",
        "--v2", "raw", "--model", "nope", "-d", body, "-n", "5", returncode=1,
    )  # fmt: skip
    assert wrong["ok"] == 0 and any("NOT_FOUND" in e or "nope" in e for e in wrong["errors"]), wrong
    r = bench("attack", v2.grpc_target, "--call", "inference.GRPCInferenceService/ModelInfer",
              "--v2", "raw", "-d", body, "-n", "5")  # fmt: skip
    assert r.returncode != 0 and "--v2 needs --model" in r.stderr


def test_realtime_rows_suite_short(serve: Any, tmp_path: Path) -> None:
    import joblib
    import numpy as np
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    X = rng.integers(1, 19, size=(200, 2)).astype(float)
    model = DecisionTreeClassifier(max_depth=4).fit(X, X[:, 0] < 8)
    model.feature_names_in_ = np.array(["Number", "Start"], dtype=object)
    joblib.dump(model, tmp_path / "tree.joblib")
    s = serve(str(tmp_path / "tree.joblib"))
    r = bench(
        "suite", "realtime-rows", "--target", s.url, "--server-pid", str(s.proc.pid),
        "--columns", "Number,Start", "--rows", "100", "--clients", "4", "-z", "200ms",
        "--warmup", "0s", "--path", "/predict",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "100 rows per request (Number, Start), 4 clients" in r.stdout
    line = next(x for x in r.stdout.splitlines() if x.startswith("| target |"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert float(cells[2]) == pytest.approx(float(cells[1]) * 100, rel=0.01), line
    assert cells[-1] == "100.0%", line
    assert "| seed (ML Server, 32 cores) | 1505 | 1505000 |" in r.stdout
    bad = bench(
        "suite", "realtime-rows", "--target", s.url, "--columns", "Nope", "--rows", "3",
        "-z", "100ms", "--warmup", "0s", "--path", "/predict",
    )  # fmt: skip
    assert bad.returncode == 1 and "no request succeeded" in bad.stderr


def test_suites_list_and_unknown() -> None:
    r = bench("suite", "--list")
    assert r.returncode == 0 and "seldon-matrix" in r.stdout and "realtime-rows" in r.stdout
    assert "not there yet" not in r.stdout
    r = bench("suite", "nope")
    assert r.returncode == 1 and "unknown suite" in r.stderr


def test_images_suite_short(serve: Any) -> None:
    noop = serve("noop")
    seed = serve(f"{ROOT}/benchmarks/models/images.py:Seed001")
    r = bench(
        "suite", "images", "--target", noop.url, "--grpc-target", noop.grpc_target,
        "--server-pid", str(noop.proc.pid), "--vs", seed.url, "--vs-grpc", seed.grpc_target,
        "--image-sizes", "360x640", "-z", "200ms", "--warmup", "0s",
        "--name-target", "noop", "--name-vs", "seed001",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "360×640 (image 0.229 MB): seconds per round of 20 concurrent requests" in out
    assert "720×1280" not in out
    rest = next(line for line in out.splitlines() if line.startswith("| REST |"))
    grpc = next(line for line in out.splitlines() if line.startswith("| gRPC |"))
    cells = [c.strip() for c in rest.split("|")[2:-1]]
    # basic, base64, binary: noop (with its CPU), seed001, the seed's figure
    assert cells[2::3] == ["0.0723", "0.0943", "0.0572"], rest
    assert all(float(c.split()[0]) > 0 for c in cells), rest
    assert "µs)" in cells[0] or "ms)" in cells[0], rest
    assert grpc.rstrip().endswith("| 0.0120 |"), grpc
    bad = bench("suite", "images", "--target", noop.url, "--image-sizes", "1x1")
    assert bad.returncode == 1 and "expected 360x640" in bad.stderr


def test_numpy_echo_suite_short(serve: Any) -> None:
    echo = serve("echo", "--model-name", "echo")
    r = bench(
        "suite", "numpy-echo", "--target", echo.url, "--grpc-target", echo.grpc_target,
        "--clients", "4", "-z", "150ms", "--warmup", "0s", "--format", "json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    cells = json.loads(r.stdout)
    labels = ["JSON", "JSON base64", "msgpack", "gRPC", "gRPC .npy in binData"]
    assert sorted(c["key"] for c in cells) == sorted(
        f"{label}|{n}" for label in labels for n in (1, 256, 8192)
    )
    for c in cells:
        (report,) = c["reports"]
        assert report["success"] == 1.0 and report["ok"] > 0, c["key"]
    md = bench(
        "suite", "numpy-echo", "--target", echo.url, "--grpc-target", echo.grpc_target,
        "--clients", "2", "-z", "100ms", "--warmup", "0s",
    )  # fmt: skip
    row = next(line for line in md.stdout.splitlines() if line.startswith("| msgpack |"))
    assert row.rstrip().endswith("| 0.590 |") and "0.487" in row, row


def test_grid_suite_html_report(serve: Any, tmp_path: Path) -> None:
    echo = serve("echo", "--model-name", "echo")
    page = tmp_path / "echo.html"
    r = bench(
        "suite", "numpy-echo", "--target", echo.url, "--grpc-target", echo.grpc_target,
        "--clients", "2", "-z", "100ms", "--warmup", "0s", "--html", str(page),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    assert "<svg" in html and "Mean latency per cell" in html
    assert "msgpack · 8192 · target" in html  # the table and a histogram per cell
    assert html.count("<svg") >= 16  # the bar chart and 15 histograms
    assert "<script src" not in html and "<link" not in html  # self-contained: no CDN


def render(page: Path) -> Image.Image:
    """Screenshots ``page`` with headless Chromium (scripts/install-chromium.sh)."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: run scripts/install-chromium.sh"
    png = page.with_suffix(".png")
    r = subprocess.run(
        [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--screenshot={png}", "--window-size=1200,1600", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert png.exists(), r.stderr
    return Image.open(png).convert("RGB")


def pixels_of(img: Image.Image, rgb: tuple[int, int, int]) -> int:
    colours = img.getcolors(maxcolors=1 << 22) or []
    return sum(n for n, c in colours if c == rgb)


FIRST_SERIES = (0x4C, 0x78, 0xA8)  # html.rs's first colour: bars of the first series


def self_contained(html: str) -> None:
    assert "<script" not in html
    assert 'src="http' not in html and 'href="http' not in html and "url(" not in html


def test_attack_html_report_renders(noop: Served, tmp_path: Path) -> None:
    page = tmp_path / "attack.html"
    r = bench("attack", f"{noop.url}/health/ping", "-n", "300", "-c", "1,4", "--html", str(page))
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    self_contained(html)
    assert html.count('data-chart="bars"') == 1
    assert html.count('data-chart="lines"') == 1  # throughput against concurrency
    assert html.count('data-chart="histogram"') == 2  # one per run
    assert "concurrency 4" in html
    img = render(page)
    assert len(img.getcolors(maxcolors=1 << 22) or []) > 20, "the page is blank"
    assert pixels_of(img, FIRST_SERIES) > 2000, "no chart bars were drawn"


def test_suite_html_report_renders(noop: Served, noop_raw: Served, tmp_path: Path) -> None:
    page = tmp_path / "suite.html"
    r = bench(
        "suite", "seldon-matrix", "--target", noop.url, "--grpc-target", noop.grpc_target,
        "--vs", noop_raw.url, "--vs-grpc", noop_raw.grpc_target,
        "--methods", "predict", "--sizes", "1", "-z", "200ms", "--warmup", "0s",
        "--html", str(page),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    self_contained(html)
    # Per protocol: mean and percentile bars; a histogram per cell and server.
    assert html.count('data-chart="bars"') == 4
    assert html.count('data-chart="histogram"') == 2 * 3 * 2
    assert "notebook, published" in html
    img = render(page)
    assert pixels_of(img, FIRST_SERIES) > 2000, "no chart bars were drawn"
