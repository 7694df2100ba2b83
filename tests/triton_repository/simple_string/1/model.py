"""Triton's "simple_string": each element of INPUT0 and INPUT1 is an integer written in
decimal; OUTPUT0 and OUTPUT1 are their sum and difference, written the same way (the
graph of its model.onnx: Cast STRING to INT32, Add/Sub, Cast INT32 to STRING)."""

import numpy as np
import triton_python_backend_utils as pb_utils


def as_int32(strings):
    return np.array([int(s) for s in strings.reshape(-1)], dtype=np.int32).reshape(strings.shape)


def as_strings(numbers):
    flat = [str(n).encode("utf-8") for n in numbers.reshape(-1)]
    return np.array(flat, dtype=np.object_).reshape(numbers.shape)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = as_int32(pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy())
            b = as_int32(pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy())
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("OUTPUT0", as_strings(a + b)),
                        pb_utils.Tensor("OUTPUT1", as_strings(a - b)),
                    ]
                )
            )
        return responses
