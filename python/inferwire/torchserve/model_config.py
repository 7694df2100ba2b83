"""An archive's ``model-config.yaml`` (``torch-model-archiver --config-file``): the keys
TorchServe's frontend reads (``batchSize``, ``maxBatchDelay``, ``minWorkers``, ...), each
honoured or warned about once, and the whole file as handlers see it
(``context.model_yaml_config``: TorchServe hands them all of it, and they read their own
sections, ``handler``, ``pt2``, ``micro_batching``, ...).

A value of the wrong type is warned about and left at its default, as TorchServe does;
a file that is not YAML, or that is too large, too deep or expands too far through
aliases, is refused (``SettingsError`` naming the archive and the file)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bounded_yaml import MAX_YAML_BYTES, load_yaml  # one YAML loader for every file read
from ..errors import SettingsError

log = logging.getLogger("inferwire")

# What inferwire does with each key TorchServe's frontend reads (for the warnings and the
# migration guide). Keys not listed are the handler's own: passed on, never warned about.
KEYS: dict[str, str] = {
    "batchSize": "honoured: the most requests in one handler call (max_batch_size)",
    "maxBatchDelay": "honoured: milliseconds a batch waits to fill (max_batch_delay)",
    "minWorkers": "honoured: handler instances started with the model (model_threads)",
    "maxWorkers": "accepted: the most instances the management API may scale to",
    "responseTimeout": "accepted: read (response_timeout_s); a running handler call is not "
    "interrupted, the server's own request timeouts apply",
    "startupTimeout": "accepted: a handler's initialize is waited for however long it takes",
    "deviceType": "honoured: cpu keeps gpu_id None; gpu sets gpu_id (deviceIds' first, else 0)",
    "deviceIds": "honoured: the first id is the handler's gpu_id when deviceType is gpu",
    "jobQueueSize": "honoured: requests waiting for the model before 503 (max_queue)",
    "clientTimeoutInMills": "ignored with a warning: requests are never dropped unanswered",
    "parallelType": "ignored with a warning: no torchrun pipeline/tensor parallelism",
    "parallelLevel": "ignored with a warning: no torchrun pipeline/tensor parallelism",
    "torchrun": "ignored with a warning: handlers run in the server's process, not torchrun",
    "maxRetryTimeoutInSec": "ignored with a warning: a failed load is reported, not retried",
    "useJobTicket": "ignored with a warning: admission is bounded by the queue instead",
    "sequenceMaxIdleMSec": "ignored with a warning: no sequence batching",
    "sequenceTimeoutMSec": "ignored with a warning: no sequence batching",
    "maxSequenceJobQueueSize": "ignored with a warning: no sequence batching",
    "maxNumSequence": "ignored with a warning: no sequence batching",
    "sequenceBatching": "ignored with a warning: no sequence batching",
    "continuousBatching": "ignored with a warning: each request is one handler call",
    "asyncCommunication": "ignored with a warning: the handler is called synchronously",
    "useVenv": "ignored with a warning: handlers run in the server's environment",
}


def markdown_table() -> str:
    """``KEYS`` as the migration guide's table (tests/docs checks the guide holds it)."""
    rows = ["| model-config.yaml key | inferwire |", "|---|---|"]
    for key, how in KEYS.items():
        status, _, what = how.partition(": ")
        rows.append(f"| `{key}` | **{status}**{': ' + what if what else ''} |")
    return "\n".join(rows) + "\n"


_INTS = (
    "batchSize",
    "maxBatchDelay",
    "minWorkers",
    "maxWorkers",
    "responseTimeout",
    "startupTimeout",
    "jobQueueSize",
    "clientTimeoutInMills",
    "parallelLevel",
    "maxRetryTimeoutInSec",
    "sequenceMaxIdleMSec",
    "sequenceTimeoutMSec",
    "maxSequenceJobQueueSize",
    "maxNumSequence",
)
_BOOLS = (
    "useJobTicket",
    "continuousBatching",
    "sequenceBatching",
    "asyncCommunication",
    "useVenv",
)

# (where, key) already warned about: a model loaded again, or by several workers of one
# process, warns once.
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_once(where: str, key: str, text: str) -> None:
    with _warned_lock:
        if (where, key) in _warned:
            return
        _warned.add((where, key))
    log.warning("%s: %s", where, text)


