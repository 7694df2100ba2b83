"""``torchserve``'s command line read as TorchServe reads it (inferwire.torchserve.cli),
in-process (the ``inferwire torchserve`` dispatch comes with the dialect): the options and
their spellings, TorchServe's precedence (TS_* variables under enable_envvars_config over
the command line over config.properties over its defaults), the inferwire settings each key
maps to, the models to load, the switches, the warnings and the refusals; and the pid file:
--stop stopping a real process, --start refusing a second server, a background start
recording its child. (The file is not test_cli.py: tests/server/config has one, and
pytest's default import mode takes one module per basename.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inferwire.errors import SettingsError
from inferwire.settings import Settings
from inferwire.torchserve import cli
from inferwire.torchserve.cli import StartupModel, TorchServeConfig, UsageError
from inferwire.torchserve.properties import Listener


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working folder (where TorchServe looks for config.properties and writes
    key_file.json) holding an empty model store; no TS_* variables from outside."""
    for var in list(os.environ):
        if var.startswith("TS_"):
            monkeypatch.delenv(var)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store").mkdir()
    yield tmp_path / "store"


def props(folder: Path, text: str, name: str = "config.properties") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def parse(argv: list[str], env: dict[str, str] | None = None) -> TorchServeConfig:
    return cli.parse(argv, environ=env or {})


# --- defaults and settings ---------------------------------------------------------------------


def test_torchserves_defaults(store: Path) -> None:
    c = parse(["--start", "--model-store", str(store)])
    assert c.inference == Listener("127.0.0.1", 8080)
    assert c.management == Listener("127.0.0.1", 8081)
    assert c.metrics == Listener("127.0.0.1", 8082)
    assert c.grpc_inference == Listener("127.0.0.1", 7070)
    assert c.grpc_management == Listener("127.0.0.1", 7071)
    workers = os.cpu_count() or 1
    assert c.settings == {
        "host": "127.0.0.1",
        "http_port": 8080,
        "grpc_port": 7070,
        "metrics_port": 8082,
        "metrics_endpoint": "/metrics",
        "max_body_bytes": 6553500,
        "max_body_bytes_in_flight": 256 * 1024 * 1024,
        "max_queue": 100,
        "timeout": 120.0,
        "stuck_after": 120.0,
        "workers": workers,
    }
    assert (c.token_auth, c.enable_model_api, c.metrics_mode) == (True, False, "log")
    assert c.key_file == str(store.parent / "key_file.json")
    assert c.token_expiration_min == 60.0
    assert c.allowed_urls == ("file://.*|http(s)?://.*",)
    assert (c.load_all, c.models, c.model_config) == (False, (), {})
    assert (c.max_response_size, c.unregister_model_timeout) == (6553500, 120)
    assert c.default_workers_per_model == workers
    assert c.model_store == str(store)
    assert c.config_file is None and c.foreground is False and c.warnings == ()
    # The settings are inferwire's and valid.
    Settings(**c.settings)


def test_keys_map_to_inferwire_settings(store: Path) -> None:
    path = props(
        store.parent,
        "inference_address=http://0.0.0.0:9080\n"
        "metrics_address=http://0.0.0.0:9082\n"
        "grpc_inference_address=0.0.0.0\n"
        "grpc_inference_port=9070\n"
        "max_request_size=300000000\n"
        "job_queue_size=7\n"
        "default_response_timeout=30\n"
        "default_workers_per_model=3\n"
        "number_of_netty_threads=4\n"
        "cors_allowed_origin=https://a.example\n"
        "cors_allowed_methods=GET, POST, OPTIONS\n"
        "cors_allowed_headers=X-Custom-Header\n",
    )
    c = parse(["--model-store", str(store), "--ts-config", str(path)])
    assert c.settings == {
        "host": "0.0.0.0",
        "http_port": 9080,
        "grpc_port": 9070,
        "metrics_port": 9082,
        "metrics_endpoint": "/metrics",
        "max_body_bytes": 300000000,
        "max_body_bytes_in_flight": 300000000,  # raised to hold one such body
        "max_queue": 7,
        "timeout": 30.0,
        "stuck_after": 30.0,
        "workers": 3,
        "io_threads": 4,
        "cors_allow_origins": "https://a.example",
        "cors_allow_methods": "GET,POST,OPTIONS",
        "cors_allow_headers": "X-Custom-Header",
    }
    Settings(**c.settings)
    # The management listeners keep their default host, which inferwire does not use.
    assert [w.split(":")[0] for w in c.warnings] == [
        "management_address",
        "grpc_management_address",
    ]
    assert "inferwire listens on one address, inference_address's (0.0.0.0)" in c.warnings[0]


