"""Every exception inferwire raises, in one hierarchy (docs/reference/client.md#errors):

    InferwireError
    ├── ClientError                               the server answered a call with an error
    │   ├── BadRequest         (also ValueError)  400, 406, 413, 415; a model raises it to
    │   │                                         refuse its input
    │   ├── AuthError                             401, 403
    │   ├── NotFoundError                         404
    │   ├── OverloadedError                       503
    │   └── ServerError                           500 and other 5xx
    ├── UnreachableError       (also ConnectionError)  no answer
    ├── ModelLoadError                            a model could not be imported or loaded
    ├── SettingsError          (also ValueError)  a setting has an invalid value
    └── UnsupportedModel       (also ValueError)  a model the native runtime cannot score

Each one subclasses the standard exception code already catches for that kind of
failure, so ``except ValueError`` or ``except OSError`` keeps working.
"""

from __future__ import annotations

import json


class InferwireError(Exception):
    """Base class of every inferwire error."""


class ClientError(InferwireError):
    """The server answered a call with an error: ``status`` is its HTTP status (a gRPC
    code is mapped to one) and ``message`` the server's own words."""

    status: int

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message

    @classmethod
    def reply(cls, status: int, message: str, call: str = "") -> ClientError:
        """The error for a reply with ``status``: the subclass that status stands for;
        ``call`` ("POST /path") prefixes the text when given."""
        kind: type[ClientError]
        if status in (401, 403):
            kind = AuthError
        elif status == 404:
            kind = NotFoundError
        elif status == 503:
            kind = OverloadedError
        elif status >= 500:
            kind = ServerError
        else:
            kind = BadRequest
        e = kind.__new__(kind)
        ClientError.__init__(e, status, message)
        if call:
            e.args = (f"{call}: {e.args[0]}",)
        return e


class BadRequest(ClientError, ValueError):
    """The request was refused as it was sent. Raise it from ``predict`` to reject the
    input: the client gets HTTP 400 / gRPC INVALID_ARGUMENT with this message instead of
    a 500. ``inferwire.Client`` raises it for a 400, 406, 413 or 415 reply."""

    status = 400

    def __init__(self, message: object = "") -> None:
        # Raised by a model: the text is the message alone, as the server sends it.
        InferwireError.__init__(self, message)
        self.message = str(message)


class AuthError(ClientError):
    """401 (no valid token) or 403 (a token without the route's scope)."""


class NotFoundError(ClientError):
    """404: no such model, version or route."""


class OverloadedError(ClientError):
    """503: the server's queue is full or it is shutting down (retried first)."""


class ServerError(ClientError):
    """500 and other 5xx: the model failed (its message is here) or the server did."""


class UnreachableError(InferwireError, ConnectionError):
    """No answer: the connection failed or timed out (after the retries)."""


class ModelLoadError(InferwireError):
    """The model could not be imported, built or loaded."""


class SettingsError(InferwireError, ValueError):
    """A setting has an invalid value; the message names it."""


class UnsupportedModel(InferwireError, ValueError):
    """The model, or one of its options, is outside what the native runtime scores."""


# Earlier names, kept so that code catching them keeps working.
BadRequestError = BadRequest
"""The client's 400: the same class as ``BadRequest``."""
PublishError = InferwireError
"""``inferwire.publish`` raises ``ClientError`` (the server refused) and
``UnreachableError``; both are ``InferwireError``."""


# A model's error body is its own JSON, answered as is; bounded as a request body would be
# small: past this, the ordinary FAILURE message says the same thing.
MAX_ERROR_BODY = 64 * 1024
MAX_ERROR_MESSAGE = 4096


def error_reply(exc: BaseException) -> tuple[int, str, str | None] | None:
    """The HTTP status and REST body of an exception that carries them, as Seldon's
    wrapper answers it: ``SeldonMicroserviceException(message, status_code=...,
    reason=...)`` (its ``to_dict()`` is the body) or any exception with an integer
    ``status_code`` (with ``to_dict()``, the body a user's ``model_error_handler``
    answers). Returns ``(status, message, body or None)``, or None for other exceptions;
    the core answers a status outside 4xx/5xx as 500."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or isinstance(status, bool) or not 0 <= status <= 65535:
        return None
    message = getattr(exc, "message", None)
    text = f"{type(exc).__name__}: {message if isinstance(message, str) else exc}"
    if len(text) > MAX_ERROR_MESSAGE:
        text = text[: MAX_ERROR_MESSAGE - 1] + "…"
    body = None
    to_dict = getattr(exc, "to_dict", None)
    if callable(to_dict):
        try:
            body = json.dumps(to_dict(), default=str)
        except Exception:  # a broken to_dict(): the ordinary FAILURE body instead
            body = None
        if body is not None and len(body) > MAX_ERROR_BODY:
            body = None
    return status, text, body
