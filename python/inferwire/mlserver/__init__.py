"""Everything that makes inferwire serve as MLServer does, on the Python side:

- ``settings``: MLServer's ``settings.json``, ``model-settings.json`` files and the
  ``MLSERVER_*`` / ``MLSERVER_MODEL_*`` variables, read as MLServer reads them;
- ``dialect``: the MLServer dialect (``inferwire start``): its settings files, custom
  metrics and import path, as the server and the repository ask them;
- ``models``: MLServer ``MLModel`` subclasses served unchanged;
- ``runtimes``: MLServer's built-in scikit-learn, XGBoost and LightGBM runtimes;
- ``mlflow_runtime``: ``mlserver_mlflow.MLflowRuntime``'s MLflow model folders;
- ``metrics``: what models record with ``mlserver.register`` / ``mlserver.log``.

Imports of MLServer's own package are absolute (``import mlserver``), and no module here
is named ``mlserver``: the library is never shadowed."""
