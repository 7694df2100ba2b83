"""Type stubs for the native module ``inferwire._core`` (crates/inferwire-py)."""

from collections.abc import Callable
from typing import Any, final

from typing_extensions import Self

__all__ = ["Server", "__version__", "bench_main"]

__version__: str

@final
class Server:
    """The Rust REST + gRPC servers around a model adapter (``inferwire.seldon.SeldonAdapter``)."""

    def __new__(
        cls,
        config: dict[str, Any],
        adapter: Any,
        models: list[Any] = ...,
        repository: Any | None = None,
    ) -> Self:
        """``models``: ``(adapter, settings dict)`` of further models already built;
        ``repository``: an ``inferwire.repository.Repository`` the repository API loads
        from."""
    def serve(self, on_bound: Callable[[int, int], None], worker: int = 0) -> None:
        """Serve until SIGINT, SIGTERM or ``stop()``; the GIL is released meanwhile.
        ``worker`` is this process' index among ``--workers`` (its slot in the shared
        metrics). Raises RuntimeError if a port cannot be bound."""
    def stop(self) -> None:
        """Ask a running ``serve()`` to drain and return."""
    def worker_restarted(self) -> None:
        """Count a worker restart (``inferwire_worker_restarts_total``)."""
    def worker_exited(self, worker: int) -> None:
        """Free a dead worker's slot in the shared metrics."""
    def metrics_text(self) -> str:
        """The Prometheus text ``GET /metrics`` serves (all workers' counts)."""

def bench_main(args: list[str]) -> int:
    """Run ``inferwire bench`` with ``args`` (the first is the program name), without the
    GIL; return the exit status."""
