"""Per-graph resolution of ``injectq`` ``Inject[...]`` markers and of the runtime's named parameters.

The reference lets a node declare ``ctx_mgr: BaseContextManager | None = Inject[BaseContextManager]``. injectq would
resolve that from one process-wide container, so two graphs with different managers would see each other's. We
resolve markers ourselves, against the objects a single compiled graph owns, and never touch injectq's container.

Inspecting an ``Inject`` proxy is delicate: its ``__class__`` and ``isinstance`` hooks resolve the dependency from
the global container. We only look at it through ``type()`` and ``object.__getattribute__``, which bypass those hooks.

injectq is optional (the ``di`` extra). A default can only be an ``Inject`` marker if the caller imported injectq to
create it, so we look the class up in ``sys.modules`` and never import injectq ourselves: graphs without markers run
on a base install.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, Literal

from ..errors import GraphCompileError, MissingDependencyError

ParamKind = Literal["state", "config", "inject", "tool_call_id"]


def inject_marker_type() -> type | None:
    """injectq's ``Inject`` class if the process has imported injectq (only then can a marker exist), else None."""
    module = sys.modules.get("injectq")
    marker = getattr(module, "Inject", None) if module is not None else None
    return marker if isinstance(marker, type) else None


def require_injectq() -> type:
    """injectq's ``Inject`` class, importing it; a `MissingDependencyError` naming the ``di`` extra if absent."""
    try:
        from injectq import Inject
    except ImportError as exc:
        raise MissingDependencyError("injectq", "di") from exc
    marker: type = Inject
    return marker


def inject_service(default: object) -> object | None:
    """The service type of an ``Inject[T]`` marker, or None when ``default`` is not a marker."""
    marker = inject_marker_type()
    if marker is None or type(default) is not marker:
        return None
    service: object = object.__getattribute__(default, "service_type")
    return service


@dataclass(frozen=True)
class ParamPlan:
    """How the runtime fills one parameter of a node, condition or tool."""

    name: str
    kind: ParamKind
    positional: bool
    service: object = None
    optional: bool = False


class Resolver:
    """Answers ``Inject[T]`` for one graph: the first registered object that is an instance of ``T``.

    Registered objects are the graph's own (its context manager, checkpointer, the graph itself), so isolation
    between graphs follows from each compiled graph holding its own resolver.
    """

    def __init__(self, provided: Sequence[object]) -> None:
        self._provided = [p for p in provided if p is not None]

    def register(self, obj: object) -> None:
        """Make ``obj`` injectable too (the compiled graph registers itself once it exists)."""
        self._provided.append(obj)

    def resolve(self, service: object) -> object | None:
        if not isinstance(service, type):
            return None
        for obj in self._provided:
            if isinstance(obj, service):
                return obj
        return None


def _allows_none(fn: Callable[..., Any], param: inspect.Parameter) -> bool:
    annotation: Any = param.annotation
    if annotation is inspect.Parameter.empty:
        return True
    if isinstance(annotation, str):
        try:
            hints = typing.get_type_hints(fn)
            annotation = hints.get(param.name, annotation)
        except Exception:
            return "None" in annotation or "Optional" in annotation
        if isinstance(annotation, str):
            return "None" in annotation or "Optional" in annotation
    if annotation is None or annotation is NoneType or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is UnionType:
        return NoneType in typing.get_args(annotation)
    return False


def plan_call(
    fn: Callable[..., Any],
    *,
    owner: str,
    state_param: bool = True,
    tool_params: bool = False,
) -> list[ParamPlan]:
    """Decide once, at compile time, what each parameter of ``fn`` receives.

    ``state_param``: the first positional parameter (or one named ``state``) receives the state. ``config`` by name
    receives the run config; ``Inject[T]`` defaults receive the graph's object. With ``tool_params`` (tools), the
    parameters ``state``/``config``/``tool_call_id`` are filled only by name and everything else is left to the
    model's arguments. A required parameter the runtime cannot fill is a compile error naming ``owner``.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise GraphCompileError(f"{owner}: cannot read the signature of {fn!r} ({exc})") from exc
    plans: list[ParamPlan] = []
    state_taken = False
    for param in sig.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        positional = param.kind is inspect.Parameter.POSITIONAL_ONLY
        service = inject_service(param.default)
        if service is not None:
            plans.append(
                ParamPlan(param.name, "inject", positional, service=service, optional=_allows_none(fn, param)),
            )
            continue
        if param.name == "config":
            plans.append(ParamPlan(param.name, "config", positional))
            continue
        if tool_params:
            if param.name == "state":
                plans.append(ParamPlan(param.name, "state", positional))
            elif param.name == "tool_call_id":
                plans.append(ParamPlan(param.name, "tool_call_id", positional))
            continue
        if (
            state_param
            and not state_taken
            and (
                param.name == "state"
                or param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            )
        ):
            plans.append(ParamPlan(param.name, "state", positional))
            state_taken = True
            continue
        if param.default is inspect.Parameter.empty:
            raise GraphCompileError(
                f"{owner}: parameter {param.name!r} of {getattr(fn, '__name__', fn)!r} has no default and the graph "
                "cannot fill it; nodes receive 'state', 'config' and Inject[...] defaults only",
            )
    return plans


def check_injectable(plans: Sequence[ParamPlan], resolver: Resolver, *, owner: str) -> None:
    """Fail at compile time for a non-optional ``Inject[T]`` the graph cannot provide."""
    for plan in plans:
        if plan.kind != "inject" or plan.optional:
            continue
        if resolver.resolve(plan.service) is None:
            name = getattr(plan.service, "__name__", repr(plan.service))
            raise GraphCompileError(
                f"{owner}: parameter {plan.name!r} asks for Inject[{name}] but this graph has none; "
                f"annotate it as '{name} | None' or register one with the StateGraph",
            )


def build_arguments(
    plans: Sequence[ParamPlan],
    *,
    state: object,
    config: dict[str, Any],
    resolver: Resolver,
    tool_call_id: str | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for one call according to ``plans``."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for plan in plans:
        value: Any
        if plan.kind == "state":
            value = state
        elif plan.kind == "config":
            value = config
        elif plan.kind == "tool_call_id":
            value = tool_call_id
        else:
            value = resolver.resolve(plan.service)
        if plan.positional:
            args.append(value)
        else:
            kwargs[plan.name] = value
    return args, kwargs
