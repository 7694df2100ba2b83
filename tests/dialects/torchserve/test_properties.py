"""TorchServe's config.properties read as TorchServe's frontend reads it
(inferwire.torchserve.properties), in-process: Java's properties syntax (separators,
comments, continuations, escapes), errors naming the file and the line, the bounds, the
$$VAR$$ references, the TS_* variables under enable_envvars_config, the addresses, and the
KEYS table against the keys TorchServe 0.12's ConfigManager reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from inferwire.errors import SettingsError
from inferwire.torchserve import properties as P
from inferwire.torchserve.properties import Entry, Listener


def values(text: str) -> dict[str, str]:
    return {k: e.value for k, e in P.parse(text, "config.properties").items()}


# --- Java's syntax ---------------------------------------------------------------------------


def test_the_three_separators_and_the_blanks_around_them() -> None:
    assert values("a=1\nb:2\nc 3\nd = 4\ne : 5\nf\t\t6\ng = = 7\nh :=8\n") == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "5",
        "f": "6",
        "g": "= 7",  # one separator; the second = is the value's
        "h": "=8",
    }


def test_comments_blank_lines_and_a_key_alone() -> None:
    text = "# a comment\n   ! another\n\n   \t\nkey\nempty=\n  indented = yes\n"
    assert values(text) == {"key": "", "empty": "", "indented": "yes"}


def test_values_keep_their_inner_and_trailing_blanks() -> None:
    assert values("a = two  words  \n") == {"a": "two  words  "}
    # The typed readers strip them.
    props = P.parse("port = 8080  \nflag = true \n", "f")
    assert P.integer(props, "port", 0) == 8080
    assert P.boolean(props, "flag", False) is True


def test_a_backslash_at_the_end_continues_the_line_without_the_next_ones_indent() -> None:
    text = 'models={\\\n    "a": 1,\\\n    "b": 2\\\n}\nnext=x\n'
    assert values(text) == {"models": '{"a": 1,"b": 2}', "next": "x"}


def test_an_even_number_of_backslashes_does_not_continue() -> None:
    assert values("a=one\\\\\nb=two\n") == {"a": "one\\", "b": "two"}
    assert values("a=one\\\\\\\n  more\n") == {"a": "one\\more"}


def test_a_continued_line_is_not_a_comment_and_a_comment_does_not_continue() -> None:
    assert values("a=1\\\n# not a comment\n") == {"a": "1# not a comment"}
    assert values("# comment \\\nb=2\n") == {"b": "2"}


def test_a_backslash_on_the_last_line_is_dropped() -> None:
    assert values("a=end\\") == {"a": "end"}


def test_escapes_in_keys_and_values() -> None:
    text = "key\\ with\\:odd\\=chars = v\\tw\\nx\\u0041\\u00e9\\q\\\\\n"
    assert values(text) == {"key with:odd=chars": "v\tw\nxAéq\\"}


def test_crlf_and_cr_line_ends() -> None:
    assert values("a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_the_last_of_a_repeated_key_wins_with_its_line() -> None:
    props = P.parse("a=1\nb=2\na=3\n", "config.properties")
    assert props["a"] == Entry("3", "config.properties line 3")


def test_a_continued_entry_is_named_by_its_first_line() -> None:
    props = P.parse("x=1\nmodels={\\\n  }\\\n\ny=2\n", "c.properties")
    assert props["models"].where == "c.properties line 2"
    assert props["y"].where == "c.properties line 5"


@pytest.mark.parametrize("bad", ["\\u12", "\\u12G4", "\\uXYZW", "\\u"])
def test_a_malformed_unicode_escape_names_the_file_and_line(bad: str) -> None:
    with pytest.raises(SettingsError, match=r"^conf.properties line 3: \\u.* is not a \\uXXXX"):
        P.parse(f"a=1\n# fine\nb=x{bad}\n", "conf.properties")


# --- files: encodings, bounds, errors ----------------------------------------------------------


def test_a_file_is_read_as_utf8_else_latin1(tmp_path: Path) -> None:
    utf8 = tmp_path / "u.properties"
    utf8.write_bytes("model_store=/data/modèles\n".encode())
    assert P.read(str(utf8))["model_store"].value == "/data/modèles"
    latin1 = tmp_path / "l.properties"
    latin1.write_bytes("model_store=/data/mod\xe8les\n".encode("latin-1"))
    assert P.read(str(latin1))["model_store"].value == "/data/modèles"


def test_a_file_too_big_is_refused_naming_it(tmp_path: Path) -> None:
    big = tmp_path / "big.properties"
    big.write_text("# padding\n" * (P.MAX_FILE_BYTES // 10 + 1))
    with pytest.raises(SettingsError, match=rf"^{big}: \d+ bytes; .* at most {P.MAX_FILE_BYTES}"):
        P.read(str(big))


def test_too_many_keys_are_refused_naming_the_line() -> None:
    text = "".join(f"k{i}=v\n" for i in range(P.MAX_KEYS + 1))
    with pytest.raises(SettingsError, match=rf"^f line {P.MAX_KEYS + 1}: more than {P.MAX_KEYS}"):
        P.parse(text, "f")
    # Repeating a key does not count twice.
    assert len(P.parse("a=1\n" * (P.MAX_KEYS + 5), "f")) == 1


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"nope\.properties: No such file"):
        P.read(str(tmp_path / "nope.properties"))


# --- $$VAR$$ and TS_* variables ----------------------------------------------------------------


def test_dollar_references_are_replaced_always() -> None:
    props = P.parse("model_store=$$ROOT$$/store\nx=$$A1$$-$$B2$$\nlone=$$\n", "f")
    out = P.substitute(props, {"ROOT": "/srv", "A1": "a", "B2": "b"})
    assert out["model_store"] == Entry("/srv/store", "f line 1")
    assert out["x"].value == "a-b"
    assert out["lone"].value == "$$"


def test_a_reference_to_an_unset_variable_is_an_error_naming_the_line() -> None:
    props = P.parse("a=1\nmodel_store=$$NOT_SET_HERE$$\n", "c.properties")
    with pytest.raises(SettingsError, match=r"^c.properties line 2: \$\$NOT_SET_HERE\$\$"):
        P.substitute(props, {})


def test_variables_override_only_under_enable_envvars_config() -> None:
    env = {"TS_JOB_QUEUE_SIZE": "7", "TS_INFERENCE_ADDRESS": "http://0.0.0.0:9090"}
    off = P.parse("job_queue_size=5\n", "f")
    assert P.from_env(off, env) == off
    on = P.parse("enable_envvars_config=true\njob_queue_size=5\n", "f")
    out = P.from_env(on, env)
    assert out["job_queue_size"] == Entry("7", "TS_JOB_QUEUE_SIZE")
    assert out["inference_address"].value == "http://0.0.0.0:9090"
    # The switch itself is read from the file only.
    assert P.from_env(off, {**env, "TS_ENABLE_ENVVARS_CONFIG": "true"}) == off


def test_variable_names_follow_torchserves_constants() -> None:
    assert P.env_name("inference_address") == "TS_INFERENCE_ADDRESS"
    assert P.env_name("token_expiration_min") == "TS_TOKEN_EXPIRATION_TIME_MIN"
    assert P.env_name("ts_open_inference_protocol") == "TS_OPEN_INFERENCE_PROTOCOL"
    for file_only in ("models", "model_snapshot", "enable_envvars_config", "vmargs"):
        assert P.env_name(file_only) is None
    assert P.env_name("not_a_key") is None
    on = P.parse("enable_envvars_config=true\n", "f")
    out = P.from_env(on, {"TS_TOKEN_EXPIRATION_TIME_MIN": "5", "TS_MODELS": "{}"})
    assert out["token_expiration_min"].value == "5"
    assert "models" not in out


def test_allowed_urls_come_from_a_variable_only_when_the_file_allows_it() -> None:
    env = {"TS_ALLOWED_URLS": "https://.*"}
    on = P.parse("enable_envvars_config=true\nallowed_urls=file://.*\n", "f")
    assert P.from_env(on, env)["allowed_urls"].value == "file://.*"
    both = P.parse("enable_envvars_config=true\nuse_env_allowed_urls=true\n", "f")
    assert P.from_env(both, env)["allowed_urls"] == Entry("https://.*", "TS_ALLOWED_URLS")


# --- typed values and addresses ----------------------------------------------------------------


def test_a_misspelt_switch_is_an_error_naming_where() -> None:
    props = P.parse("a=1\ndisable_token_authorization=ture\n", "c.properties")
    with pytest.raises(SettingsError, match=r"disable_token_authorization \(c.properties line 2\)"):
        P.boolean(props, "disable_token_authorization", False)
    assert P.boolean(P.parse("x=TRUE\n", "f"), "x", False) is True


def test_a_bad_number_is_an_error_naming_where() -> None:
    props = P.parse("job_queue_size=lots\n", "c.properties")
    with pytest.raises(SettingsError, match=r"job_queue_size \(c.properties line 1\): 'lots'"):
        P.integer(props, "job_queue_size", 100)


@pytest.mark.parametrize(
    ("key", "value", "listener"),
    [
        ("inference_address", "http://127.0.0.1:8080", Listener("127.0.0.1", 8080, False)),
        ("inference_address", "HTTPS://0.0.0.0:8443", Listener("0.0.0.0", 8443, True)),
        ("inference_address", "http://localhost", Listener("localhost", 80, False)),
        ("inference_address", "https://localhost", Listener("localhost", 443, True)),
        ("management_address", "http://h", Listener("h", 8081, False)),
        ("management_address", "https://h", Listener("h", 8444, True)),
        ("metrics_address", "https://h", Listener("h", 8445, True)),
    ],
)
def test_addresses(key: str, value: str, listener: Listener) -> None:
    assert P.address(P.parse(f"{key}={value}\n", "f"), key, "") == listener


def test_default_addresses_are_torchserves() -> None:
    assert P.address({}, "inference_address", "http://127.0.0.1:8080") == Listener(
        "127.0.0.1", 8080
    )
    assert P.grpc_listener({}, "management", 7071) == Listener("127.0.0.1", 7071)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("127.0.0.1:8080", "is not an address like"),
        ("tcp://h:1", "is not an address like"),
        ("http://[::1]:8080", "is not an address like"),
        ("http://h:65535", "65535 is not a port"),
        ("unix:/tmp/ts.sock", "not unix sockets"),
    ],
)
def test_bad_addresses_name_the_line(value: str, match: str) -> None:
    props = P.parse(f"inference_address={value}\n", "c.properties")
    with pytest.raises(
        SettingsError, match=rf"^inference_address \(c.properties line 1\): .*{match}"
    ):
        P.address(props, "inference_address", "")


# --- the table ---------------------------------------------------------------------------------

# The keys TorchServe 0.12's ConfigManager and ts/model_server.py read.
TORCHSERVE_KEYS = """
debug inference_address management_address metrics_address load_models blacklist_env_vars
default_workers_per_model default_response_timeout default_startup_timeout
unregister_model_timeout number_of_netty_threads netty_client_threads job_queue_size
number_of_gpu metrics_config metrics_mode model_metrics_auto_detect disable_system_metrics
ipex_enable cpu_launcher_enable cpu_launcher_args ipex_gpu_enable async_logging
cors_allowed_origin cors_allowed_methods cors_allowed_headers decode_input_request keystore
keystore_pass keystore_type certificate_file private_key_file max_request_size
max_response_size limit_max_image_pixels default_service_handler service_envelope
model_server_home model_store prefer_direct_buffer allowed_urls install_py_dep_per_model
enable_metrics_api grpc_inference_address grpc_management_address grpc_inference_port
grpc_management_port grpc_inference_max_connection_age_ms grpc_management_max_connection_age_ms
grpc_inference_max_connection_age_grace_ms grpc_management_max_connection_age_grace_ms
enable_grpc_ssl initial_worker_port initial_distribution_port workflow_store cpp_log_config
ts_open_inference_protocol token_expiration_min ts_header_key_sequence_id
ts_header_key_sequence_start ts_header_key_sequence_end disable_token_authorization
enable_model_api use_native_io io_ratio metric_time_interval enable_envvars_config
model_snapshot models version system_metrics_cmd use_env_allowed_urls python vmargs
plugins_path
""".split()


def test_every_key_torchserve_reads_says_what_inferwire_does() -> None:
    assert sorted(set(TORCHSERVE_KEYS) - set(P.KEYS)) == []
    for key, how in P.KEYS.items():
        status, _, what = how.partition(": ")
        assert status in P.STATUSES, key
        assert what, f"{key}: say why"


def test_the_markdown_table_has_a_row_per_key() -> None:
    table = P.markdown_table()
    assert table.count("\n") == len(P.KEYS) + 2
    assert "| `token_expiration_min` | `TS_TOKEN_EXPIRATION_TIME_MIN` | **dialect**:" in table
    assert "| `models` |  | **dialect**:" in table
