"""MLServer's content types for V2 requests: what the model receives for each input
(``parameters.content_type`` on an input) or for the whole request (on the request), and
how what it returns becomes outputs.

- ``np`` (the default): a numpy array of the input's datatype and shape.
- ``str``: BYTES as a list of ``str`` (UTF-8).
- ``base64``: BYTES holding base64 text, as a list of the decoded ``bytes``.
- ``pd`` (on the request): the inputs are the columns of one pandas DataFrame, named after
  the inputs; a DataFrame returned becomes one output per column.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np

from .errors import BadRequest

INPUT_TYPES = ("np", "str", "base64")
REQUEST_TYPES = ("np", "pd", "dict")


def _strings(name: str, arr: Any) -> list[str]:
    try:
        return [b.decode() if isinstance(b, bytes) else str(b) for b in np.ravel(arr)]
    except UnicodeDecodeError as e:
        raise BadRequest(f"inputs[{name}]: content_type str needs UTF-8 text: {e}") from e


def decode_input(name: str, arr: Any, content_type: Any) -> Any:
    if content_type in (None, "np"):
        return arr
    if content_type == "str":
        return _strings(name, arr)
    if content_type == "base64":
        try:
            return [base64.b64decode(b, validate=True) for b in np.ravel(arr)]
        except (binascii.Error, TypeError, ValueError) as e:
            raise BadRequest(f"inputs[{name}]: content_type base64: not base64: {e}") from e
    raise BadRequest(
        f"inputs[{name}].parameters.content_type: {content_type!r} is not one of "
        f"{', '.join(INPUT_TYPES)} (pd goes on the request)"
    )


def decode_request(
    inputs: dict[str, Any],
    parameters: dict[str, Any],
    input_parameters: dict[str, dict[str, Any]],
) -> Any:
    """The model's ``X``: one input's value, a dict of them by name (always, with
    MLServer's ``dict``), or a DataFrame (``pd``)."""
    decoded = {
        name: decode_input(name, arr, input_parameters.get(name, {}).get("content_type"))
        for name, arr in inputs.items()
    }
    kind = parameters.get("content_type")
    if kind in (None, "np"):
        return decoded[next(iter(decoded))] if len(decoded) == 1 else decoded
    if kind == "dict":
        return decoded
    if kind != "pd":
        raise BadRequest(
            f"parameters.content_type: {kind!r} is not one of {', '.join(REQUEST_TYPES)}"
        )
    try:
        import pandas as pd
    except ImportError as e:
        raise BadRequest("content_type pd needs pandas on the server (pip install pandas)") from e
    columns: dict[str, Any] = {}
    for name, value in decoded.items():
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                value = _strings(name, value)
            elif value.ndim > 1:
                if value.ndim == 2 and value.shape[1] == 1:
                    value = value[:, 0]
                else:
                    raise BadRequest(
                        f"inputs[{name}]: a DataFrame column must be 1-D, got shape "
                        f"{list(value.shape)}"
                    )
        columns[name] = value
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise BadRequest(f"content_type pd: the columns have different lengths {sorted(lengths)}")
    return pd.DataFrame(columns)


def encode_outputs(out: Any, requested: list[str]) -> list[tuple[str, Any]]:
    """What ``predict`` returned as (name, value) outputs."""
    if hasattr(out, "columns") and hasattr(out, "to_dict") and hasattr(out, "dtypes"):
        # A pandas DataFrame: one output per column (strings as BYTES).
        return [(str(c), _column(out[c])) for c in out.columns]
    if isinstance(out, dict):
        return [(str(k), v) for k, v in out.items()]
    name = requested[0] if len(requested) == 1 else "output-0"
    return [(name, out)]


def _column(series: Any) -> Any:
    values = series.to_numpy()
    if values.dtype == object:
        return np.array([v.encode() if isinstance(v, str) else v for v in values], dtype=object)
    return values
