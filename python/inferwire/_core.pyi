"""Type stubs for the native module ``inferwire._core`` (crates/inferwire-py)."""

from collections.abc import Callable
from typing import Any, final

from typing_extensions import Self

__all__ = [
    "CoreConfig",
    "CoreModelSpec",
    "PieceSender",
    "Server",
    "Sink",
    "TreeEnsemble",
    "__version__",
    "bench_main",
    "hash_password",
    "seldon_descriptor_set",
    "seldon_from_pb",
    "seldon_to_pb",
    "take_piece_sender",
    "token_digest",
    "v2_request_to_pb",
    "v2_response_from_pb",
]

__version__: str

@final
class CoreConfig:
    """How the server runs, built once by ``inferwire.Settings.to_core()``: the core's
    settings by their names in ``inferwire.settings``, every one given (a missing or
    unknown key is a TypeError naming it)."""

    def __new__(cls, **settings: object) -> Self: ...

@final
class CoreModelSpec:
    """How one repository model is served (``inferwire.repository.ModelSettings.to_core()``)."""

    def __new__(
        cls,
        *,
        name: str,
        version: str,
        model_threads: int,
        max_concurrency: int,
        max_queue: int,
        max_batch_size: int,
        max_batch_delay: float,
        memory_bytes: int,
    ) -> Self: ...

@final
class Server:
    """The Rust REST + gRPC servers around a model adapter (``inferwire.contract.Adapter``)."""

    def __new__(
        cls,
        config: CoreConfig,
        adapter: Any,
        models: list[tuple[Any, CoreModelSpec]] = ...,
        repository: Any | None = None,
        metrics_text: Callable[[], str] | None = None,
    ) -> Self:
        """``config``: ``inferwire.Settings.to_core()``; ``models``: ``(adapter,
        CoreModelSpec)`` of further models already built;
        ``repository``: an ``inferwire.repository.Repository`` the repository API loads
        from; ``metrics_text``: called at each scrape for more of the metrics page (text
        in Prometheus' format)."""
    def serve(
        self, on_bound: Callable[[int, int], None], worker: int = 0, workers: int = 1
    ) -> None:
        """Serve until SIGINT, SIGTERM or ``stop()``; the GIL is released meanwhile.
        ``worker`` is this process' index among ``workers`` (its slot in the shared
        metrics; V2 requests of a sequence are routed to their owner between workers).
        Raises RuntimeError if a port cannot be bound."""
    def listen(self) -> tuple[int, int]:
        """Bind both ports now (before forking workers, which inherit the sockets and
        share one accept queue); returns ``(http_port, grpc_port)``."""
    def stop(self) -> None:
        """Ask a running ``serve()`` to drain and return."""
    def unlisten(self) -> None:
        """Close this process's handles on the listening sockets (the supervisor's, at
        SIGTERM)."""
    def worker_recycled(self) -> None:
        """Count a worker replaced after max_requests or max_worker_memory
        (``inferwire_worker_recycles_total``)."""
    def worker_restarted(self) -> None:
        """Count a worker restart (``inferwire_worker_restarts_total``)."""
    def worker_exited(self, worker: int) -> None:
        """Free a dead worker's slot in the shared metrics."""
    def metrics_text(self) -> str:
        """The Prometheus text ``GET /metrics`` serves (all workers' counts)."""

