"""Type stubs for the native module ``inferwire._core`` (crates/inferwire-py)."""

from collections.abc import Callable
from typing import Any

__version__: str

class Server:
    """The Rust REST + gRPC servers around a model adapter (``inferwire.seldon.SeldonAdapter``)."""

    def __init__(self, config: dict[str, Any], adapter: Any) -> None: ...
    def serve(self, on_bound: Callable[[int, int], None]) -> None:
        """Serve until SIGINT, SIGTERM or ``stop()``; the GIL is released meanwhile.
        Raises RuntimeError if a port cannot be bound."""
    def stop(self) -> None:
        """Ask a running ``serve()`` to drain and return."""
