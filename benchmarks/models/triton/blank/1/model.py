"""The minimum Triton Python-backend model: each request's INPUT0 (INT64) back as OUTPUT0.

What it costs to serve is the server's own cost per request: on Triton, the copy into the
stub's shared memory and back; on ``inferwire tritonserver``, the call in-process.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                output_tensors=[
                    pb_utils.Tensor(
                        "OUTPUT0", pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
                    )
                ]
            )
            for request in requests
        ]
