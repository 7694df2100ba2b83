"""The ``inferwire`` command."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Any

from . import __version__, authfiles, client, publishing
from .errors import InferwireError
from .settings import Settings, choices, flag_help, flag_name, from_sources


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="serve a model over REST and gRPC",
        description="Serve a Seldon-style Python model class, or a trained model file, over "
        "REST (port 9000) and gRPC (port 5000). MODEL is module:Class, module.Class, a file "
        "path (file.py or file.py:Class), or a trained model file (scikit-learn / joblib / "
        "pickle, XGBoost .json / .ubj, LightGBM .txt / .model, ONNX .onnx; tree models are "
        "scored natively in Rust).",
    )
    p.add_argument(
        "model",
        nargs="?",
        help="module:Class, module.Class, path/to/model.py[:Class], a trained model file "
        "(.joblib, .pkl, .json, .ubj, .txt, .model, .onnx), or a built-in model: noop, echo, "
        "image-stats (optional with --model-repository)",
    )
    p.add_argument(
        "--settings",
        dest="settings_file",
        default=None,
        help="YAML or JSON file of settings (below); flags and environment variables override "
        "it (env: INFERWIRE_SETTINGS)",
    )
    _setting_flags(p)


def _setting_flags(p: Any, shown: bool = True) -> None:
    """Every setting as a flag, derived from the schema (inferwire.settings): its name,
    help, default and variables; values stay text here and are checked there, so that
    flags, variables and files give the same messages."""
    for name, field in Settings.model_fields.items():
        # A yes/no setting's flag alone means yes (--allow-unauthenticated-repository).
        switch: dict[str, Any] = {"nargs": "?", "const": "true"} if field.annotation is bool else {}
        if choices(field):
            switch["metavar"] = "{" + ",".join(choices(field)) + "}"
        shown_help = flag_help(name) if shown else argparse.SUPPRESS
        p.add_argument(flag_name(name), dest=name, default=None, help=shown_help, **switch)


def _start_parser(sub: Any) -> None:
    p = sub.add_parser(
        "start",
        help="serve an MLServer folder as `mlserver start` does",
        description="Serve a folder as `mlserver start FOLDER` does: its settings.json and the "
        "MLSERVER_* variables (MLServer's ports, 8080, 8081 and 8082 for metrics), every "
        "model-settings.json under it, or, with none, the model the MLSERVER_MODEL_* variables "
        "describe (KServe's MLServer runtime). inferwire's own flags and INFERWIRE_* variables "
        "go over MLServer's settings.",
    )
    p.add_argument(
        "folder",
        nargs="?",
        help="the folder (default: $MLSERVER_MODELS_DIR, else the current folder)",
    )
    p.add_argument("--settings", dest="settings_file", default=None, help=argparse.SUPPRESS)
    _setting_flags(p, shown=False)  # the same as serve's (inferwire serve --help)


def _run(spec: str | None, args: dict[str, Any], start: bool = False) -> int:
    """``serve`` and ``start``: the settings from every source, then the server."""
    settings_file = args.pop("settings_file")
    base: dict[str, Any] = {}
    source = ""
    try:
        if start:
            # MLServer's settings (their dialect among them), under inferwire's own.
            from .mlserver.dialect import start_settings

            base, source = start_settings(spec)
            spec = None
        settings = from_sources(args, settings_file=settings_file, base=base, base_source=source)
    except InferwireError as e:
        print(f"inferwire: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from .server import serve

    try:
        serve(spec or None, settings)
    except InferwireError as e:
        print(f"inferwire: {e}", file=sys.stderr)
        return 1
    except RuntimeError as e:
        print(f"inferwire: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _bench(args: list[str]) -> int:
    """``inferwire bench ...``: the Rust load generator parses its own arguments."""
    from . import _core

    bench_main = getattr(_core, "bench_main", None)
    if bench_main is None:
        print(
            "inferwire bench: this build of inferwire leaves the load generator out. "
            "Rebuild the extension with the `bench` feature (maturin develop --release "
            "--features bench, as scripts/quickstart.sh does), or run the standalone one "
            "from a checkout: cargo run --release -p inferwire-bench -- ARGS",
            file=sys.stderr,
        )
        return 2
    # The run happens in Rust without the GIL: let Ctrl-C stop the process at once.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return int(bench_main(["inferwire bench", *args]))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    if argv[:1] == ["tritonserver"]:
        # Triton's options are Triton's (--flag=value), parsed there.
        from .triton import cli as triton_cli

        return triton_cli.run(argv[1:])
    if argv[:1] == ["torchserve"]:
        # TorchServe's options are TorchServe's, parsed there.
        from .torchserve import cli as torchserve_cli

        return torchserve_cli.main(argv[1:])
    parser = argparse.ArgumentParser(prog="inferwire", description="A fast model server.")
    parser.add_argument("--version", action="version", version=f"inferwire {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    _start_parser(sub)
    authfiles.add_parser(sub)
    publishing.add_parser(sub)
    client.add_parser(sub)
    sub.add_parser(
        "tritonserver",
        help="serve a Triton model repository as tritonserver does (inferwire tritonserver --help)",
        add_help=False,
    )
    sub.add_parser(
        "torchserve",
        help="serve TorchServe model archives as torchserve does (inferwire torchserve --help)",
        add_help=False,
    )
    sub.add_parser(
        "bench",
        help="load generator and benchmark suites (inferwire bench --help)",
        add_help=False,
    )
    args = vars(parser.parse_args(argv))
    command = args.pop("command")
    if command == "auth":
        return authfiles.run(args)
    if command == "publish":
        return publishing.run(args)
    if command == "predict":
        return client.run(args)
    if command == "serve":
        return _run(args.pop("model"), args)
    if command == "start":
        return _run(args.pop("folder"), args, start=True)
    return 2