def test_one_port_for_inference_and_management_as_kserve_sets_it(store: Path) -> None:
    """KServe's TorchServe runtime's file: both APIs on 8085, a snapshot naming the model,
    keys TorchServe ignores or that change nothing here."""
    snapshot = {
        "name": "startup.cfg",
        "modelCount": 1,
        "models": {
            "mnist": {
                "1.0": {
                    "defaultVersion": True,
                    "marName": "mnist.mar",
                    "minWorkers": 1,
                    "maxWorkers": 5,
                    "batchSize": 5,
                    "maxBatchDelay": 200,
                    "responseTimeout": 60,
                }
            }
        },
    }
    props(
        store.parent,
        "inference_address=http://0.0.0.0:8085\n"
        "management_address=http://0.0.0.0:8085\n"
        "metrics_address=http://0.0.0.0:8082\n"
        "grpc_inference_address=0.0.0.0\n"
        "grpc_management_address=0.0.0.0\n"
        "enable_envvars_config=true\n"
        "install_py_dep_per_model=true\n"
        "enable_metrics_api=true\n"
        "metrics_format=prometheus\n"
        "NUM_WORKERS=1\n"
        "load_models=all\n"
        f"model_store={store}\n"
        f"model_snapshot={json.dumps(snapshot)}\n",
    )
    c = parse(["--start"])
    assert c.inference == c.management == Listener("0.0.0.0", 8085)
    assert c.settings["http_port"] == 8085
    assert c.load_all is False
    assert c.models == (
        StartupModel("mnist.mar", "mnist", "mnist", "1.0", snapshot["models"]["mnist"]["1.0"]),
    )
    assert len(c.warnings) == 3
    assert "install_py_dep_per_model (" in c.warnings[0]
    assert "config.properties line 10: NUM_WORKERS is not a key of TorchServe 0.12" in c.warnings[1]
    assert "load_models (" in c.warnings[2] and "model_snapshot lists the models" in c.warnings[2]


def test_metrics_off_and_debug(store: Path) -> None:
    props(store.parent, f"model_store={store}\nenable_metrics_api=false\ndebug=true\n")
    c = parse([])
    assert c.metrics is None
    assert (c.settings["metrics_port"], c.settings["workers"]) == (0, 1)
    assert c.settings["log_level"] == "debug"


# --- precedence ----------------------------------------------------------------------------------


def test_the_command_line_goes_over_the_file(store: Path) -> None:
    other = store.parent / "other"
    other.mkdir()
    props(
        store.parent,
        f"model_store={other}\nload_models=a.mar\ndisable_token_authorization=false\n"
        "enable_model_api=false\n",
    )
    c = parse(["--model-store", str(store), "--models", "b=b.mar", "--dt", "--enable-model-api"])
    assert c.model_store == str(store)
    assert c.models == (StartupModel("b.mar", "b", "b"),)
    assert (c.token_auth, c.enable_model_api, c.key_file) == (False, True, "")
    assert c.properties["model_store"].where == "--model-store"
    # Without options, the file's values.
    c = parse([])
    assert (c.model_store, c.models[0].url, c.token_auth) == (str(other), "a.mar", True)


