"""Exceptions users raise and catch."""

from __future__ import annotations


class InferwireError(Exception):
    """Base class of every inferwire error."""


class BadRequest(InferwireError, ValueError):
    """Raise from ``predict`` to reject the input: the client gets HTTP 400 /
    gRPC INVALID_ARGUMENT with this message instead of a 500."""


class ModelLoadError(InferwireError):
    """The model could not be imported, built or loaded."""


class SettingsError(InferwireError, ValueError):
    """A setting has an invalid value; the message names it."""
