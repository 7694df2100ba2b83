"""A two-step Business Logic Scripting pipeline: each request's INPUT0 goes to the model
``blank`` through ``pb_utils.InferenceRequest(...).exec()`` (synchronous BLS, as
python_backend's ``examples/bls/sync_model.py``), and blank's OUTPUT0 is the answer.

Per request minus ``blank``'s per request, it measures what one BLS step costs a server:
on Triton, a second trip from the stub through tritonserver to blank's stub and back.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            step = pb_utils.InferenceRequest(
                model_name="blank",
                requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "INPUT0")],
            )
            answer = step.exec()
            if answer.has_error():
                raise pb_utils.TritonModelException(answer.error().message())
            output = pb_utils.get_output_tensor_by_name(answer, "OUTPUT0")
            responses.append(pb_utils.InferenceResponse(output_tensors=[output]))
        return responses
