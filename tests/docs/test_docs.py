"""The documentation stays true to the code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import doc_samples
import pytest
from conftest import ROOT
from inferwire.settings import markdown_table


def test_configuration_reference_matches_the_settings() -> None:
    doc = (ROOT / "docs/reference/configuration.md").read_text()
    assert markdown_table() in doc, "regenerate the table with inferwire.settings.markdown_table()"


def test_readme_quick_start_is_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in block.strip().splitlines() if line.strip()]
    assert [c.split()[:2] for c in commands] == [
        ["bash", "scripts/quickstart.sh"],
        ["bash", "scripts/test.sh"],
    ]
    ci = (ROOT / ".ci/run").read_text()
    assert "scripts/test.sh" in ci


def test_relative_links_in_the_docs_resolve() -> None:
    import re

    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_documentation_builds_without_warnings(tmp_path: Path) -> None:
    """mkdocs.yml's site, built as CI builds it: strict, so a broken link, a missing
    page or a page left out of the navigation fails."""
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "reference" / "client" / "index.html").is_file()
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    nav = (ROOT / "mkdocs.yml").read_text()
    assert not [p for p in pages if p not in nav], "every page is in the navigation"


def test_python_samples_in_the_docs_compile() -> None:
    import re

    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S)):
            compile(block, f"{page.name} sample {i + 1}", "exec")


# -- Every sample in docs/ runs ---------------------------------------------------------

SAMPLES = doc_samples.samples(ROOT / "docs")


def test_no_run_markers_say_why() -> None:
    """``<!-- no-run: reason -->``, directly before a python or bash fence; the skipped
    samples and their reasons are listed in pytest's summary (``-rs``)."""
    problems = doc_samples.marker_problems(ROOT / "docs")
    assert not problems, "\n".join(problems)


