"""MLServer's ``mlserver_mlflow.MLflowRuntime`` served by inferwire's own: an MLflow model
folder (one with an ``MLmodel`` file) loaded with ``mlflow.pyfunc.load_model``, its
signature as the model's metadata and as the content types its requests are decoded with,
as MLServer's MLflow runtime reads them:

- a column-based signature: the inputs are the columns of one pandas DataFrame (``pd``),
  string columns as ``str``, binary ones as ``base64``;
- a tensor-based one: one numpy array (``np``), or a dict of them by name.

What the model returns becomes outputs as MLServer's codecs encode it: a DataFrame one
output per column, a dict one per key, anything else one output named ``output-1``; a 1-D
result is a column, ``[rows, 1]``, marked ``content_type: np``. Needs the ``mlflow``
package (``mlflow-skinny`` is enough) and the model's own library."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .. import content_types
from ..contract import Adapter, Request
from ..error_log import errors
from ..errors import BadRequest, ModelLoadError
from .settings import MLServerModel

log = logging.getLogger("inferwire")

IMPLEMENTATION = "mlserver_mlflow.MLflowRuntime"

# MLflow's column types: the V2 datatype and the content type MLServer gives them.
_COLUMNS = {
    "boolean": ("BOOL", "np"),
    "integer": ("INT32", "np"),
    "long": ("INT64", "np"),
    "float": ("FP32", "np"),
    "double": ("FP64", "np"),
    "string": ("BYTES", "str"),
    "binary": ("BYTES", "base64"),
    "datetime": ("BYTES", "datetime"),
}
_NUMPY = {
    "bool": "BOOL",
    "int8": "INT8",
    "int16": "INT16",
    "int32": "INT32",
    "int64": "INT64",
    "uint8": "UINT8",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "uint64": "UINT64",
    "float16": "FP16",
    "float32": "FP32",
    "float64": "FP64",
}


def _tensors(schema: Any, prefix: str) -> list[dict[str, Any]]:
    """A signature's inputs or outputs as V2 metadata tensors, as MLServer lists them."""
    out = []
    for i, spec in enumerate(schema.inputs):
        if schema.is_tensor_spec():
            datatype, kind = _NUMPY.get(str(np.dtype(spec.type)), "BYTES"), "np"
            shape = list(spec.shape)
        else:
            datatype, kind = _COLUMNS.get(
                str(getattr(spec.type, "name", spec.type)), ("BYTES", "pd_json")
            )
            shape = [-1, 1]
        out.append(
            {
                "name": spec.name or f"{prefix}{i}",
                "datatype": datatype,
                "shape": shape,
                "parameters": {"content_type": kind},
            }
        )
    return out


def adapter(ml: MLServerModel, name: str) -> tuple[Any, str]:
    """The model's adapter and a log line saying how it is served."""
    path = ml.model_path()
    try:
        import mlflow.pyfunc
    except ImportError as e:
        raise ModelLoadError(
            f"model {name}: {IMPLEMENTATION} needs mlflow: pip install mlflow-skinny"
        ) from e
    if not (path / "MLmodel").is_file():
        raise ModelLoadError(f"{path}: not an MLflow model folder (no MLmodel file)")
    try:
        model = mlflow.pyfunc.load_model(str(path))
    except Exception as e:
        raise ModelLoadError(
            f"{path}: cannot load the MLflow model: {type(e).__name__}: {e}"
        ) from e
    served = MLflowAdapter(model, name, ml)
    flavor = ", ".join(sorted(model.metadata.flavors)) or "pyfunc"
    return served, f"{IMPLEMENTATION} ({path.name}: {flavor}) with mlflow, in Python"


class MLflowAdapter(Adapter):
    def __init__(self, model: Any, name: str, ml: MLServerModel) -> None:
        super().__init__(name)
        self.model = model  # what the memory budget measures
        self.mlflow_model = model
        signature = model.metadata.signature
        self._params = signature is not None and getattr(signature, "params", None) is not None
        self.configure(ml)
        if signature is None:
            return
        inputs = _tensors(signature.inputs, "input-")
        meta = {"inputs": inputs}
        if signature.outputs is not None:
            meta["outputs"] = _tensors(signature.outputs, "output-")
        if isinstance(self._metadata, dict):
            self._metadata = {**self._metadata, **meta}
        # The signature's content types are the defaults, over the settings', as MLServer.
        tensors = signature.inputs.is_tensor_spec()
        named = tensors and signature.inputs.has_input_names()
        self._content_type = "np" if tensors else "pd"
        if named:
            self._content_type = ""  # a dict of arrays by name
        self._input_content_types = {
            i["name"]: i["parameters"]["content_type"]
            for i in inputs
            if i["parameters"]["content_type"] in ("str", "base64")
        }

    def seldon_predict(self, X: Any) -> Any:
        """Seldon's predict: the model's on the array as it came."""
        return self.mlflow_model.predict(X)

    def infer(self, request: Request) -> list[tuple[Any, ...]]:
        X, parameters = self.decode(request)
        # The request's own parameters (not its content type) are the model's params.
        params = {k: v for k, v in parameters.items() if k not in ("content_type", "headers")}
        try:
            y = (
                self.mlflow_model.predict(X, params=params)
                if self._params
                else self.mlflow_model.predict(X)
            )
        except Exception as e:
            from mlflow.exceptions import MlflowException

            if isinstance(e, MlflowException):
                raise BadRequest(e.message) from e
            errors.error(f"{self.name}.predict", e)
            raise
        return _encode(y)


def _encode(y: Any) -> list[tuple[Any, ...]]:
    np_type = {"content_type": "np"}
    if hasattr(y, "columns") and hasattr(y, "to_dict"):
        return [(name, value) for name, value in content_types.encode_outputs(y, [])]
    if isinstance(y, dict):
        return [(str(k), _column(v), np_type) for k, v in y.items()]
    if hasattr(y, "to_numpy"):  # a pandas Series
        y = y.to_numpy()
    return [("output-1", _column(y), np_type)]


def _column(v: Any) -> Any:
    arr = np.asarray(v)
    if arr.dtype.kind in ("U", "S", "O"):
        arr = np.array(
            [x.encode() if isinstance(x, str) else x for x in arr.ravel()], dtype=object
        ).reshape(arr.shape)
    return arr.reshape(-1, 1) if arr.ndim == 1 else arr
