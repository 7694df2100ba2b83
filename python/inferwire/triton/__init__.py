"""Triton Inference Server's dialect on the Python side (``inferwire tritonserver``): a
Triton model repository read as Triton reads it (``config.py``: ``config.pbtxt``;
``repository.py``: the layout and version policies), Python-backend models served
unchanged (``python_model.py``, with ``pb_utils.py`` as the
``triton_python_backend_utils`` module they import), Triton's command line (``cli.py``)
and the dialect's hooks (``dialect.py``)."""
