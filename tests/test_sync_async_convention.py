"""The package's one sync/async rule (docs/architecture.md, "Sync and async"), checked over the public surface.

A plain name and its ``a``-prefixed twin on one object are the sync and the async form of one operation; a class
that has such twins names every coroutine with an ``a``; an interface that is async through and through names its
coroutines plainly; no public name says its form with a suffix; a protocol implementers write as one coroutine
gets its sync form as a module function; every built-in context manager writes only its planning core and gets
``trim_context``/``atrim_context`` from the base.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from typing import Any

from test_public_api import PUBLIC_SURFACE

HOST_PROTOCOLS = {"WindowkeeperSession"}
"""Classes whose method names a host SDK fixes (the OpenAI Agents SDK's ``Session``: ``get_items``, ...)."""


LIFECYCLE = {"aclose"}
"""``close``/``aclose``: releasing what an object holds is offered both ways even on an async-through interface
(``LLMSummarizer``), as httpx and the provider SDKs do, so it does not make a class one with twins."""


def _public_classes() -> Iterator[type]:
    seen: set[type] = set()
    for module_name, names in PUBLIC_SURFACE.items():
        module = importlib.import_module(module_name)
        for name in sorted(names):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and obj not in seen:
                seen.add(obj)
                yield obj


def _methods(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, _ in inspect.getmembers(cls):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, staticmethod | classmethod):
            raw = raw.__func__
        if inspect.isfunction(raw):
            out[name] = raw
    return out


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


def test_no_public_name_marks_its_form_with_a_suffix() -> None:
    found = [f"{module}.{name}" for module, names in PUBLIC_SURFACE.items() for name in names if name.endswith("_sync")]
    found += [f"{cls.__qualname__}.{name}" for cls in _public_classes() for name in _methods(cls) if "_sync" in name]
    assert not found, f"a sync form takes the plain name and its async twin the a-prefixed one: {found}"


def test_a_twin_pair_is_the_sync_and_the_async_form() -> None:
    wrong = []
    pairs = 0
    for cls in _public_classes():
        methods = _methods(cls)
        for name, fn in methods.items():
            twin = methods.get(name[1:]) if name.startswith("a") else None
            if twin is None:
                continue
            pairs += 1
            if not _is_async(fn) or _is_async(twin):
                wrong.append(f"{cls.__qualname__}.{name[1:]}/{name}")
    assert not wrong, f"the plain name must be sync and the a-prefixed one async: {wrong}"
    assert pairs >= 10  # trim_context/atrim_context, fit/afit, restore/arestore, get_messages/aget_messages, ...


def test_a_class_with_twins_names_every_coroutine_with_an_a() -> None:
    plain = []
    for cls in _public_classes():
        if cls.__name__ in HOST_PROTOCOLS:
            continue
        methods = _methods(cls)
        if not any(n.startswith("a") and n[1:] in methods and n not in LIFECYCLE for n in methods):
            continue  # async through and through, or sync only: plain names
        plain += [f"{cls.__qualname__}.{n}" for n, fn in methods.items() if _is_async(fn) and not n.startswith("a")]
    assert not plain, f"a coroutine on a class with sync/async twins needs an a-prefixed name: {plain}"


def test_the_llm_protocol_gets_its_sync_form_as_a_module_function() -> None:
    from windowkeeper.llm import LLMClient, complete

    assert _is_async(LLMClient.acomplete) and not _is_async(complete)
    assert list(inspect.signature(complete).parameters) == ["client", "request"]


def test_the_extractive_summarizer_computes_the_same_summary_both_ways() -> None:
    import asyncio

    from windowkeeper import ExtractiveSummarizer, Message

    messages = [Message.text_message("The deploy key is KEY-1234 for billing-api.", message_id="m")]
    summarizer = ExtractiveSummarizer()
    assert asyncio.run(summarizer.summarize(messages, max_tokens=100)) == summarizer.extract(messages, max_tokens=100)


def _built_in_managers() -> list[type]:
    """Every context manager class the package defines (its public surface imported, so each is loaded)."""
    from windowkeeper.context import BaseContextManager

    for module_name in PUBLIC_SURFACE:
        importlib.import_module(module_name)
    found: list[type] = []
    todo: list[type] = [BaseContextManager]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("windowkeeper.") and sub not in found:
                found.append(sub)
            todo.append(sub)
    return found


def test_every_built_in_manager_gets_its_trim_entry_points_from_the_base() -> None:
    """A strategy writes its planning core only (`BaseContextManager.plan`); the base drives it both ways, so the
    sync and the async trim cannot disagree and no manager carries a hand-written pair (issue 24)."""
    from windowkeeper.context import BaseContextManager

    managers = _built_in_managers()
    names = {cls.__name__ for cls in managers}
    expected = {"MessageContextManager", "SummaryContextManager", "TokenBudgetContextManager", "MemoryContextManager"}
    assert expected <= names, f"a built-in manager was not found: {sorted(expected - names)}"
    own = [
        f"{cls.__qualname__}.{name}"
        for cls in managers
        for name in ("trim_context", "atrim_context")
        if any(
            name in vars(k) for k in cls.__mro__ if k is not BaseContextManager and issubclass(k, BaseContextManager)
        )
    ]
    assert not own, f"write the planning core (plan) and let the base provide both trim methods: {own}"
    coreless = [cls.__qualname__ for cls in managers if cls.plan is BaseContextManager.plan]
    assert not coreless, f"every built-in manager writes its planning core, plan(state): {coreless}"
