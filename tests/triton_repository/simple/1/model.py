"""Triton's "simple": OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1, INT32
(the graph of its model.onnx: Add and Sub on INT32, cast to INT32)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            a, b = a.astype(np.int32), b.astype(np.int32)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("OUTPUT0", a + b),
                        pb_utils.Tensor("OUTPUT1", a - b),
                    ]
                )
            )
        return responses