@final
class TreeEnsemble:
    """A model in the inferwire tree format (``inferwire.trees.convert``), scored in Rust."""

    def __new__(
        cls,
        text: str | bytes,
        output_names: str = "{class}",
        *,
        mlserver_runtime: str = "",
        default_output: str = "predict",
        metadata: str = "{}",
    ) -> Self:
        """Loads the model's JSON text; ValueError names what is wrong with it. Served,
        its outputs are named by ``output_names``, ``{class}`` replaced by each label.
        ``mlserver_runtime`` (``sklearn``, ``xgboost``, ``lightgbm``) answers V2 requests
        with that MLServer runtime's outputs (``default_output`` when a request names
        none); ``metadata`` (a JSON object) goes over the model's own metadata."""
    def predict(self, X: Any) -> Any:
        """Class probabilities (classification) or values (regression) for a 2-D float64
        array, one row per row, computed without the GIL."""
    @property
    def memory_bytes(self) -> int:
        """The bytes the model holds in memory (its trees' arrays)."""
    @property
    def n_features(self) -> int: ...
    @property
    def n_outputs(self) -> int: ...
    @property
    def n_trees(self) -> int: ...
    @property
    def task(self) -> str:
        """``classification`` or ``regression``."""
    @property
    def source(self) -> str:
        """The estimator the model was converted from."""
    @property
    def feature_names(self) -> list[str]: ...
    @property
    def classes(self) -> list[Any]: ...

@final
class Sink:
    """Where an async generator's driver (``inferwire.streaming``) sends a stream's
    pieces; made by the core, one per stream."""

    def has_room(self) -> bool:
        """Whether ``send`` queues a piece now (or drops it: the reader has gone)."""
    def when_room(self, callback: Callable[[], Any]) -> None:
        """Calls ``callback()``, from any thread, once there is room or the reader has gone."""
    def send(self, outputs: list[tuple[str, Any]]) -> bool:
        """Queues one piece's outputs; False when the reader has gone."""
    def fail(self, exc: BaseException) -> None:
        """Ends the stream with the model's exception."""
    def give_up(self) -> None:
        """The reader took nothing for the idle limit: its queued pieces are let go and
        the stream stops counting as open (call ``close`` after)."""
    def close(self) -> None:
        """Ends the stream."""

@final
class PieceSender:
    """A request's stream while the model call answering it runs: where a TorchServe
    handler's intermediate responses go as it sends them, its reply last; made by
    ``take_piece_sender``."""

    def send(self, outputs: list[tuple[str, Any, dict[str, Any]]]) -> bool:
        """Sends one piece, waiting (without the GIL) while the reader is behind; False
        when the reader has gone or stalled (send no more)."""
    def fail(self, status: int, message: str, body: str | None) -> bool:
        """Ends the stream with a failure: its HTTP status, message and error body."""
    def close(self) -> None:
        """Ends the stream (after its last piece)."""

def take_piece_sender(token: int) -> PieceSender | None:
    """The sender of the request whose parameters carry ``token``, the first time; None
    after that, or when no reader can take pieces while the call runs."""

def bench_main(args: list[str]) -> int:
    """Run ``inferwire bench`` with ``args`` (the first is the program name), without the
    GIL; return the exit status. Only in builds with the ``bench`` cargo feature."""

def token_digest(token: str) -> str:
    """The SHA-256 hex digest of a token, as a token file line holds it."""

def hash_password(password: str) -> str:
    """An argon2id hash (PHC string) of a password, as a user file line holds it."""

def seldon_to_pb(body: bytes) -> bytes:
    """A SeldonMessage's JSON as its protobuf encoding (ValueError names a bad field)."""

def seldon_from_pb(pb: bytes) -> bytes:
    """A SeldonMessage's protobuf encoding as its JSON."""

def seldon_descriptor_set() -> bytes:
    """The compiled ``prediction.proto`` and its imports as a serialized
    ``FileDescriptorSet`` (for the protobuf classes a Seldon ``*_grpc`` method takes)."""

def v2_request_to_pb(body: bytes, header_len: int | None, model: str, version: str = "") -> bytes:
    """A V2 REST request body (JSON, then binary inputs after ``header_len`` bytes) as a
    ``ModelInferRequest`` with its inputs in ``raw_input_contents``."""

def v2_response_from_pb(pb: bytes) -> tuple[bytes, int]:
    """A ``ModelInferResponse`` as the V2 REST reply with every output binary: the body
    and the length of its JSON header."""