def test_variables_go_over_the_command_line_only_when_enabled(store: Path) -> None:
    env = {
        "TS_LOAD_MODELS": "env.mar",
        "TS_JOB_QUEUE_SIZE": "9",
        "TS_DISABLE_TOKEN_AUTHORIZATION": "false",
        "TS_INFERENCE_ADDRESS": "http://0.0.0.0:18080",
    }
    argv = ["--model-store", str(store), "--models", "cli.mar", "--disable-token-auth"]
    props(store.parent, "job_queue_size=5\n")
    c = parse(argv, env)
    assert ([m.url for m in c.models], c.settings["max_queue"], c.token_auth) == (
        ["cli.mar"],
        5,
        False,
    )
    assert c.inference.port == 8080
    # TorchServe's ConfigManager applies the variables last: they win over the options.
    props(store.parent, "job_queue_size=5\nenable_envvars_config=true\n")
    c = parse(argv, env)
    assert ([m.url for m in c.models], c.settings["max_queue"], c.token_auth) == (
        ["env.mar"],
        9,
        True,
    )
    assert c.inference == Listener("0.0.0.0", 18080)
    assert c.properties["job_queue_size"].where == "TS_JOB_QUEUE_SIZE"


def test_which_config_file_is_read(store: Path) -> None:
    a = props(store.parent, "job_queue_size=1\n", "a.properties")
    b = props(store.parent, "job_queue_size=2\n", "b.properties")
    props(store.parent, "job_queue_size=3\n")
    base = ["--model-store", str(store)]
    assert parse(base).settings["max_queue"] == 3  # ./config.properties
    assert parse([*base, "--ts-config", str(a)]).settings["max_queue"] == 1
    c = parse([*base, "--ts-config", str(a)], {"TS_CONFIG_FILE": str(b)})
    assert (c.settings["max_queue"], c.config_file) == (2, str(b))
    with pytest.raises(SettingsError, match=r"^--ts-config file not found: nowhere\.properties$"):
        parse([*base, "--ts-config", "nowhere.properties"])


def test_dollar_references_in_the_file(store: Path) -> None:
    props(store.parent, "model_store=$$STORE_DIR$$\n")
    assert parse([], {"STORE_DIR": str(store)}).model_store == str(store)
    with pytest.raises(SettingsError, match=r"config.properties line 1: \$\$STORE_DIR\$\$"):
        parse([])


# --- models ----------------------------------------------------------------------------------------


def test_models_as_torchserve_takes_them(store: Path) -> None:
    c = parse(
        [
            "--model-store",
            str(store),
            "--models",
            "squeezenet1_1.mar",
            "res=resnet-18.mar,, dense = densenet161.mar",
            "https://torchserve.example/mar_files/my-model.mar",
            "folder_model",
        ]
    )
    assert c.models == (
        StartupModel("squeezenet1_1.mar", None, "squeezenet1_1"),
        StartupModel("resnet-18.mar", "res", "resnet_18"),
        StartupModel("densenet161.mar", "dense", "densenet161"),
        StartupModel("https://torchserve.example/mar_files/my-model.mar", None, "my_model"),
        StartupModel("folder_model", None, "folder_model"),
    )
    for spelling in ("all", "ALL", "All"):
        c = parse(["--model-store", str(store), "--models", spelling])
        assert (c.load_all, c.models) == (True, ())


def test_model_settings_json(store: Path) -> None:
    props(
        store.parent,
        f"model_store={store}\n"
        'models={\\\n  "noop": {\\\n    "1.0": {\\\n        "defaultVersion": true,\\\n'
        '        "marName": "noop.mar",\\\n        "batchSize": 4\\\n    }\\\n  }\\\n}\n',
    )
    c = parse([])
    assert c.model_config == {
        "noop": {"1.0": {"defaultVersion": True, "marName": "noop.mar", "batchSize": 4}}
    }
    props(store.parent, f'model_store={store}\nmodels={{"noop": 1}}\n')
    with pytest.raises(SettingsError, match=r"models \(.*line 2\): 'noop' must map each version"):
        parse([])
    props(store.parent, f"model_store={store}\nmodels={{oops\n")
    with pytest.raises(SettingsError, match=r"models \(.*line 2\): not JSON"):
        parse([])