def test_a_no_run_marker_is_the_line_before_the_fence(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text(
        "<!-- no-run: needs a cluster -->\n```bash\nkubectl apply -f x.yaml\n```\n\n"
        "<!-- no-run -->\n```python\nprint(1)\n```\n\n"
        "<!-- no-run: too far from its fence -->\n\n```bash\necho\n```\n"
    )
    found = [(s.line, s.no_run) for s in doc_samples.samples(tmp_path)]
    assert found == [(2, "needs a cluster"), (7, ""), (13, None)]
    problems = doc_samples.marker_problems(tmp_path)
    assert [p.split(":", 2)[1] for p in problems] == ["6", "11"], problems


@pytest.fixture(scope="session")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files the docs assume the reader has, stood in for: a model class (``model.py``,
    ``MyModel.py``, ``my_module.py``), an image, a ``.npy``, a tree model file, an empty model repository,
    and a self-signed certificate for 127.0.0.1."""
    import subprocess

    import joblib
    import numpy as np
    import pandas as pd
    from PIL import Image
    from sklearn.tree import DecisionTreeClassifier

    d = tmp_path_factory.mktemp("standins")
    model = "class MyModel:\n    def predict(self, X, features_names=None):\n        return X\n"
    (d / "model.py").write_text(model)
    (d / "MyModel.py").write_text(model)
    (d / "my_module.py").write_text(model)
    Image.new("RGB", (8, 6), (200, 120, 40)).save(d / "cat.jpg")
    np.save(d / "x.npy", np.arange(6.0).reshape(2, 3))
    rows = pd.DataFrame({"Number": [2, 3, 4, 5, 6, 7], "Start": [1, 5, 9, 12, 14, 16]})
    tree = DecisionTreeClassifier(random_state=0).fit(rows, [1, 1, 0, 0, 0, 1])
    joblib.dump(tree, d / "tree.joblib")
    joblib.dump(tree, d / "model.joblib")
    (d / "models").mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-keyout", "server-key.pem", "-out", "server.pem",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        cwd=d, check=True, capture_output=True,
    )  # fmt: skip
    (d / "ca.pem").write_bytes((d / "server.pem").read_bytes())
    return d


@pytest.fixture(scope="session")
def page_dirs(standins: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One working folder per page, shared by its samples in order: the stand-ins, and
    the page's ``# NAME.EXT`` blocks written as files."""
    import shutil

    made: dict[str, Path] = {}

    def get(page: str) -> Path:
        if page not in made:
            d = tmp_path_factory.mktemp(page.replace("/", "-").removesuffix(".md"))
            shutil.copytree(standins, d, dirs_exist_ok=True)
            for s in SAMPLES:
                if s.page == page and s.file:
                    (d / s.file).parent.mkdir(parents=True, exist_ok=True)
                    (d / s.file).write_text(s.code)
            made[page] = d
        return made[page]

    return get


@pytest.fixture(scope="session")
def docs_server(serve: Any) -> Any:
    """The server samples that start none of their own talk to: echo, named iris."""
    return serve("echo", "--model-name", "iris")


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_docs_sample_runs(
    sample: doc_samples.Sample, page_dirs: Any, docs_server: Any, pb: Any
) -> None:
    run_sample(sample, page_dirs, docs_server, pb)


# -- Every sample in README.md runs: the page every newcomer pastes from ------------------

README = doc_samples.page_samples(ROOT / "README.md", "README.md")


def test_readme_no_run_markers_say_why() -> None:
    problems = doc_samples.marker_problems(ROOT / "README.md")
    assert not problems, "\n".join(problems)
    assert [s for s in README if s.no_run is None], "the README has samples that run"


@pytest.fixture(scope="session")
def readme_server(serve: Any, standins: Path) -> Any:
    """The server the README's samples that start none of their own talk to: its
    ``my_module:MyModel``, an echo, on the ports the README names (9000, 5000)."""
    return serve(f"{standins / 'my_module.py'}:MyModel")


@pytest.mark.parametrize("sample", README, ids=[s.id for s in README])
def test_readme_sample_runs(
    sample: doc_samples.Sample, page_dirs: Any, readme_server: Any, pb: Any
) -> None:
    run_sample(sample, page_dirs, readme_server, pb)


def run_sample(sample: doc_samples.Sample, page_dirs: Any, server: Any, pb: Any) -> None:
    """Runs one sample in its page's folder, as a reader would paste it; a sample that
    starts no server of its own talks to ``server``."""
    import os
    import subprocess
    import sys

    from conftest import free_port

    if sample.no_run is not None:
        pytest.skip(f"{sample.id} no-run: {sample.no_run}")
    if sample.file:
        if sample.lang == "python":
            compile(sample.code, sample.file, "exec")
        elif sample.lang == "yaml":
            import yaml

            yaml.safe_load(sample.code)
        return
    cwd = page_dirs(sample.page)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFERWIRE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(Path(pb.msgs.__file__).parent)  # the generated gRPC stubs
    env["PASSWORD"] = "a stand-in password"  # the one variable a sample assumes is set
    shared = ("http", server.http_port, server.grpc_port)
    if sample.lang == "python":
        ports = {doc_samples.DEFAULT_HTTP: shared[1], doc_samples.DEFAULT_GRPC: shared[2]}
        script = cwd / f"sample_{sample.line}.py"
        script.write_text(doc_samples.rewrite_addresses(sample.code, ports))
        cmd = [sys.executable, script.name]
    else:
        script = cwd / f"sample_{sample.line}.sh"
        script.write_text(doc_samples.bash_script(sample.code, shared, free_port))
        cmd = ["bash", script.name]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=120)
    out, err = (b.decode(errors="replace") for b in (r.stdout, r.stderr))
    assert r.returncode == 0, (
        f"{sample.id} failed ({r.returncode}):\n{script.read_text()}\n--- stdout\n"
        f"{out[-4000:]}\n--- stderr\n{err[-6000:]}"
    )


def test_mlserver_settings_table_matches_the_code() -> None:
    from inferwire.mlserver.settings import markdown_table as mlserver_table

    doc = (ROOT / "docs/guides/migrating-from-mlserver.md").read_text()
    assert mlserver_table() in doc, (
        "regenerate the table with inferwire.mlserver.settings.markdown_table()"
    )


# -- The TorchServe guide's tables, generated from the code -------------------------------

TORCHSERVE_GUIDE = ROOT / "docs/guides/migrating-from-torchserve.md"


def test_torchserve_options_table_matches_the_code() -> None:
    from inferwire.torchserve.cli import markdown_table as options_table

    assert options_table() in TORCHSERVE_GUIDE.read_text(), (
        "regenerate the table with inferwire.torchserve.cli.markdown_table()"
    )


