"""MLServer's custom metrics on inferwire's metrics page: what models record with
``mlserver.register`` and ``mlserver.log`` (histograms labelled with the model's name and
version, in MLServer's own prometheus registry) follow inferwire's metrics at each scrape,
as MLServer's metrics server shows them.

With several workers each has its own registry: as MLServer does, prometheus_client then
keeps their values in files of one folder (``PROMETHEUS_MULTIPROC_DIR``, made here unless
set), and the scrape adds up every worker's."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

MULTIPROC_VAR = "PROMETHEUS_MULTIPROC_DIR"


def prepare(workers: int) -> None:
    """Before any model loads (prometheus_client reads the variable at import): a folder
    for several workers' values, removed when this process exits."""
    if workers <= 1 or os.environ.get(MULTIPROC_VAR) or "prometheus_client" in sys.modules:
        return
    folder = tempfile.mkdtemp(prefix="inferwire-metrics-")
    os.environ[MULTIPROC_VAR] = folder
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not a forked worker's exit
            shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)


def text() -> str:
    """The custom metrics in Prometheus' text format; empty until a model has imported
    mlserver's metrics."""
    registry = sys.modules.get("mlserver.metrics.registry")
    if registry is None:
        return ""
    from prometheus_client import CollectorRegistry, generate_latest

    folder = os.environ.get(MULTIPROC_VAR)
    if folder:
        from prometheus_client import multiprocess

        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=folder)  # type: ignore[no-untyped-call]
        return generate_latest(merged).decode()
    return generate_latest(registry.REGISTRY).decode()
