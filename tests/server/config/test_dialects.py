"""The dialects a setting can name are the ones both registries hold: the Rust core's
(``dialect::DIALECTS``: what the wire says) and Python's (``dialects.DIALECTS``: the
files, variables and metrics a dialect reads and adds)."""

from __future__ import annotations

import typing

import pytest
from inferwire import _core, dialects
from inferwire.settings import Settings


def choices() -> tuple[str, ...]:
    return typing.get_args(Settings.model_fields["v2_dialect"].annotation)


def test_every_choice_is_in_both_registries() -> None:
    assert set(choices()) == set(dialects.DIALECTS)
    for name in choices():
        assert dialects.chosen(name).name == name
        assert isinstance(Settings(v2_dialect=name).to_core(), _core.CoreConfig)


def test_a_name_neither_registry_has_is_refused_by_both() -> None:
    with pytest.raises(ValueError, match="no dialect 'triton-ish'"):
        dialects.chosen("triton-ish")
    s = Settings()
    kwargs = s.model_dump()
    assert kwargs["v2_dialect"] == "inferwire"
    core = Settings.model_construct(**{**kwargs, "v2_dialect": "triton-ish"})
    with pytest.raises(
        ValueError, match=r'v2_dialect: "triton-ish" is not one of inferwire, mlserver'
    ):
        core.to_core()
