"""TorchServe 0.12's token authorization, on unless ``--disable-token-auth`` or
``disable_token_authorization=true``: at start the server writes ``key_file.json`` in its
working directory (owner-only) holding three keys, each sent as ``Authorization: Bearer
KEY``:

- ``inference``: the inference API (REST on the inference port, the gRPC inference
  service); it expires after ``token_expiration_min`` minutes (default 60);
- ``management``: the management API (REST on the management port, the gRPC management
  service); it expires likewise;
- ``API``: only ``GET /token?type=inference|management`` on the management port, which
  replaces that key (and its expiry) in the file; it never expires.

A key is valid for its own API only. ``torchserve --stop`` deletes the file.

The key file is the authority: ``KeyFile`` re-reads it when it changes, so a key that one
worker process regenerates is the key every worker checks.

What the TorchServe dialect must still do with this module:

- call ``KeyFile.check(header, Api.INFERENCE)`` for every inference route and the gRPC
  inference service, ``Api.MANAGEMENT`` for every management route and the gRPC management
  service; the API description (``OPTIONS /``, ``/api-description``) and the metrics port
  need no key, ``/ping`` does (TorchServe checks it after the API description only);
- on REST answer a failed check with 400 and ``error_body(FAILED)`` (TorchServe's
  InvalidKeyException), on gRPC with PERMISSION_DENIED and ``FAILED``;
- route ``GET /token`` (the path exactly) on the management port to ``KeyFile.token_api``;
- with authorization on, leave inferwire's own auth settings (``auth_tokens``,
  ``auth_users``) alone: TorchServe's keys expire and are replaced at run time, which the
  core's hashed, static token file does not do. ``SCOPES`` says which of inferwire's scopes
  each key stands for, where the dialect reuses inferwire's route table."""

from __future__ import annotations

import enum
import hmac
import json
import os
import re
import secrets
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import SettingsError

KEY_FILE = "key_file.json"
DEFAULT_EXPIRATION_MIN = 60.0

# TorchServe's words for a failed check, and for a failed /token call.
FAILED = "Token Authorization failed. Token either incorrect, expired, or not provided correctly"
TOKEN_API_FAILED = (
    "Token Authentication failed. Token either incorrect, expired, or not provided correctly"
)
# What TorchServe logs at start with authorization on (the path follows).
NOTICE = (
    "TorchServe now enforces token authorization by default. This requires the correct "
    "token to be provided when calling an API. Key file located at "
)


class Api(enum.Enum):
    INFERENCE = "inference"
    MANAGEMENT = "management"
    TOKEN = "API"


# inferwire's scope each key stands for (inferwire.authfiles.SCOPES).
SCOPES = {Api.INFERENCE: "predict", Api.MANAGEMENT: "publish"}

# "Bearer" then blanks then one word, as TorchServe matches the header (case-sensitive).
_BEARER = re.compile(r"Bearer\s+(\S+)", re.ASCII)


def new_key() -> str:
    """A random key. TorchServe's are 8 characters (48 bits); these are 128 bits, in the same
    URL-safe alphabet, since a client copies the key from the file whatever its length."""
    return secrets.token_urlsafe(16)


