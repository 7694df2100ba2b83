"""Streaming: a generator model answered piece by piece, read with tritonclient's gRPC
stream API (as Triton's decoupled-model examples do) and as server-sent events with httpx.

    python examples/streaming/demo.py
"""

import json
import queue
import time
from pathlib import Path

import httpx
import inferwire
import numpy as np
import tritonclient.grpc as grpcclient

model = f"{Path(__file__).parent / 'model.py'}:Repeat"

with inferwire.local(model, "--model-name", "repeat_int32") as server:
    # gRPC ModelStreamInfer, as Triton's simple_grpc_custom_repeat.py calls its model.
    replies: queue.Queue = queue.Queue()
    values = np.array([4, 2, 0, 1], dtype=np.int32)
    inputs = [
        grpcclient.InferInput("IN", [len(values)], "INT32"),
        grpcclient.InferInput("DELAY", [len(values)], "UINT32"),
        grpcclient.InferInput("WAIT", [1], "UINT32"),
    ]
    inputs[0].set_data_from_numpy(values)
    inputs[1].set_data_from_numpy(np.full(len(values), 100, dtype=np.uint32))
    inputs[2].set_data_from_numpy(np.array([50], dtype=np.uint32))
    with grpcclient.InferenceServerClient(server.grpc) as client:
        client.start_stream(callback=lambda result, error: replies.put((result, error)))
        start = time.perf_counter()
        client.async_stream_infer(
            "repeat_int32", inputs, request_id="1", enable_empty_final_response=True
        )
        while True:
            result, error = replies.get(timeout=30)
            assert error is None, error
            response = result.get_response()
            if response.parameters["triton_final_response"].bool_param:
                break
            print(
                f"gRPC piece at {(time.perf_counter() - start) * 1000:4.0f} ms: "
                f"OUT {result.as_numpy('OUT').tolist()} IDX {result.as_numpy('IDX').tolist()}"
            )
        client.stop_stream()

    # The same over REST, Triton's generate extension streamed (server-sent events).
    body = {"IN": values.tolist(), "DELAY": [10, 10, 10, 10], "WAIT": 0}
    with httpx.stream(
        "POST", f"{server.url}/v2/models/repeat_int32/generate_stream", json=body, timeout=30
    ) as r:
        for line in r.iter_lines():
            if line.startswith("data:"):
                print("SSE event:", json.loads(line[5:]))
