"""The arrays kserve_client_calls.py sends (as inputs ``x_DT``) and
test_kserve_client_compat.py expects back: one module for both, since the calls run in
kserve's own virtualenv and the assertions in the test's."""

import numpy as np

# Every datatype kserve's numpy codec has (no BF16), edge values; the model refuses negatives.
ARRAYS = {
    "FP32": np.array([[0.5, 1.0, 3.4e38]], np.float32),
    "FP64": np.array([[0.25, 2.0, 1.7e308]], np.float64),
    "INT32": np.array([[0, 1, 2**31 - 1]], np.int32),
    "INT64": np.array([[0, 1, 2**63 - 1]], np.int64),
    "INT8": np.array([[0, 1, 127]], np.int8),
    "INT16": np.array([[0, 1, 32767]], np.int16),
    "UINT8": np.array([[0, 1, 255]], np.uint8),
    "UINT16": np.array([[0, 1, 65535]], np.uint16),
    "UINT32": np.array([[0, 1, 2**32 - 1]], np.uint32),
    "UINT64": np.array([[0, 1, 2**64 - 1]], np.uint64),
    "BOOL": np.array([[True, False, True]]),
    "BYTES": np.array([[b"a", b"", "\u00e9".encode()]], dtype=np.object_),
}
# kserve refuses FP16 in JSON (InferRequest.to_rest) and gRPC has no typed FP16 field.
FP16 = np.array([[0.5, 1.0, 65504.0]], np.float16)
