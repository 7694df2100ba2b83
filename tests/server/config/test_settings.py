"""The settings schema: every field reaches the command line, the environment, the docs
and the Rust core, and a misspelt key fails loudly wherever it is written."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from inferwire import _core
from inferwire.cli import _serve_parser
from inferwire.errors import SettingsError
from inferwire.repository import ModelSettings, read_model_settings
from inferwire.settings import (
    PYTHON_ONLY,
    ModelServing,
    Settings,
    env_name,
    flag_name,
    from_sources,
    markdown_table,
)


def serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    _serve_parser(sub)
    found: argparse.ArgumentParser = sub.choices["serve"]
    return found


def test_every_setting_is_a_flag_a_variable_and_a_docs_row() -> None:
    parser = serve_parser()
    flags = {s for a in parser._actions for s in a.option_strings}
    doc = (ROOT / "docs/reference/configuration.md").read_text()
    table = markdown_table()
    for name, field in Settings.model_fields.items():
        assert flag_name(name) in flags, name
        assert f"`{env_name(name)}`" in table, name
        assert f"| `{flag_name(name)}` |" in doc, name
        # --help shows the default from the schema, and the variables.
        action = next(a for a in parser._actions if flag_name(name) in a.option_strings)
        assert action.help and "default: " in action.help and env_name(name) in action.help
        assert field.description and field.description in action.help


def test_every_setting_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each variable set to a value of the field's type that differs from the default
    # (and passes the checks together with the others).
    values = {
        "http_port": "9100",
        "model_name": "m",
        "max_batch_size": "4",
        "max_batch_delay": "0.5",
        "allow_unauthenticated_repository": "yes",
        "supervisor": "off",
        "log_level": "DEBUG",
        "timeout": "2.5",
    }
    for name, value in values.items():
        monkeypatch.setenv(env_name(name), value)
    s = from_sources({})
    assert (s.http_port, s.model_name, s.max_batch_size, s.max_batch_delay) == (9100, "m", 4, 0.5)
    assert s.allow_unauthenticated_repository is True
    assert (s.supervisor, s.log_level, s.timeout) == ("off", "debug", 2.5)


def test_precedence_flags_env_seldon_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("model-name: file\nmodel_image: file\nhttp_port: 9101\ngrpc_port: 9102\n")
    monkeypatch.setenv("PREDICTIVE_UNIT_ID", "seldon")
    monkeypatch.setenv("PREDICTIVE_UNIT_IMAGE", "seldon")
    monkeypatch.setenv("PREDICTIVE_UNIT_HTTP_SERVICE_PORT", "9103")
    monkeypatch.setenv("INFERWIRE_MODEL_NAME", "env")
    monkeypatch.setenv("INFERWIRE_MODEL_IMAGE", "")  # empty: not set
    s = from_sources({"model_name": "flag", "host": None}, settings_file=str(path))
    assert (s.model_name, s.model_image, s.http_port, s.grpc_port) == (
        "flag",
        "seldon",
        9103,
        9102,
    )
    assert s.host == "0.0.0.0"
    # Settings(...) in code reads no environment.
    assert Settings().model_name == ""


@pytest.mark.parametrize(
    ("flags", "env", "message"),
    [
        ({"workers": "many"}, {}, "--workers: 'many' is not a valid int"),
        ({}, {"INFERWIRE_TIMEOUT": "soon"}, "INFERWIRE_TIMEOUT: 'soon' is not a valid float"),
        ({}, {"PREDICTIVE_UNIT_GRPC_SERVICE_PORT": "x"}, "PREDICTIVE_UNIT_GRPC_SERVICE_PORT"),
        ({"allow_unauthenticated_repository": "flase"}, {}, "'flase' is not true or false"),
        ({"access_log": "xml"}, {}, "access_log: 'xml' is not off, text or json"),
    ],
)
def test_messages_name_where_a_bad_value_came_from(
    monkeypatch: pytest.MonkeyPatch, flags: dict[str, Any], env: dict[str, str], message: str
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(SettingsError) as e:
        from_sources(flags)
    assert message in str(e.value)


def test_a_misspelt_key_in_a_settings_file_names_it_and_its_close_match(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"max_batch_sise": 4}))
    with pytest.raises(SettingsError) as e:
        from_sources({}, settings_file=str(path))
    assert "unknown setting 'max_batch_sise'; did you mean 'max_batch_size'?" in str(e.value)
    assert str(path) in str(e.value)


def test_a_misspelt_key_in_a_model_settings_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "model-settings.yaml").write_text("implementation: model.py:M\nmodel_thread: 2\n")
    with pytest.raises(SettingsError) as e:
        read_model_settings(tmp_path)
    assert "unknown setting 'model_thread'; did you mean 'model_threads'?" in str(e.value)
    assert "model-settings.yaml" in str(e.value)


def test_model_settings_default_to_the_server_settings(tmp_path: Path) -> None:
    (tmp_path / "model-settings.yaml").write_text("implementation: model.py:M\nversion: 2\n")
    s = read_model_settings(tmp_path)
    assert (s.name, s.version) == (tmp_path.name, "2")
    for name in ModelServing.model_fields:
        assert getattr(s, name) == Settings.model_fields[name].default, name
    (tmp_path / "model-settings.yaml").write_text("implementation: model.py:M\nruntime: fast\n")
    with pytest.raises(SettingsError, match="runtime: 'fast' is not auto, native or python"):
        read_model_settings(tmp_path)


def core_kwargs() -> dict[str, Any]:
    d = Settings().model_dump(exclude=PYTHON_ONLY)
    d.update(Settings().runner(), log_level="info", supervised=True, auth_key="k" * 32)
    d.update(repository_sync_dir="", shared_memory_dir="")
    return d


def test_the_core_config_refuses_a_misspelt_or_missing_key() -> None:
    assert isinstance(Settings().to_core(), _core.CoreConfig)
    _core.CoreConfig(**core_kwargs())
    misspelt = core_kwargs()
    misspelt["max_batch_sise"] = misspelt.pop("max_batch_size")
    with pytest.raises(TypeError, match="max_batch_sise"):
        _core.CoreConfig(**misspelt)
    missing = core_kwargs()
    del missing["timeout"]
    with pytest.raises(TypeError, match="timeout"):
        _core.CoreConfig(**missing)
    spec = ModelSettings(name="m", implementation="m.py").to_core()
    assert isinstance(spec, _core.CoreModelSpec)
    with pytest.raises(TypeError, match="max_queu"):
        _core.CoreModelSpec(
            name="m",
            version="",
            model_threads=1,
            max_concurrency=1,
            max_queu=1,
            max_batch_size=1,
            max_batch_delay=0.0,
        )


def test_max_concurrency_zero_is_worked_out_in_one_place() -> None:
    assert Settings(model_threads=3, max_batch_size=4).runner()["max_concurrency"] == 12
    assert Settings(max_concurrency=5, max_batch_size=4).runner()["max_concurrency"] == 5


def test_a_client_only_program_does_not_import_the_schema() -> None:
    """``import inferwire`` and the client leave pydantic out; ``inferwire.Settings`` and
    ``inferwire.serve`` load it on first use."""
    import subprocess
    import sys

    code = (
        "import sys, inferwire\n"
        "inferwire.Client, inferwire.BadRequest, inferwire.local\n"
        "print('pydantic' in sys.modules, end=' ')\n"
        "inferwire.Settings\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout == "False True\n", out.stderr
