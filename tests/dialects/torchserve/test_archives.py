"""TorchServe archives as torch-model-archiver 0.12 makes them (every --archive-format),
their manifest and model-config.yaml, and hostile archives refused with the entry named:
inferwire.torchserve.archive and model_config called in process."""

from __future__ import annotations

import io
import logging
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from inferwire.errors import ModelLoadError, SettingsError
from inferwire.torchserve import model_config
from inferwire.torchserve.archive import ArchiveError, Limits, open_archive
from inferwire.torchserve.handler_model import HandlerModel, Request
from torchserve_archives import archive, handler_file

HANDLER = """
def handle(data, context):
    if data is None:
        return None
    return [{"model": context.model_name, "yaml": context.model_yaml_config} for _ in data]
"""

CONFIG = """\
minWorkers: 2
maxWorkers: 4
batchSize: 8
maxBatchDelay: 25
responseTimeout: 30
deviceType: cpu
parallelType: pp
handler:
  threshold: 0.5
  labels: [a, b]
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One model in each of torch-model-archiver's four formats."""
    src = tmp_path_factory.mktemp("src")
    handler = handler_file(src, "my_handler.py", HANDLER)
    config = handler_file(src, "model-config.yaml", CONFIG)
    labels = handler_file(src, "index_to_name.json", '{"0": "zero"}')
    reqs = handler_file(src, "requirements.txt", "transformers==4.0.0\n")
    out = tmp_path_factory.mktemp("store")
    return {
        fmt: archive(
            out,
            f"m_{fmt.replace('-', '_')}",
            handler,
            fmt=fmt,
            version="2.1",
            extra=[labels],
            config=config,
            requirements=reqs,
        )
        for fmt in ("default", "zip-store", "tgz", "no-archive")
    }


@pytest.mark.parametrize("fmt", ["default", "zip-store", "tgz", "no-archive"])
def test_every_archive_format_opens_with_its_manifest(
    made: dict[str, Path], fmt: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"m_{fmt.replace('-', '_')}"
    with caplog.at_level(logging.WARNING, "inferwire"):
        a = open_archive(made[fmt], temp_dir=tmp_path)
    m = a.manifest
    assert (m.model_name, m.model_version, m.handler, m.runtime) == (
        name,
        "2.1",
        "my_handler.py",
        "python",
    )
    assert (m.config_file, m.requirements_file, m.archiver_version) == (
        "model-config.yaml",
        "requirements.txt",
        "0.12.0",
    )
    assert (a.folder / "index_to_name.json").read_text() == '{"0": "zero"}'
    # requirementsFile is reported, never installed.
    warned = [r.getMessage() for r in caplog.records if "requirementsFile" in r.getMessage()]
    assert len(warned) == 1 and "not installed" in warned[0]
    a.close()
    if fmt == "no-archive":
        assert not a.extracted and made[fmt].is_dir()  # served in place, left alone
    else:
        assert a.extracted and not a.folder.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["default", "tgz", "no-archive"])
def test_handler_gets_the_whole_model_config_and_keys_are_honoured(
    made: dict[str, Path], fmt: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "inferwire"):
        model = HandlerModel(made[fmt], temp_dir=tmp_path)
    try:
        cfg = model.config
        assert (cfg.batch_size, cfg.max_batch_delay_ms, cfg.min_workers, cfg.max_workers) == (
            8,
            25,
            2,
            4,
        )
        assert (cfg.response_timeout_s, cfg.device_type, cfg.gpu_id) == (30, "cpu", None)
        assert cfg.serving() == {"max_batch_size": 8, "max_batch_delay": 0.025, "model_threads": 2}
        assert len(model._instances) == 2 and model.batch_size == 8
        [reply] = model.handle_batch([Request(b"x")])
        import json

        body = json.loads(reply.body)
        assert body["model"] == f"m_{fmt.replace('-', '_')}"
        assert body["yaml"]["handler"] == {"threshold": 0.5, "labels": ["a", "b"]}
        assert body["yaml"]["batchSize"] == 8
    finally:
        model.close()
    # parallelType is not served here: warned about (once per model file).
    assert any("parallelType" in r.getMessage() for r in caplog.records) or fmt != "default"