def test_a_model_store_is_required_and_must_exist(store: Path) -> None:
    with pytest.raises(SettingsError, match=r"^Missing mandatory parameter --model-store$"):
        parse(["--start"])
    with pytest.raises(SettingsError, match=r"^--model-store directory not found: nope$"):
        parse(["--model-store", "nope"])
    # A relative store is the working folder's.
    assert parse(["--model-store", "store"]).model_store == str(store)


# --- TLS ---------------------------------------------------------------------------------------------


def test_https_needs_pem_files_and_turns_tls_on_for_every_port(store: Path) -> None:
    (store.parent / "cert.pem").write_text("x")
    (store.parent / "key.pem").write_text("x")
    text = "inference_address=https://127.0.0.1:8443\nmanagement_address=https://127.0.0.1:8444\n"
    props(store.parent, f"model_store={store}\n{text}")
    with pytest.raises(
        SettingsError, match="inference_address asks for TLS: give certificate_file"
    ):
        parse([])
    props(
        store.parent,
        f"model_store={store}\n{text}certificate_file=cert.pem\nprivate_key_file=key.pem\n",
    )
    c = parse([])
    assert c.inference == Listener("127.0.0.1", 8443, True)
    assert (c.settings["tls_cert"], c.settings["tls_key"]) == ("cert.pem", "key.pem")
    assert c.warnings == (
        "metrics_address, grpc_inference_port, grpc_management_port: served over TLS as well: "
        "inferwire serves TLS on every port when one asks for it (inference_address, "
        "management_address)",
    )


def test_pem_files_without_https_are_not_used(store: Path) -> None:
    props(store.parent, f"model_store={store}\ncertificate_file=c.pem\nprivate_key_file=k.pem\n")
    c = parse([])
    assert "tls_cert" not in c.settings
    assert c.warnings == (
        "certificate_file, private_key_file: not used: no address is https and "
        "enable_grpc_ssl is not true (as TorchServe)",
    )


# --- warnings and refusals -----------------------------------------------------------------------


def test_keys_that_change_nothing_warn_once_each(store: Path) -> None:
    props(
        store.parent,
        f"model_store={store}\nvmargs=-Xmx4g\nnetty_client_threads=2\nasync_logging=false\n"
        "install_py_dep_per_model=false\n",
    )
    file = store.parent / "config.properties"  # the working folder's: named in full
    assert parse([]).warnings == (
        f"vmargs ({file} line 2): no JVM",
        f"netty_client_threads ({file} line 3): handlers run in the server's "
        "process, with no frontend-to-worker sockets",
    )


def test_options_that_change_nothing_warn(store: Path) -> None:
    c = parse(["--model-store", str(store), "--log-config", "log4j2.xml", "--ppath", "plugins"])
    assert c.warnings == (
        "--log-config: a log4j2 file; inferwire logs to stderr",
        "--plugins-path: Java plugins are not loaded",
    )


@pytest.mark.parametrize(
    ("line", "match"),
    [
        (
            "keystore=keystore.p12",
            r"keystore \(.*config.properties line 2\): a Java keystore; convert",
        ),
        ("blacklist_env_vars=AWS_.*", r"blacklist_env_vars \(.*\): handlers run in inferwire's"),
        ("metrics_mode=statsd", r"metrics_mode \(.*\): 'statsd' is not log, prometheus or legacy"),
        ("allowed_urls=https://(.*", r"allowed_urls \(.*\): 'https://\(\.\*' is not a regular"),
        ("enable_model_api=yes", r"enable_model_api \(.*\): 'yes' is not true or false"),
        ("inference_address=unix:/tmp/s", "not unix sockets"),
        ("token_expiration_min=0", r"token_expiration_min \(.*\): must be above 0"),
    ],
)
def test_refusals_name_the_key_and_line(store: Path, line: str, match: str) -> None:
    props(store.parent, f"model_store={store}\n{line}\n")
    with pytest.raises(SettingsError, match=match):
        parse([])


