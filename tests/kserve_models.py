"""The model test_kserve_client_compat.py serves to KServe's clients: every input back as
``NAME_out`` (any datatype), a request parameter ``tag`` back as a BYTES output, metadata
for the metadata calls, and the model's own error for a negative number."""

from __future__ import annotations

from typing import Any

import numpy as np


class Mirror:
    def predict(self, X: Any, features_names: list[str] | None = None, meta: Any = None) -> Any:
        inputs = X if isinstance(X, dict) else {(features_names or ["x"])[0]: X}
        for v in inputs.values():
            a = np.asarray(v)
            if a.dtype.kind in "if" and a.size and (a < 0).any():
                raise ValueError("negative values are refused by this model")
        out = {f"{k}_out": v for k, v in inputs.items()}
        # Shows that InferRequest(parameters=...) reaches the model over either transport.
        tag = ((meta or {}).get("parameters") or {}).get("tag")
        if tag is not None:
            out["tag"] = np.array([str(tag).encode()], dtype=np.object_)
        return out

    def init_metadata(self) -> dict[str, Any]:
        return {
            "platform": "inferwire-test",
            "inputs": [{"name": "x_FP32", "datatype": "FP32", "shape": [1, 3]}],
            "outputs": [{"name": "x_FP32_out", "datatype": "FP32", "shape": [1, 3]}],
        }