def test_model_config_wrong_types_are_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "inferwire"):
        for _ in range(3):
            cfg = model_config.parse(
                {"batchSize": "4", "maxBatchDelay": -5, "deviceType": "tpu", "custom": {"x": 1}},
                "once.yaml",
            )
    assert cfg.batch_size == 1 and cfg.max_batch_delay_ms == 100 and cfg.device_type == ""
    assert cfg.raw["custom"] == {"x": 1}
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("once.yaml")]
    assert len(messages) == 3, messages  # one each for batchSize, maxBatchDelay, deviceType
    assert any("invalid batchSize: '4'" in m for m in messages)


def test_model_config_gpu_and_device_ids() -> None:
    cfg = model_config.parse({"deviceType": "gpu", "deviceIds": [3, 1]}, "gpu.yaml")
    assert cfg.gpu_id == 3


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "a: &a [1,1,1,1,1,1,1,1,1,1]\n"
            + "".join(
                f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            )
            + "j: [*i, *i]\n",
            "counting what aliases repeat",
        ),
        ("x: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32"),
        ("x: &x [*x]\n", "nested deeper than 32"),
        ("x: [1, 2\n", "not valid YAML"),
        ("x: " + "y" * (1024 * 1024 + 1), "larger than"),
    ],
    ids=["alias-bomb", "deep", "recursive", "syntax", "large"],
)
def test_hostile_yaml_is_refused(text: str, problem: str) -> None:
    with pytest.raises(SettingsError, match=problem) as e:
        model_config.load_yaml(text, "evil.mar: model-config.yaml")
    assert str(e.value).startswith("evil.mar: model-config.yaml: ")


# -- hostile archives --------------------------------------------------------------------

MANIFEST = b'{"runtime": "python", "model": {"modelName": "evil", "modelVersion": "1.0", "handler": "h.py"}, "archiverVersion": "0.12.0"}'


def _zip(path: Path, entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in entries:
            zf.writestr(info, data)
    return path


def _assert_refused(
    path: Path, entry: str, problem: str, tmp: Path, limits: Limits | None = None
) -> None:
    temp = tmp / "extract"
    temp.mkdir(exist_ok=True)
    with pytest.raises(ArchiveError) as e:
        open_archive(path, temp_dir=temp, limits=limits)
    assert isinstance(e.value, ModelLoadError)
    assert e.value.archive == str(path) and e.value.entry == entry, str(e.value)
    assert problem in str(e.value) and (not entry or repr(entry) in str(e.value))
    assert list(temp.iterdir()) == []  # nothing left behind
    assert not (tmp / "evil.py").exists() and not Path("/tmp/inferwire-evil.py").exists()


def test_zip_bomb_is_refused_by_ratio(tmp_path: Path) -> None:
    bomb = _zip(
        tmp_path / "bomb.mar",
        [("MAR-INF/MANIFEST.json", MANIFEST), ("weights.bin", bytes(64 * 1024 * 1024))],
    )
    assert bomb.stat().st_size < 200_000
    _assert_refused(bomb, "weights.bin", "decompression bomb", tmp_path)


def test_total_size_is_bounded(tmp_path: Path) -> None:
    big = _zip(
        tmp_path / "big.mar",
        [("MAR-INF/MANIFEST.json", MANIFEST), ("a.bin", b"x" * 5000), ("b.bin", b"y" * 5000)],
    )
    _assert_refused(big, "b.bin", "expands past 8000 bytes", tmp_path, Limits(max_total_bytes=8000))


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../evil.py", "leaves the archive"),
        ("MAR-INF/../../evil.py", "leaves the archive"),
        ("/tmp/inferwire-evil.py", "absolute name"),
        ("C:/evil.py", "absolute name"),
        ("..\\evil.py", "backslash"),
    ],
)
def test_path_traversal_is_refused(tmp_path: Path, name: str, problem: str) -> None:
    evil = _zip(
        tmp_path / "evil.mar", [("MAR-INF/MANIFEST.json", MANIFEST), (name, b"import os\n")]
    )
    _assert_refused(evil, name, problem, tmp_path)


