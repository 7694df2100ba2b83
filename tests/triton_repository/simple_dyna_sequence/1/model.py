"""Triton's "simple_dyna_sequence": OUTPUT = READY * (INPUT + START + END * CORRID), the
graph of its model.onnx (CORRID, a UINT64, cast to INT32), where START is 1 on the first
request of a sequence, END 1 on its last, CORRID the sequence's correlation id and READY
1 on every request that carries data. START, END and CORRID are read from the request's
flags and correlation id, as a Python model can on any Triton. (The config's
execute_delay_ms is a parameter of Triton's dyna_sequence test backend; the ONNX model
does not read it, nor does this one.)"""

import numpy as np
import triton_python_backend_utils as pb_utils

START = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
END = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            flags = request.flags()
            start = 1 if flags & START else 0
            end = 1 if flags & END else 0
            corrid = np.array(request.correlation_id(), dtype=np.uint64).astype(np.int32)
            ready = 1
            out = ready * (value.astype(np.int32) + start + end * corrid)
            out = out.astype(np.int32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)]))
        return responses
