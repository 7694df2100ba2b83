"""Triton's "simple_sequence": OUTPUT = READY * (INPUT + START), the graph of its
model.onnx, where START is 1 on the first request of a sequence and READY is 1 on every
request that carries data (Triton's sequence batcher sets READY to 0 only on the empty
slots of a batch, which never reach a Python model). START is read from the request's
flags, as a Python model can on any Triton."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            start = 1 if request.flags() & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START else 0
            ready = 1
            out = (ready * (value.astype(np.int32) + start)).astype(np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