def test_symlink_entry_is_refused(tmp_path: Path) -> None:
    link = zipfile.ZipInfo("h.py")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    evil = _zip(
        tmp_path / "link.mar", [("MAR-INF/MANIFEST.json", MANIFEST), (link, b"/etc/passwd")]
    )
    _assert_refused(evil, "h.py", "symbolic link", tmp_path)


def test_too_many_entries_are_refused_before_reading_them(tmp_path: Path) -> None:
    many = _zip(
        tmp_path / "many.mar",
        [("MAR-INF/MANIFEST.json", MANIFEST)] + [(f"f{i}", b"") for i in range(10_001)],
    )
    _assert_refused(many, "", "declares 10002 entries, more than 10000", tmp_path)
    # An end record that understates the count: the walk over the directory still stops.
    data = bytearray(many.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    data[end + 8 : end + 12] = (1).to_bytes(2, "little") * 2
    forged = tmp_path / "forged.mar"
    forged.write_bytes(bytes(data))
    _assert_refused(forged, "f9999", "more than 10000 entries", tmp_path)


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="Duplicate name"):
        dup = _zip(
            tmp_path / "dup.mar",
            [
                ("MAR-INF/MANIFEST.json", MANIFEST),
                ("h.py", b"a = 1\n"),
                ("./h.py", b"b = 2\n"),
                ("h.py", b"c = 3\n"),
            ],
        )
    _assert_refused(dup, "./h.py", "duplicate name", tmp_path)


def _tgz(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tf.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def test_tgz_link_and_traversal_are_refused(tmp_path: Path) -> None:
    manifest = tarfile.TarInfo("evil/MAR-INF/MANIFEST.json")
    link = tarfile.TarInfo("evil/h.py")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    _assert_refused(
        _tgz(tmp_path / "link.tar.gz", [(manifest, MANIFEST), (link, b"")]),
        "evil/h.py",
        "link",
        tmp_path,
    )
    up = tarfile.TarInfo("evil/../../evil.py")
    _assert_refused(
        _tgz(tmp_path / "up.tar.gz", [(manifest, MANIFEST), (up, b"x")]),
        "evil/../../evil.py",
        "leaves the archive",
        tmp_path,
    )
    hard = tarfile.TarInfo("evil/h.py")
    hard.type = tarfile.LNKTYPE
    hard.linkname = "evil/MAR-INF/MANIFEST.json"
    _assert_refused(
        _tgz(tmp_path / "hard.tar.gz", [(manifest, MANIFEST), (hard, b"")]),
        "evil/h.py",
        "link",
        tmp_path,
    )


def test_tgz_bomb_is_refused(tmp_path: Path) -> None:
    manifest = tarfile.TarInfo("evil/MAR-INF/MANIFEST.json")
    big = tarfile.TarInfo("evil/weights.bin")
    bomb = _tgz(tmp_path / "bomb.tar.gz", [(manifest, MANIFEST), (big, bytes(64 * 1024 * 1024))])
    _assert_refused(bomb, "evil/weights.bin", "decompression bomb", tmp_path)


def test_manifest_is_checked_as_torchserve_checks_it(tmp_path: Path) -> None:
    no_version = b'{"runtime": "python", "model": {"modelName": "m", "handler": "h.py"}}'
    _assert_refused(
        _zip(tmp_path / "a.mar", [("MAR-INF/MANIFEST.json", no_version)]),
        "MAR-INF/MANIFEST.json",
        "Model version is not defined.",
        tmp_path,
    )
    _assert_refused(
        _zip(tmp_path / "b.mar", [("h.py", b"")]), "MAR-INF/MANIFEST.json", "missing", tmp_path
    )
    outside = b'{"runtime": "python", "model": {"modelName": "m", "modelVersion": "1", "handler": "h.py", "serializedFile": "../../etc/passwd"}}'
    _assert_refused(
        _zip(tmp_path / "c.mar", [("MAR-INF/MANIFEST.json", outside)]),
        "../../etc/passwd",
        "not a file of the archive",
        tmp_path,
    )
    not_zip = tmp_path / "d.mar"
    not_zip.write_bytes(b"hello")
    _assert_refused(not_zip, "", "neither a .mar", tmp_path)