def test_opening_the_model_api_without_auth_is_a_logged_opt_in(store: Path) -> None:
    c = parse(["--model-store", str(store), "--enable-model-api", "--disable-token-auth"])
    assert "anyone who can reach the management port can register archives" in c.warnings[0]
    assert "models may be registered from any URL or file" in c.warnings[1]
    props(store.parent, "allowed_urls=https://s3.amazonaws.com/.*,file:///models/.*\n")
    c = parse(["--model-store", str(store), "--enable-model-api"])
    assert c.allowed_urls == ("https://s3.amazonaws.com/.*", "file:///models/.*")
    assert c.warnings == ()


# --- the command line itself -----------------------------------------------------------------------


def test_spellings_and_abbreviations_as_torchserves_argparse(store: Path) -> None:
    a = cli.parse_args(["--ncs", "--dt", "--model-st", "s", "--models", "a.mar", "b.mar"])
    assert (a["no_config_snapshots"], a["disable_token_auth"], a["model_store"]) == (
        True,
        True,
        "s",
    )
    assert a["models"] == ["a.mar", "b.mar"]
    assert cli.parse_args(["--no-config-snapshots", "--ppath", "p"])["plugins_path"] == "p"
    with pytest.raises(UsageError, match="not allowed with argument"):
        cli.parse_args(["--start", "--stop"])
    with pytest.raises(UsageError, match="ambiguous option: --model"):
        cli.parse_args(["--model", "x"])