def test_torchserve_context_and_model_config_tables_match_the_code() -> None:
    from inferwire.torchserve import context, model_config

    guide = TORCHSERVE_GUIDE.read_text()
    assert context.markdown_table() in guide, (
        "regenerate the table with inferwire.torchserve.context.markdown_table()"
    )
    assert model_config.markdown_table() in guide, (
        "regenerate the table with inferwire.torchserve.model_config.markdown_table()"
    )
    # Every part of the context a handler can reach is in the table.
    names = {*vars(context.Context), *vars(context.Context("m", ".", {}, 1, None))}
    assert {n for n in names if not n.startswith("_")} <= set(context.CONTEXT)
    for cls, row in (
        (context.RequestProcessor, "RequestProcessor"),
        (context.Metrics, "Metrics"),
        (context.Metric, "Metrics"),
    ):
        for name in vars(cls):
            if not name.startswith("_") and name != "samples":  # samples: the dialect's
                assert f"`{name}`" in context.CONTEXT[row], (cls.__name__, name)


def test_torchserve_properties_table_matches_the_code() -> None:
    from inferwire.torchserve.properties import markdown_table as keys_table

    assert keys_table() in TORCHSERVE_GUIDE.read_text(), (
        "regenerate the table with inferwire.torchserve.properties.markdown_table()"
    )


# -- The Triton guide's tables, generated from the code -----------------------------------

TRITON_GUIDE = ROOT / "docs/guides/migrating-from-triton.md"


def test_tritonserver_options_table_matches_the_code() -> None:
    from inferwire.triton.cli import markdown_table as options_table

    assert options_table() in TRITON_GUIDE.read_text(), (
        "regenerate the table with inferwire.triton.cli.markdown_table()"
    )


def test_triton_config_fields_table_matches_the_code() -> None:
    from inferwire.triton.config import markdown_table as fields_table

    assert fields_table() in TRITON_GUIDE.read_text(), (
        "regenerate the table with inferwire.triton.config.markdown_table()"
    )


def test_pb_utils_names_table_matches_the_code() -> None:
    from inferwire.triton.pb_names import markdown_table as names_table

    assert names_table() in TRITON_GUIDE.read_text(), (
        "regenerate the table with inferwire.triton.pb_names.markdown_table()"
    )


def test_every_public_name_of_pb_utils_is_in_the_names_table() -> None:
    """What a Triton model can reach in ``pb_utils``: ``__all__``, and anything public
    that inferwire's modules define there without listing it; each entry of ``NAMES``
    is a name ``pb_utils`` has (a dotted one, a method of its class)."""
    import inspect

    from inferwire.triton import pb_names, pb_utils

    public = set(pb_utils.__all__) | {
        name
        for name, value in vars(pb_utils).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and str(getattr(value, "__module__", "") or "").startswith("inferwire.")
    }
    missing = sorted(public - set(pb_names.NAMES))
    assert not missing, f"say what inferwire does with these in pb_names.NAMES: {missing}"
    for name, how in pb_names.NAMES.items():
        found: Any = pb_utils
        for part in name.split("."):
            assert hasattr(found, part), f"NAMES[{name!r}]: pb_utils has no such name"
            found = getattr(found, part)
        assert how.partition(": ")[0] in pb_names.STATUSES, f"NAMES[{name!r}]: {how!r}"


def test_the_triton_walk_through_serves_tritons_own_add_sub() -> None:
    """The guide's add_sub is Triton's example as vendored: the same configuration, and
    the same model.py but for its comments and docstrings."""
    import ast

    from inferwire.triton.config_schema import parse

    files = {
        s.file: s.code
        for s in doc_samples.page_samples(TRITON_GUIDE, "guides/migrating-from-triton.md")
        if s.file
    }
    vendored = ROOT / "tests/vendor/triton_python_backend/repository/add_sub"
    config = "models/add_sub/config.pbtxt"
    assert parse(files[config], config) == parse(
        (vendored / "config.pbtxt").read_text(), "config.pbtxt"
    )

    def code(source: str) -> str:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
        return ast.dump(tree)

    model = "models/add_sub/1/model.py"
    assert code(files[model]) == code((vendored / "1/model.py").read_text())
