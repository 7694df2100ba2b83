"""Triton's ensembles (platform ``ensemble``): a config whose ``ensemble_scheduling`` steps
name other models of the repository, each step's ``input_map`` (the model's input → the
ensemble tensor it reads) and ``output_map`` (the model's output → the ensemble tensor it
writes). Run here in-process: each step once the tensors it reads are ready, in dependency
order, its model called directly (``bls.find``, ``bls.call``: the arrays passed on as they
are, no copies), the ensemble's outputs gathered by name.

As Triton (triton-inference-server/core, ``src/ensemble_scheduler/``,
``model_repository_manager.cc``): an ensemble loads after the models it names, and with
them (``load_order``); one naming a model the repository lacks, or one that did not load,
is unavailable with Triton's reason; the step models' configs are checked against the maps
(``ValidateEnsembleConfig``); only the steps the asked-for outputs need run; a failing step
fails the request with its own error, ``in ensemble 'E', `` before it. Unlike Triton, the
steps of one request run one after another (Triton runs steps that are ready side by
side), and a decoupled step model is refused."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract import Request
from ..errors import InferwireError, ModelLoadError
from . import bls
from .backends import (
    INTERNAL,
    INVALID_ARG,
    NOT_FOUND,
    UNAVAILABLE,
    TritonAdapter,
    TritonFailure,
    reshape,
    shape_text,
)
from .config import ModelConfig

PLATFORM = "ensemble"


@dataclass(frozen=True)
class Step:
    model: str
    version: int  # -1: the newest ready version
    reads: dict[str, str]  # the model's input → the ensemble tensor
    writes: dict[str, str]  # the model's output → the ensemble tensor

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Step:
        return cls(
            raw.get("model_name", ""),
            int(raw.get("model_version", -1)),
            dict(raw.get("input_map", {})),
            dict(raw.get("output_map", {})),
        )


def load_order(
    names: list[str], known: list[str], steps_of: Callable[[str], list[str]]
) -> list[str]:
    """``names`` with the models their ensembles name (those in ``known``: Triton loads
    an ensemble's models with it), each after the models it names. ``steps_of(name)``: the
    models an ensemble names (a model that cannot be read names none)."""
    order: list[str] = []
    done: set[str] = set()
    available = set(known)

    def steps(name: str) -> list[str]:
        try:
            return steps_of(name)
        except (InferwireError, OSError):
            return []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in done or name in path:  # a circle: each model still loads once
            return
        for step in steps(name):
            if step in available:
                visit(step, (*path, name))
        done.add(name)
        order.append(name)

    for name in names:
        visit(name, ())
    return order


def step_models(config: ModelConfig) -> list[str]:
    """The models an ensemble's steps name (none for other models)."""
    return [s.get("model_name", "") for s in config.ensemble_steps]


def check(config: ModelConfig, root: Path) -> list[Any]:
    """What Triton checks before an ensemble loads: every model it names is in the
    repository and loaded (at the version a step names), none decoupled, and each step's
    maps fit its model's config. Returns the step models."""
    name = config.name
    steps = [Step.of(s) for s in config.ensemble_steps]
    missing = sorted({s.model for s in steps if not (root / s.model).is_dir()})
    if missing:
        raise ModelLoadError(
            f"ensemble {name} contains models that are not available or ambiguous: "
            + ", ".join(missing)
        )
    batching = config.max_batch_size > 0
    tensors: dict[str, tuple[str, str, list[int], list[int]]] = {}
    for t in [*config.inputs, *config.outputs]:
        dims = t.reshape if t.reshape is not None else t.dims
        tensors[t.name] = (name, t.data_type, dims, ([-1] if batching else []) + dims)
    targets = [_loaded(name, step) for step in steps]
    for step, target in zip(steps, targets, strict=True):
        _check_maps(name, config.max_batch_size, step, target.model_config() or {}, tensors)
    return targets


def _loaded(name: str, step: Step) -> Any:
    """The step's model, loaded at the version it names."""
    target = bls.find(step.model, step.version)
    if target is None and step.version >= 0 and bls.find(step.model, -1) is not None:
        raise ModelLoadError(
            f"ensemble '{name}' depends on '{step.model}' whose required version "
            f"{step.version} is not loaded."
        )
    if target is None:
        raise ModelLoadError(
            f"ensemble '{name}' depends on '{step.model}' which has no loaded version."
        )
    if target.streams:
        raise ModelLoadError(
            f"ensemble '{name}': step model '{step.model}' is decoupled; inferwire's "
            "ensembles run models that answer each request once"
        )
    return target


def _check_maps(
    ensemble: str,
    mbs: int,
    step: Step,
    config: dict[str, Any],
    tensors: dict[str, tuple[str, str, list[int], list[int]]],
) -> None:
    """ValidateTensorMapping: each map's names are the model's, each input of it is read
    from a tensor, and a tensor has one data type and shape wherever it is used."""
    model = step.model
    step_mbs = int(config.get("max_batch_size", 0))
    if step_mbs != 0 and step_mbs < mbs:
        raise ModelLoadError(
            f"ensemble {ensemble} allows maximum batch size {mbs}, but it contains model "
            f"{model} which only allows maximum batch size to be {step_mbs}"
        )
    inputs = {t["name"]: t for t in config.get("input", [])}
    outputs = {t["name"]: t for t in config.get("output", [])}
    for model_input, tensor in step.reads.items():
        if model_input not in inputs:
            raise ModelLoadError(
                f"in ensemble {ensemble}, ensemble tensor {tensor} is mapping to non-existing "
                f"input {model_input} in model {model}"
            )
    for input_name, t in inputs.items():
        if input_name not in step.reads and not t.get("optional"):
            raise ModelLoadError(
                f"in ensemble {ensemble}, input {input_name} in model {model} is not mapped to "
                "any ensemble tensors"
            )
    for model_output, tensor in step.writes.items():
        if model_output not in outputs:
            raise ModelLoadError(
                f"in ensemble {ensemble}, ensemble tensor {tensor} is mapped from non-existing "
                f"output {model_output} in model {model}"
            )
    uses = [(step.reads, inputs), (step.writes, outputs)]
    for names, declared in uses:
        for model_name, tensor in names.items():
            t = declared[model_name]
            dims = [int(d) for d in t.get("dims", [])]
            seen = (model, t.get("data_type", ""), dims, ([-1] if step_mbs > 0 else []) + dims)
            first = tensors.setdefault(tensor, seen)
            _consistent(ensemble, tensor, first, seen)


def _consistent(ensemble: str, tensor: str, a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    at = f"in ensemble {ensemble}, ensemble tensor {tensor}: "
    if a[1] != b[1]:
        raise ModelLoadError(
            f"{at}inconsistent data type: {a[1]} is inferred from model {a[0]} while {b[1]} is "
            f"inferred from model {b[0]}"
        )
    if not (_same_dims(a[2], b[2]) or _same_dims(a[3], b[3])):
        raise ModelLoadError(
            f"{at}inconsistent shape: {shape_text(a[3])} is inferred from model {a[0]} while "
            f"{shape_text(b[3])} is inferred from model {b[0]}"
        )


def _same_dims(a: list[int], b: list[int]) -> bool:
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b, strict=True))