def test_an_unknown_option_exits_2_naming_it(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--start", "--model-store", str(store), "--workers", "4"], environ={}) == 2
    assert "unrecognized arguments: --workers 4" in capsys.readouterr().err
    assert cli.main(["--start", "--stop"], environ={}) == 2


def test_a_configuration_error_exits_1(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pid = str(store.parent / "pid")
    assert cli.main(["--start"], environ={}, pid_path=pid) == 1
    assert "Missing mandatory parameter --model-store" in capsys.readouterr().err


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("TorchServe Version is 0.12.0 (inferwire ")
    assert cli.main(["-h"]) == 0
    out = capsys.readouterr().out
    for option in cli.OPTIONS.values():
        assert ", ".join(option.names) in out


def test_the_options_table() -> None:
    table = cli.markdown_table()
    assert table.count("\n") == len(cli.OPTIONS) + 2
    assert "| `--disable-token-auth`, `--dt` | **honoured**:" in table
    for option in cli.OPTIONS.values():
        assert option.how.partition(": ")[0] in ("honoured", "accepted")


# --- serving in the foreground: the pid file and the key file ----------------------------------


def test_a_foreground_start_serves_with_validated_settings(store: Path) -> None:
    pid = store.parent / "pid"
    seen: dict[str, Any] = {}

    def serve(config: TorchServeConfig, settings: Any) -> int:
        key_file = store.parent / "key_file.json"
        seen["pid"] = pid.read_text()
        seen["keys"] = json.loads(key_file.read_text())
        seen["mode"] = oct(key_file.stat().st_mode & 0o777)
        seen["settings"] = settings
        seen["config"] = config
        return 0

    argv = ["--start", "--foreground", "--model-store", str(store), "--models", "all"]
    assert cli.main(argv, environ={}, pid_path=str(pid), serve=serve) == 0
    assert seen["pid"] == str(os.getpid())
    assert list(seen["keys"]) == ["management", "inference", "API"]
    assert seen["mode"] == "0o600"
    assert isinstance(seen["settings"], Settings) and seen["settings"].http_port == 8080
    assert seen["config"].load_all
    # Both files go when the server ends.
    assert not pid.exists() and not (store.parent / "key_file.json").exists()

    # Without token authorization, no key file.
    def no_keys(config: TorchServeConfig, settings: Any) -> int:
        assert not (store.parent / "key_file.json").exists()
        return 0

    assert cli.main([*argv, "--dt"], environ={}, pid_path=str(pid), serve=no_keys) == 0


# --- the pid file: --stop and --start ------------------------------------------------------------


def sleeper(*marker: str) -> subprocess.Popen[bytes]:
    """A sleeping python; with ``cli.MODULE`` among its arguments it is, to the pid file's
    reader, a server started by ``inferwire torchserve``."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *marker])
    deadline = time.monotonic() + 10
    while cli._cmdline(proc.pid) != proc.args and time.monotonic() < deadline:
        time.sleep(0.01)  # its arguments, as /proc shows them
    assert cli._cmdline(proc.pid) == proc.args
    return proc


def test_stop_terminates_the_server_the_pid_file_names(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = store.parent / "pid"
    key_file = store.parent / "key_file.json"
    key_file.write_text("{}")
    server = sleeper(cli.MODULE)
    try:
        pid.write_text(str(server.pid))
        assert cli.main(["--stop", "--foreground"], pid_path=str(pid)) == 0  # waits for it
        assert server.wait(timeout=10) == -signal.SIGTERM
        assert not pid.exists() and not key_file.exists()
        assert capsys.readouterr().out == ""
        # Nothing running now.
        assert cli.main(["--stop"], pid_path=str(pid)) == 0
        assert capsys.readouterr().out == "TorchServe is not currently running.\n"
    finally:
        server.kill()
        server.wait()


def test_stop_without_waiting_says_it_stopped(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = store.parent / "pid"
    server = sleeper("-m", "inferwire", "torchserve")  # as `python -m inferwire torchserve`
    try:
        pid.write_text(str(server.pid))
        assert cli.stop(str(pid)) == 0
        assert capsys.readouterr().out == "TorchServe has stopped.\n"
        assert server.wait(timeout=10) == -signal.SIGTERM
    finally:
        server.kill()
        server.wait()


def test_stop_leaves_a_process_that_is_not_a_server_alone(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = store.parent / "pid"
    other = sleeper()
    try:
        pid.write_text(str(other.pid))
        assert cli.stop(str(pid)) == 0
        assert capsys.readouterr().out == "TorchServe is not currently running.\n"
        time.sleep(0.2)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_pid_file_naming_no_process_is_removed(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = sleeper(cli.MODULE)
    gone.kill()
    gone.wait()
    pid = store.parent / "pid"
    pid.write_text(str(gone.pid))
    assert cli.stop(str(pid)) == 0
    assert (
        capsys.readouterr().out
        == "Removing orphan pid file.\nTorchServe is not currently running.\n"
    )
    assert not pid.exists()


def test_start_refuses_while_a_server_runs(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pid = store.parent / "pid"
    server = sleeper(cli.MODULE)
    try:
        pid.write_text(str(server.pid))
        argv = ["--start", "--foreground", "--model-store", str(store)]
        assert cli.main(argv, environ={}, pid_path=str(pid), serve=lambda c, s: 0) == 1
        assert "TorchServe is already running" in capsys.readouterr().err
        assert pid.read_text() == str(server.pid)
    finally:
        server.kill()
        server.wait()


def test_a_background_start_records_its_child(
    store: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The child is this module run in the foreground with the same options (here
    --version, so that it ends at once) and the pid file names it."""
    pid = store.parent / "pid"
    child = cli.background(["--version"], str(pid))
    assert child.wait(timeout=60) == 0
    assert pid.read_text() == str(child.pid)
    assert child.args[1:4] == ["-m", cli.MODULE, "--version"] and child.args[-1] == "--foreground"
    assert "TorchServe Version is 0.12.0" in capfd.readouterr().out
