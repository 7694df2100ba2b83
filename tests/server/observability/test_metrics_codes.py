"""Every reply is counted under its own status in ``inferwire_requests_total``: refusals
(401, 403, UNAUTHENTICATED, PERMISSION_DENIED) and a 406 were all counted as
``code="other"`` before the labels were derived from the error kinds and gRPC codes."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
from google.protobuf import json_format
from prometheus_client.parser import text_string_to_metric_families

PREDICT = "/api/v1.0/predictions"
BODY = {"data": {"ndarray": [[1.0, 2.0]]}}


def token(name: str, scopes: str, file: Path) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "inferwire", "auth", "token", name, "--scopes", scopes,
         "--file", str(file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def requests_by_labels(url: str) -> dict[tuple[str, str, str, str, str], float]:
    """(model, protocol, route, encoding, code) → count."""
    text = httpx.get(url + "/metrics").text
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "inferwire_requests_total":
                labels = s.labels
                key = tuple(labels[k] for k in ("model", "protocol", "route", "encoding", "code"))
                out[key] = s.value
    return out


def test_refusals_and_406_are_counted_by_their_own_status(
    serve: Any, tmp_path: Path, pb: Any
) -> None:
    tokens = tmp_path / "tokens"
    bot = token("bot", "predict", tokens)
    publisher = token("publisher", "publish", tokens)
    s = serve("models:Echo", "--auth-tokens", str(tokens))

    def auth(t: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {t}"}

    assert httpx.post(s.url + PREDICT, json=BODY).status_code == 401
    assert httpx.post(s.url + PREDICT, json=BODY, headers=auth(publisher)).status_code == 403
    buf = io.BytesIO()
    np.save(buf, np.ones(3, dtype="<f4"), allow_pickle=False)
    headers = {**auth(bot), "Content-Type": "application/x-npy", "Accept": "text/html"}
    assert httpx.post(s.url + PREDICT, content=buf.getvalue(), headers=headers).status_code == 406
    msg = json_format.ParseDict(BODY, pb.msgs.SeldonMessage())
    with s.channel() as ch:
        stub = pb.grpc.SeldonStub(ch)
        for metadata, code in [
            ((), grpc.StatusCode.UNAUTHENTICATED),
            ((("authorization", f"Bearer {publisher}"),), grpc.StatusCode.PERMISSION_DENIED),
        ]:
            with pytest.raises(grpc.RpcError) as e:
                stub.Predict(msg, timeout=10, metadata=metadata)
            assert e.value.code() == code

    counts = requests_by_labels(s.url)
    # Refused before any model was chosen: counted under no model.
    assert counts[("", "rest", "predict", "none", "401")] == 1
    assert counts[("", "rest", "predict", "none", "403")] == 1
    assert counts[("Echo", "rest", "predict", "npy", "406")] == 1
    assert counts[("", "grpc", "predict", "none", "UNAUTHENTICATED")] == 1
    assert counts[("", "grpc", "predict", "none", "PERMISSION_DENIED")] == 1
    assert not [k for k in counts if k[4] == "other"], counts