@dataclass
class ModelConfig:
    """The keys of ``model-config.yaml`` inferwire uses, with TorchServe's defaults, and
    ``raw``: the whole file (the handler's ``context.model_yaml_config``)."""

    raw: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 1
    max_batch_delay_ms: int = 100
    min_workers: int | None = None
    max_workers: int | None = None
    response_timeout_s: int = 120
    startup_timeout_s: int = 120
    device_type: str = ""
    device_ids: list[int] = field(default_factory=list)
    job_queue_size: int | None = None

    @property
    def gpu_id(self) -> int | None:
        """What the handler's ``system_properties["gpu_id"]`` is: None on the CPU."""
        if self.device_type != "gpu":
            return None
        return self.device_ids[0] if self.device_ids else 0

    def serving(self) -> dict[str, Any]:
        """inferwire's serving settings (``settings.ModelServing`` names) that follow:
        batches of ``batchSize`` gathered for up to ``maxBatchDelay`` ms; one model thread
        per worker ``minWorkers`` asks for; ``jobQueueSize`` as the queue."""
        batching = self.batch_size > 1
        out: dict[str, Any] = {
            "max_batch_size": self.batch_size,
            "max_batch_delay": self.max_batch_delay_ms / 1000 if batching else 0.0,
        }
        if self.min_workers:
            out["model_threads"] = self.min_workers
        if self.job_queue_size:
            out["max_queue"] = self.job_queue_size
        return out


def parse(raw: Any, where: str) -> ModelConfig:
    """``raw`` (the parsed file) as a ``ModelConfig``: each known key honoured, or warned
    about once (a wrong type, a key inferwire does not serve)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SettingsError(f"{where}: must be a mapping of keys to values")
    cfg = ModelConfig(raw=raw)
    for key, value in raw.items():
        if not isinstance(key, str) or key not in KEYS:
            continue
        if key in _INTS and (not isinstance(value, int) or isinstance(value, bool)):
            warn_once(where, key, f"invalid {key}: {value!r}, should be an integer; ignored")
            continue
        if key in _BOOLS and not isinstance(value, bool):
            warn_once(where, key, f"invalid {key}: {value!r}, should be true or false; ignored")
            continue
        if KEYS[key].startswith("ignored"):
            warn_once(where, key, f"{key}: {KEYS[key]}")
            continue
        _apply(cfg, key, value, where)
    return cfg


def _apply(cfg: ModelConfig, key: str, value: Any, where: str) -> None:
    # The bounds are TorchServe's setters': out-of-range values are warned about and
    # leave the default (batchSize and minWorkers are raised to 1).
    if key == "batchSize":
        cfg.batch_size = max(1, value)
    elif key == "maxBatchDelay":
        if value < 0:
            warn_once(where, key, f"invalid maxBatchDelay: {value}; ignored")
        else:
            cfg.max_batch_delay_ms = value
    elif key == "minWorkers":
        cfg.min_workers = max(1, value)
    elif key == "maxWorkers":
        if value < 0:
            warn_once(where, key, f"invalid maxWorkers: {value}; ignored")
        else:
            cfg.max_workers = value
    elif key in ("responseTimeout", "startupTimeout"):
        if value <= 0:
            warn_once(where, key, f"invalid {key}: {value}; ignored")
        elif key == "responseTimeout":
            cfg.response_timeout_s = value
        else:
            cfg.startup_timeout_s = value
    elif key == "jobQueueSize":
        cfg.job_queue_size = max(0, value) or None
    elif key == "deviceType":
        kind = str(value).lower()
        if kind not in ("cpu", "gpu", "neuron"):
            warn_once(where, key, f"invalid deviceType: {value!r}, should be cpu or gpu; ignored")
        elif kind == "neuron":
            warn_once(where, key, "deviceType neuron: served on the CPU")
            cfg.device_type = "cpu"
        else:
            cfg.device_type = kind
    elif key == "deviceIds":
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            warn_once(where, key, f"invalid deviceIds: {value!r}, should be a list of integers")
        else:
            cfg.device_ids = list(value)


def read(path: Path, where: str) -> ModelConfig:
    """The config file at ``path`` (``where``: how messages name it, e.g. the archive and
    the file's name)."""
    try:
        if path.stat().st_size > MAX_YAML_BYTES:
            raise SettingsError(f"{where}: larger than {MAX_YAML_BYTES} bytes")
        text = path.read_bytes()
    except OSError as e:
        raise SettingsError(f"{where}: {e.strerror or e}") from None
    return parse(load_yaml(text, where), where)
