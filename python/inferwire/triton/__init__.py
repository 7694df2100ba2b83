"""Triton Inference Server's dialect on the Python side (``inferwire tritonserver``).

- The repository: ``repository.py`` (the layout, version policies, models UNAVAILABLE
  with the reason, explicit and poll modes); ``config.py`` and ``config_schema.py``
  (``config.pbtxt`` read, completed and checked as Triton does, and its JSON form).
- The models, each kind a row of ``inferwire.runtimes``: ``python_model.py``
  (Python-backend ``TritonPythonModel`` classes, unchanged, in this process) with
  ``sequences.py`` (what Triton's sequence batcher gives them); ``onnx_model.py``,
  ``torch_model.py`` and ``ensemble.py`` on ``backends.py``; ``bls.py`` (a model calling
  another, in-process).
- What a Python-backend model imports as ``triton_python_backend_utils``: ``pb_utils.py``
  and its parts (``pb_tensor``, ``pb_types``, ``pb_errors``, ``pb_config``,
  ``pb_metrics``); ``pb_names.py`` says, for the docs, what inferwire does with each name.
- Triton's command line (``cli.py``) and the dialect's hooks (``dialect.py``); Triton's
  answers on the wire are the Rust core's (``crates/inferwire-server/src/dialect/
  triton.rs``)."""
