"""TorchServe 0.12's token authorization (inferwire.torchserve.tokens), in-process:
key_file.json in TorchServe's layout and owner-only, each key valid for its own API only,
expiry, the Bearer header as TorchServe matches it, the /token regeneration seen by every
worker reading the same file, and failing closed when the file is missing or damaged."""

from __future__ import annotations

import json
import re
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from inferwire.errors import SettingsError
from inferwire.torchserve import tokens as T
from inferwire.torchserve.tokens import Api, KeyFile, Keys

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def bearer(key: str) -> str:
    return f"Bearer {key}"


def test_the_key_file_has_torchserves_layout_and_is_owner_only(tmp_path: Path) -> None:
    before = datetime.now(timezone.utc)
    key_file = KeyFile.create(str(tmp_path), expiration_min=30)
    path = tmp_path / "key_file.json"
    assert key_file.path == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert list(data) == ["management", "inference", "API"]
    assert set(data["management"]) == {"key", "expiration time"}
    assert set(data["inference"]) == {"key", "expiration time"}
    assert set(data["API"]) == {"key"}
    keys = {data[k]["key"] for k in data}
    assert len(keys) == 3 and all(re.fullmatch(r"[A-Za-z0-9_-]{22}", k) for k in keys)
    for api in ("management", "inference"):
        stamp = data[api]["expiration time"]
        assert STAMP.fullmatch(stamp), stamp
        expires = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert timedelta(minutes=30) <= expires - before < timedelta(minutes=31)
    # No temporary file is left beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key_file.json"]


def test_each_key_opens_its_own_api_only(tmp_path: Path) -> None:
    key_file = KeyFile.create(str(tmp_path))
    keys = key_file.keys()
    assert keys is not None
    own = {Api.INFERENCE: keys.inference, Api.MANAGEMENT: keys.management, Api.TOKEN: keys.api}
    for api, key in own.items():
        for other in Api:
            assert key_file.check(bearer(key), other) is (other is api), (api, other)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "bearer {key}",
        "Basic {key}",
        "{key}",
        "Bearer {key} x",
        "Bearer {key}x",
        " Bearer {key}",
    ],
)
def test_a_missing_or_malformed_header_fails(tmp_path: Path, header: str | None) -> None:
    key_file = KeyFile.create(str(tmp_path))
    keys = key_file.keys()
    assert keys is not None
    value = header.format(key=keys.inference) if header is not None else None
    assert key_file.check(value, Api.INFERENCE) is False


def test_blanks_after_bearer_are_allowed_as_torchserve_allows_them(tmp_path: Path) -> None:
    key_file = KeyFile.create(str(tmp_path))
    keys = key_file.keys()
    assert keys is not None
    assert key_file.check(f"Bearer \t  {keys.inference}", Api.INFERENCE)
    assert T.bearer(f"Bearer  {keys.inference}") == keys.inference
    assert T.bearer("Bearer") == ""


def test_keys_expire_but_the_api_key_does_not() -> None:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    keys = Keys.new(expiration_min=60, now=now)
    later = now + timedelta(minutes=59, seconds=59)
    assert keys.valid(keys.inference, Api.INFERENCE, later)
    assert keys.valid(keys.management, Api.MANAGEMENT, later)
    at_expiry = now + timedelta(minutes=60)
    assert not keys.valid(keys.inference, Api.INFERENCE, at_expiry)
    assert not keys.valid(keys.management, Api.MANAGEMENT, at_expiry)
    assert keys.valid(keys.api, Api.TOKEN, now + timedelta(days=365))
    assert not keys.valid("", Api.TOKEN, now)


def test_the_token_api_replaces_one_key_and_every_worker_sees_it(tmp_path: Path) -> None:
    worker1 = KeyFile.create(str(tmp_path))
    worker2 = KeyFile(worker1.path)  # another process reading the same file
    old = worker1.keys()
    assert old is not None and worker2.check(bearer(old.inference), Api.INFERENCE)

    status, body = worker1.token_api(bearer(old.api), "inference")
    assert (status, body) == (200, "")
    new = T.read(worker1.path)
    assert new.inference != old.inference and new.inference_expires >= old.inference_expires
    assert (new.management, new.management_expires, new.api) == (
        old.management,
        old.management_expires,
        old.api,
    )
    assert stat.S_IMODE(Path(worker1.path).stat().st_mode) == 0o600
    for worker in (worker1, worker2):
        assert not worker.check(bearer(old.inference), Api.INFERENCE)
        assert worker.check(bearer(new.inference), Api.INFERENCE)

    status, _ = worker2.token_api(bearer(old.api), "management")
    assert status == 200
    assert worker1.check(bearer(T.read(worker1.path).management), Api.MANAGEMENT)
    assert not worker1.check(bearer(old.management), Api.MANAGEMENT)


@pytest.mark.parametrize(
    ("use", "kind"),
    [
        ("api", "INFERENCE"),
        ("api", "wrong"),
        ("api", None),
        ("management", "inference"),
        ("inference", "inference"),
        (None, "inference"),
    ],
)
def test_the_token_api_refuses_as_torchserve(
    tmp_path: Path, use: str | None, kind: str | None
) -> None:
    key_file = KeyFile.create(str(tmp_path))
    before = Path(key_file.path).read_text()
    keys = key_file.keys()
    assert keys is not None
    header = bearer(getattr(keys, use)) if use else None
    assert key_file.token_api(header, kind) == (
        400,
        {"code": 400, "type": "InvalidKeyException", "message": T.TOKEN_API_FAILED},
    )
    assert Path(key_file.path).read_text() == before


def test_a_missing_or_damaged_key_file_fails_closed(tmp_path: Path) -> None:
    key_file = KeyFile.create(str(tmp_path))
    keys = key_file.keys()
    assert keys is not None
    path = Path(key_file.path)
    path.write_text("{not json")
    assert not key_file.check(bearer(keys.inference), Api.INFERENCE)
    path.write_text(json.dumps({"inference": {"key": keys.inference}}))
    assert not key_file.check(bearer(keys.inference), Api.INFERENCE)
    key_file.remove()
    assert not path.exists()
    assert not key_file.check(bearer(keys.inference), Api.INFERENCE)
    key_file.remove()  # twice is fine
    with pytest.raises(SettingsError, match="missing or damaged"):
        key_file.regenerate(Api.INFERENCE)


def test_a_file_torchserve_wrote_is_read() -> None:
    """TorchServe's own layout, with Java's Instant spelling (any number of digits)."""
    data = {
        "management": {"key": "B-E5KSRM", "expiration time": "2024-02-16T21:12:24.801167Z"},
        "inference": {"key": "gNRuA7dS", "expiration time": "2024-02-16T21:12:24Z"},
        "API": {"key": "yv9uQajP"},
    }
    keys = Keys.from_json(data, "key_file.json")
    assert keys.management_expires == datetime(2024, 2, 16, 21, 12, 24, 801167, timezone.utc)
    assert keys.inference_expires == datetime(2024, 2, 16, 21, 12, 24, tzinfo=timezone.utc)
    assert Keys.from_json(keys.to_json(), "f") == keys
    early = datetime(2024, 2, 16, 21, 0, tzinfo=timezone.utc)
    assert keys.valid("gNRuA7dS", Api.INFERENCE, early)
    with pytest.raises(SettingsError, match="not an expiration time"):
        Keys.from_json({**data, "inference": {"key": "k", "expiration time": "soon"}}, "f")


def test_scopes_name_inferwires_own() -> None:
    from inferwire.authfiles import SCOPES

    assert set(T.SCOPES.values()) <= set(SCOPES)
