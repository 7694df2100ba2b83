"""Models written against seldon-core 1.x's ``seldon_core.user_model``: subclasses of
``SeldonComponent`` and the exceptions Seldon's wrapper answers with their own status.

seldon_core itself needs Python 3.10 and old Flask, so it is not in the test environment;
the three classes below stand in for it with the same names and behaviour as seldon-core
1.18's (the base's stubs raise SeldonNotImplementedError; SeldonMicroserviceException
defaults to 400 with the reason MICROSERVICE_BAD_DATA and this ``to_dict()``)."""

from __future__ import annotations

from typing import Any

import numpy as np


class SeldonMicroserviceException(Exception):
    status_code = 400

    def __init__(
        self,
        message: str,
        status_code: int | None = None,
        payload: Any = None,
        reason: str = "MICROSERVICE_BAD_DATA",
    ) -> None:
        Exception.__init__(self)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.payload = payload
        self.reason = reason

    def to_dict(self) -> dict[str, Any]:
        return {"status": {"status": 1, "info": self.message, "code": -1, "reason": self.reason}}


class SeldonNotImplementedError(SeldonMicroserviceException):
    status_code = 400

    def __init__(self, message: str) -> None:
        SeldonMicroserviceException.__init__(self, message)


class SeldonComponent:
    def __init__(self, **kwargs: Any) -> None:
        pass

    def load(self) -> None:
        pass


def _stub(name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise SeldonNotImplementedError(f"{name} is not implemented")

    method.__name__ = name
    return method


for _name in (
    "tags",
    "class_names",
    "predict",
    "predict_raw",
    "send_feedback",
    "send_feedback_raw",
    "transform_input",
    "transform_input_raw",
    "transform_output",
    "transform_output_raw",
    "route",
    "route_raw",
    "aggregate",
    "aggregate_raw",
    "health_status",
    "health_status_raw",
    "metrics",
    "metadata",
    "init_metadata",
    "feature_names",
):
    setattr(SeldonComponent, _name, _stub(_name))


class PredictOnly(SeldonComponent):
    """Defines only ``predict``: every other method is the base's stub."""

    def predict(self, X: Any, names: Any, meta: Any = None) -> Any:
        return np.asarray(X) * 2


class RawOnly(SeldonComponent):
    """Defines only ``predict_raw``."""

    def predict_raw(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"jsonData": {"keys": sorted(msg)}}


class TagsViaSuper(SeldonComponent):
    """Overrides ``tags`` but defers to the base, which raises: no tags, as in Seldon."""

    def predict(self, X: Any, names: Any) -> Any:
        return np.asarray(X) + 1

    def tags(self) -> dict[str, Any]:
        return super().tags()  # type: ignore[no-any-return]


class UserCustomException(Exception):
    """The shape of Seldon's documented custom error (``model_error_handler``)."""

    status_code = 404

    def __init__(self, message: str, application_error_code: int, http_status_code: int) -> None:
        Exception.__init__(self)
        self.message = message
        if http_status_code is not None:
            self.status_code = http_status_code
        self.application_error_code = application_error_code

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": {
                "status": self.status_code,
                "message": self.message,
                "app_code": self.application_error_code,
            }
        }


class Raising(SeldonComponent):
    """Raises per the first value of the request: 1 SeldonMicroserviceException (400),
    2 a user exception (404), 3 a status of 200, 4 a status of 999, 5 a 503, 6 a plain
    ValueError; anything else is answered."""

    def predict(self, X: Any, names: Any) -> Any:
        kind = int(np.asarray(X).flat[0])
        if kind == 1:
            raise SeldonMicroserviceException("no negative ages", status_code=400)
        if kind == 2:
            raise UserCustomException("no such customer", 1234, 404)
        if kind == 3:
            raise SeldonMicroserviceException("fine, really", status_code=200)
        if kind == 4:
            raise SeldonMicroserviceException("off the scale", status_code=999)
        if kind == 5:
            raise SeldonMicroserviceException(
                "warming up", status_code=503, reason="MICROSERVICE_UNAVAILABLE"
            )
        if kind == 6:
            raise ValueError("plain")
        return np.asarray(X)
