"""Triton's dyna_sequence test backend (server: src/test/dyna_sequence) as QA's
"simple_string_dyna_sequence" runs it: each instance keeps an INT32 accumulator per
correlation id. The first request of a sequence sets it to the sum of INPUT's elements,
later ones add theirs; the last adds the correlation id (a decimal string here, read as
an integer) and forgets the sequence. OUTPUT has INPUT's shape, every element the
accumulator. The execute_delay_ms parameter is slept before each execute, as the backend
does."""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils

START = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
END = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        delay = config.get("parameters", {}).get("execute_delay_ms", {})
        self.delay_s = int(delay.get("string_value", "0")) / 1000
        self.accumulator = {}  # correlation id -> INT32 running total, per instance

    def execute(self, requests):
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        return [self.step(request) for request in requests]

    def step(self, request):
        try:
            corrid = int(request.correlation_id())
        except ValueError:
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(
                    "dyna sequence backend expects correlation ID to be decodable into an integer",
                    pb_utils.TritonError.INVALID_ARG,
                )
            )
        values = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
        total = np.int32(values.astype(np.int32).sum(dtype=np.int32))
        flags = request.flags()
        if flags & START:
            self.accumulator[corrid] = total
        else:
            self.accumulator[corrid] = np.int32(self.accumulator.get(corrid, 0) + total)
        if flags & END:
            truncated = np.array(corrid, dtype=np.uint64).astype(np.int32)
            self.accumulator[corrid] = np.int32(self.accumulator[corrid] + truncated)
        out = np.full(values.shape, self.accumulator[corrid], dtype=np.int32)
        if flags & END:
            del self.accumulator[corrid]
        return pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", out)])
