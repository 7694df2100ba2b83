"""Runs seldon-core's own SeldonClient (seldon-core 1.18.2, Python 3.10: see
scripts/seldon-client-env.sh) against an inferwire server and prints one JSON object:
for each named call, whether the client called it a success, its message and the reply
as a dict. test_seldon_client_compat.py asserts on it.

    python seldon_client_calls.py HTTP_PORT GRPC_PORT GROUP
"""

import base64
import json
import sys
import traceback

import grpc
import numpy as np
from google.protobuf import any_pb2, empty_pb2, json_format, wrappers_pb2
from seldon_core.proto import prediction_pb2, prediction_pb2_grpc
from seldon_core.seldon_client import SeldonClient

HTTP, GRPC, GROUP = sys.argv[1], sys.argv[2], sys.argv[3]
HOST = "127.0.0.1"
ROW = np.array([[1.0, 2.0]])


def client(transport, gateway="ambassador", namespace="seldon"):
    port = HTTP if transport == "rest" else GRPC
    return SeldonClient(
        gateway=gateway,
        transport=transport,
        namespace=namespace,
        deployment_name="mymodel",
        gateway_endpoint=f"{HOST}:{port}",
        microservice_endpoint=f"{HOST}:{port}",
        client_return_type="dict",
    )


def as_dict(msg):
    if msg is None or isinstance(msg, dict):
        return msg
    return json_format.MessageToDict(msg)


def result(r):
    out = {"success": r.success, "msg": r.msg}
    for field in ("request", "response"):
        out[field] = as_dict(getattr(r, field, None))
    return out


def tftensor_row():
    """A tftensor request built from seldon-core's protobuf classes (no tensorflow)."""
    return {
        "data": {
            "tftensor": {
                "dtype": "DT_DOUBLE",
                "tensorShape": {"dim": [{"size": "1"}, {"size": "2"}]},
                "tensorContent": base64.b64encode(ROW.tobytes()).decode(),
            }
        }
    }


def predict_calls():
    calls = {}
    for transport in ("rest", "grpc"):
        for gateway in ("ambassador", "istio", "seldon"):
            for payload in ("ndarray", "tensor"):
                calls[f"{transport}-{gateway}-{payload}"] = (
                    lambda t=transport, g=gateway, p=payload: client(t, g).predict(
                        data=ROW, payload_type=p, names=["a", "b"]
                    )
                )
        c = lambda t=transport: client(t)  # noqa: E731
        calls[f"{transport}-no-namespace"] = lambda t=transport: client(t, namespace=None).predict(
            data=ROW, payload_type="ndarray"
        )
        calls[f"{transport}-str"] = lambda c=c: c().predict(str_data="hello")
        calls[f"{transport}-bin"] = lambda c=c: c().predict(bin_data=b"\x00\x01\xff")
        calls[f"{transport}-json"] = lambda c=c: c().predict(
            json_data={"a": [1, 2]}, meta={"k": "v"}
        )
        calls[f"{transport}-runtime"] = lambda c=c: c().predict(json_data={"runtime": "yes"})
        calls[f"{transport}-meta"] = lambda c=c: c().predict(data=ROW, meta={"team": "x"})
        calls[f"{transport}-raw-tftensor"] = lambda c=c: c().predict(raw_data=tftensor_row())
        calls[f"{transport}-raw-puid"] = lambda c=c: c().predict(
            raw_data={"meta": {"puid": "given-1"}, "data": {"ndarray": [[3, 4]]}}
        )
        for payload in ("ndarray", "tensor"):
            calls[f"{transport}-micro-{payload}"] = lambda t=transport, p=payload: client(
                t
            ).microservice(data=ROW, payload_type=p, method="predict")
        calls[f"{transport}-micro-str"] = lambda c=c: c().microservice(
            str_data="hi", method="predict"
        )
        calls[f"{transport}-micro-bin"] = lambda c=c: c().microservice(
            bin_data=b"ab", method="predict"
        )
        calls[f"{transport}-micro-json"] = lambda c=c: c().microservice(
            json_data={"x": 1}, method="predict"
        )
        for gateway in ("ambassador", "seldon"):
            calls[f"{transport}-{gateway}-feedback"] = lambda t=transport, g=gateway: client(
                t, g
            ).feedback(
                prediction_request=json_format.ParseDict(
                    {"data": {"ndarray": [[1, 2]]}}, prediction_pb2.SeldonMessage()
                ),
                prediction_response=json_format.ParseDict(
                    {"data": {"ndarray": [[2, 4]]}}, prediction_pb2.SeldonMessage()
                ),
                reward=0.5,
            )
        calls[f"{transport}-micro-feedback"] = lambda c=c: c().microservice_feedback(
            prediction_request=json_format.ParseDict(
                {"data": {"ndarray": [[1, 2]]}}, prediction_pb2.SeldonMessage()
            ),
            prediction_response=json_format.ParseDict(
                {"data": {"ndarray": [[2, 4]]}}, prediction_pb2.SeldonMessage()
            ),
            reward=1.0,
        )

    def custom():
        any_msg = any_pb2.Any()
        any_msg.Pack(wrappers_pb2.StringValue(value="opaque"))
        return client("grpc").predict(custom_data=any_msg)

    calls["grpc-custom"] = custom
    return calls


def component_calls():
    """The other component types' methods (TRANSFORMER, OUTPUT_TRANSFORMER, ROUTER,
    COMBINER) as SeldonClient calls them on one microservice."""
    calls = {}
    for transport in ("rest", "grpc"):
        for method in ("transform-input", "transform-output", "route"):
            calls[f"{transport}-{method}"] = lambda t=transport, m=method: client(t).microservice(
                data=ROW, payload_type="ndarray", method=m
            )
        calls[f"{transport}-aggregate"] = lambda t=transport: client(t).microservice(
            datas=[ROW, ROW * 3], payload_type="ndarray", method="aggregate"
        )
    return calls


def grpc_metadata():
    with grpc.insecure_channel(f"{HOST}:{GRPC}") as ch:
        md = prediction_pb2_grpc.ModelStub(ch).Metadata(empty_pb2.Empty(), timeout=10)
    return {"success": True, "msg": "", "response": json_format.MessageToDict(md)}


def main():
    calls = predict_calls() if GROUP == "predict" else component_calls()
    if GROUP == "predict":
        calls["grpc-metadata"] = grpc_metadata
    out = {}
    for name, call in calls.items():
        try:
            r = call()
            out[name] = r if isinstance(r, dict) else result(r)
        except Exception as e:  # reported per call: the test names which one failed
            out[name] = {
                "success": False,
                "msg": f"{type(e).__name__}: {e}",
                "trace": traceback.format_exc(),
            }
    json.dump(out, sys.stdout)


main()
