"""Triton's "simple_int8": the sum and difference of two INT8 inputs, computed on INT32
and cast back to INT8 (the graph of its model.onnx: Cast, Add/Sub, Cast)."""

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
                        pb_utils.Tensor("OUTPUT0", (a + b).astype(np.int8)),
                        pb_utils.Tensor("OUTPUT1", (a - b).astype(np.int8)),
                    ]
                )
            )
        return responses