class EnsembleAdapter(TritonAdapter):
    """An ensemble: its steps run in this process, each through its model's adapter."""

    def __init__(self, config: ModelConfig, version: str) -> None:
        super().__init__(config, version, PLATFORM)
        self.steps = [Step.of(s) for s in config.ensemble_steps]
        self._outputs = [t.name for t in config.outputs]
        self._optional = {t.name for t in config.inputs if t.optional}
        self._every_step = self._needed(self._outputs)
        self.concurrency = 1

    def infer(self, request: Request) -> Any:
        wanted = [n for n in self._outputs if n in request.requested] or self._outputs
        pending = list(self._every_step) if wanted == self._outputs else self._needed(wanted)
        tensors: dict[str, Any] = dict(request.inputs)
        # An optional ensemble input left out is left out of the steps that read it too.
        absent = self._optional - set(tensors)
        while pending:
            ready = [
                s for s in pending if all(t in tensors or t in absent for t in s.reads.values())
            ]
            if not ready:
                break
            for step in ready:
                pending.remove(step)
                tensors.update(self._run(step, tensors, request))
        if any(n not in tensors for n in wanted):
            raise TritonFailure(
                f"in ensemble '{self.name}', unexpected deadlock, at least one output is not set "
                "while no more ensemble steps can be made",
                INVALID_ARG,
            )
        return [(n, tensors[n]) for n in wanted]

    def _needed(self, wanted: list[str]) -> list[Step]:
        """The steps the outputs asked for need (Triton prunes the others), in order."""
        needed: set[int] = set()
        tensors = set(wanted)
        changed = True
        while changed:
            changed = False
            for i, step in enumerate(self.steps):
                if i not in needed and tensors & set(step.writes.values()):
                    needed.add(i)
                    tensors |= set(step.reads.values())
                    changed = True
        return [s for i, s in enumerate(self.steps) if i in needed]

    def _run(self, step: Step, tensors: dict[str, Any], request: Request) -> dict[str, Any]:
        """One step: its model called with the tensors it reads; the tensors it writes."""
        target = bls.find(step.model, step.version)
        if target is None:
            raise self._unknown(step)
        if target.streams:
            raise TritonFailure(
                f"in ensemble '{self.name}', step model '{step.model}' is decoupled; inferwire's "
                "ensembles run models that answer each request once",
                INVALID_ARG,
            )
        inputs = {m: tensors[t] for m, t in step.reads.items() if t in tensors}
        config = getattr(target, "config", None)
        if config is not None:
            for t in config.inputs:  # as Triton's core reshapes a request's inputs
                if t.reshape is not None and t.name in inputs:
                    batched = config.max_batch_size > 0
                    inputs[t.name] = reshape(inputs[t.name], t.dims, t.reshape, batched)
        asked = list(step.writes)
        answer = bls.call(target, Request(inputs, dict(request.parameters), asked, {}, request.id))
        if isinstance(answer, BaseException):
            status = getattr(answer, "status", None) or getattr(answer, "status_code", None)
            raise TritonFailure(
                f"in ensemble '{self.name}', {answer}",
                status if isinstance(status, int) else INTERNAL,
            )
        outputs = answer.get("outputs", []) if isinstance(answer, dict) else answer
        return {step.writes[o[0]]: o[1] for o in outputs if o[0] in step.writes}

    def _unknown(self, step: Step) -> TritonFailure:
        """Triton's words for a step model that is no longer loaded."""
        if step.version >= 0:
            return TritonFailure(
                f"in ensemble '{self.name}', Request for unknown model: '{step.model}' version "
                f"{step.version} is not at ready state",
                UNAVAILABLE,
            )
        return TritonFailure(
            f"in ensemble '{self.name}', Request for unknown model: '{step.model}' has no "
            "available versions",
            NOT_FOUND,
        )


def build(t: Any) -> EnsembleAdapter:
    """The adapter of an ensemble (``t``: ``triton.repository.TritonModel``), once the
    models it names are checked."""
    targets = check(t.config, t.folder.parent)
    adapter = EnsembleAdapter(t.config, t.version)
    # Each step model bounds its own calls: the ensemble runs as many requests at once as
    # its steps' instances add up to.
    adapter.concurrency = max(1, sum(m.config.instance_count for m in targets))
    return adapter
