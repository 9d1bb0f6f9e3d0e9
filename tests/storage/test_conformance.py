"""The storage conformance suite, parametrized over every registered backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from windowkeeper.testing import conformance

CASES = conformance.cases()


@pytest.mark.parametrize(("backend_name", "spec_name"), CASES, ids=[f"{b}-{s}" for b, s in CASES])
async def test_conformance(
    backend_name: str,
    spec_name: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    server = conformance.backends()[backend_name].server
    if server is not None:
        request.getfixturevalue(f"{server}_server")
    backend = conformance.make_backend(backend_name, tmp_path)
    try:
        measured = await conformance.run_spec(spec_name, backend)
    finally:
        await backend.aclose()
    for key, value in measured.items():
        print(f"[{backend_name}] {spec_name}: {key} = {value:,.1f}")


def test_every_backend_runs_every_core_spec() -> None:
    names = {b for b, _ in CASES}
    assert names == {"memory", "sqlite", "postgres", "redis"}
    for backend in ("sqlite", "postgres", "redis"):
        assert {s for b, s in CASES if b == backend} == set(conformance.specs())
    assert {s for b, s in CASES if b == "memory"} == {
        "round_trip_all_blocks",
        "thread_isolation",
        "idempotent_append",
        "concurrent_appends",
        "versioned_records",
        "rejects_bad_data",
        "log_ranges_and_delta_checkpoints",
        "codec_limits",
        "adapters_on_fake_servers",
    }