def _stamp(t: datetime) -> str:
    """An instant as Java's Instant.toString writes it: UTC, ISO 8601, ending in Z."""
    return t.astimezone(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


_INSTANT = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z")


def _instant(text: str, path: str) -> datetime:
    m = _INSTANT.fullmatch(text)
    if m is None:
        raise SettingsError(f"{path}: {text!r} is not an expiration time like 2024-02-16T21:12:24Z")
    fraction = (m.group(2) or "").ljust(6, "0")[:6]
    return datetime.fromisoformat(f"{m.group(1)}.{fraction}+00:00")


@dataclass(frozen=True)
class Keys:
    """The three keys, and when the inference and management keys expire."""

    management: str
    management_expires: datetime
    inference: str
    inference_expires: datetime
    api: str

    @staticmethod
    def new(expiration_min: float = DEFAULT_EXPIRATION_MIN, now: datetime | None = None) -> Keys:
        expires = (now or datetime.now(timezone.utc)) + timedelta(minutes=expiration_min)
        return Keys(new_key(), expires, new_key(), expires, new_key())

    def renewed(
        self, api: Api, expiration_min: float = DEFAULT_EXPIRATION_MIN, now: datetime | None = None
    ) -> Keys:
        """These keys with ``api``'s (inference or management) replaced, expiring anew."""
        expires = (now or datetime.now(timezone.utc)) + timedelta(minutes=expiration_min)
        if api is Api.INFERENCE:
            return replace(self, inference=new_key(), inference_expires=expires)
        if api is Api.MANAGEMENT:
            return replace(self, management=new_key(), management_expires=expires)
        raise ValueError("only the inference and management keys are renewed")

    def valid(self, token: str, api: Api, now: datetime | None = None) -> bool:
        """Whether ``token`` is ``api``'s key and has not expired (compared in constant
        time; an expired key fails as a wrong one does)."""
        key, expires = {
            Api.INFERENCE: (self.inference, self.inference_expires),
            Api.MANAGEMENT: (self.management, self.management_expires),
            Api.TOKEN: (self.api, None),
        }[api]
        if not token or not hmac.compare_digest(token.encode(), key.encode()):
            return False
        return expires is None or (now or datetime.now(timezone.utc)) < expires

    def to_json(self) -> dict[str, Any]:
        """The key file's contents, in TorchServe's layout."""
        return {
            "management": {
                "key": self.management,
                "expiration time": _stamp(self.management_expires),
            },
            "inference": {"key": self.inference, "expiration time": _stamp(self.inference_expires)},
            "API": {"key": self.api},
        }

    @staticmethod
    def from_json(data: Any, path: str) -> Keys:
        try:
            return Keys(
                management=str(data["management"]["key"]),
                management_expires=_instant(str(data["management"]["expiration time"]), path),
                inference=str(data["inference"]["key"]),
                inference_expires=_instant(str(data["inference"]["expiration time"]), path),
                api=str(data["API"]["key"]),
            )
        except (KeyError, TypeError) as e:
            raise SettingsError(
                f"{path}: not a TorchServe key file (management, inference, API): {e}"
            ) from None


def bearer(header: str | None) -> str:
    """The token in an ``Authorization: Bearer TOKEN`` header; empty when there is none."""
    m = _BEARER.fullmatch(header or "")
    return m.group(1) if m else ""


def write(path: str, keys: Keys) -> None:
    """Write the key file, readable by its owner only, replacing it at once: a reader (the
    client copying a key, another worker) never sees half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".key_file.", dir=folder)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(keys.to_json(), fh, indent=2)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read(path: str) -> Keys:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise SettingsError(f"{path}: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise SettingsError(f"{path}: not JSON: {e}") from e
    return Keys.from_json(data, path)


def error_body(message: str) -> dict[str, Any]:
    """TorchServe's REST error for a failed check: status 400, InvalidKeyException."""
    return {"code": 400, "type": "InvalidKeyException", "message": message}


class KeyFile:
    """The keys a running server checks, read from its key file and read again whenever the
    file changes (another worker regenerated a key). A missing or damaged file fails every
    check: authorization never falls open."""

    def __init__(self, path: str, expiration_min: float = DEFAULT_EXPIRATION_MIN) -> None:
        self.path = path
        self.expiration_min = expiration_min
        self._seen: tuple[int, int, int] | None = None
        self._keys: Keys | None = None

    @classmethod
    def create(cls, folder: str = ".", expiration_min: float = DEFAULT_EXPIRATION_MIN) -> KeyFile:
        """New keys in ``folder``/key_file.json (TorchServe's start)."""
        key_file = cls(os.path.join(folder, KEY_FILE), expiration_min)
        write(key_file.path, Keys.new(expiration_min))
        return key_file

    def keys(self) -> Keys | None:
        try:
            st = os.stat(self.path)
        except OSError:
            self._seen, self._keys = None, None
            return None
        seen = (st.st_ino, st.st_mtime_ns, st.st_size)
        # File times tick coarsely and a replaced file's inode may be reused: a file changed
        # within the last second is read again whatever its stat says.
        if seen != self._seen or time.time() - st.st_mtime < 1.0:
            try:
                self._keys = read(self.path)
            except SettingsError:
                self._keys = None
            self._seen = seen
        return self._keys

    def check(self, authorization: str | None, api: Api) -> bool:
        """Whether the ``Authorization`` header carries ``api``'s valid key."""
        keys = self.keys()
        return keys is not None and keys.valid(bearer(authorization), api)

    def regenerate(self, api: Api) -> Keys:
        """Replace ``api``'s key (inference or management) in the file."""
        keys = self.keys()
        if keys is None:
            raise SettingsError(f"{self.path}: the key file is missing or damaged")
        renewed = keys.renewed(api, self.expiration_min)
        write(self.path, renewed)
        self._seen, self._keys = None, renewed
        return renewed

    def token_api(self, authorization: str | None, kind: str | None) -> tuple[int, Any]:
        """``GET /token?type=KIND``: with the API key, a new ``inference`` or ``management``
        key; the status and the JSON body to answer (TorchServe answers 200 with an empty
        body, and 400 for a wrong key or a wrong or missing type)."""
        if not self.check(authorization, Api.TOKEN) or kind not in ("inference", "management"):
            return 400, error_body(TOKEN_API_FAILED)
        self.regenerate(Api(kind))
        return 200, ""

    def remove(self) -> None:
        """Delete the key file (the server stops)."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
