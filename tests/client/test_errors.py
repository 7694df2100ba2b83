"""inferwire's exceptions: one hierarchy in inferwire.errors, each also the standard
exception code already catches, and the status → class table the client and publish use."""

from __future__ import annotations

import inspect

import inferwire
import pytest
from inferwire import errors


def test_every_exception_is_in_errors_and_an_inferwire_error() -> None:
    exported = [getattr(inferwire, n) for n in inferwire.__all__]
    classes = [c for c in exported if inspect.isclass(c) and issubclass(c, BaseException)]
    assert classes
    for c in classes:
        assert c.__module__ == "inferwire.errors", c
        assert issubclass(c, inferwire.InferwireError), c


@pytest.mark.parametrize(
    ("kind", "stdlib"),
    [
        (inferwire.BadRequest, ValueError),
        (inferwire.SettingsError, ValueError),
        (inferwire.UnsupportedModel, ValueError),
        (inferwire.UnreachableError, ConnectionError),
    ],
)
def test_errors_are_the_stdlib_exceptions_code_already_catches(
    kind: type[Exception], stdlib: type[Exception]
) -> None:
    assert issubclass(kind, stdlib)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, inferwire.BadRequest),
        (406, inferwire.BadRequest),
        (413, inferwire.BadRequest),
        (415, inferwire.BadRequest),
        (401, inferwire.AuthError),
        (403, inferwire.AuthError),
        (404, inferwire.NotFoundError),
        (503, inferwire.OverloadedError),
        (500, inferwire.ServerError),
        (504, inferwire.ServerError),
    ],
)
def test_a_reply_status_picks_its_class(status: int, kind: type[Exception]) -> None:
    e = inferwire.ClientError.reply(status, "the server's words")
    assert type(e) is kind and isinstance(e, inferwire.ClientError)
    assert (e.status, e.message, str(e)) == (
        status,
        "the server's words",
        f"HTTP {status}: the server's words",
    )
    assert str(inferwire.ClientError.reply(status, "m", "POST /x")) == f"POST /x: HTTP {status}: m"


def test_a_models_bad_request_is_its_message_alone() -> None:
    e = inferwire.BadRequest("feature 'age' must be positive")
    assert str(e) == "feature 'age' must be positive"
    assert (e.status, e.message) == (400, "feature 'age' must be positive")
    assert str(inferwire.BadRequest()) == "" and str(inferwire.BadRequest(3)) == "3"


def test_earlier_names_still_import() -> None:
    assert inferwire.BadRequestError is inferwire.BadRequest
    assert inferwire.PublishError is inferwire.InferwireError
    from inferwire.client import BadRequestError, ClientError  # noqa: F401
    from inferwire.trees import UnsupportedModel

    assert UnsupportedModel is errors.UnsupportedModel
