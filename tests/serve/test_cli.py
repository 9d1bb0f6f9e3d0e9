"""The ``windowkeeper serve`` command: flags, the config file, and the default store in the user's data dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from windowkeeper.errors import ConfigurationError
from windowkeeper.serve import ServeConfig, load_config
from windowkeeper.serve.config import default_store
from windowkeeper.testing.fake_servers import FakeOpenAIServer

from .harness import SRC, process


def test_flags_win_over_the_file_and_unknown_keys_are_named(tmp_path: Path) -> None:
    path = tmp_path / "gw.toml"
    path.write_text('[serve]\nbudget = 64000\nport = 9000\nopenai-base-url = "http://upstream:1/v1"\n')
    config = load_config(path, port=9100, budget=None)
    assert (config.budget, config.port, config.openai_base_url, config.host) == (
        64000,
        9100,
        "http://upstream:1/v1",
        "127.0.0.1",
    )
    path.write_text("budgett = 1\n")
    with pytest.raises(ConfigurationError, match="unknown setting 'budgett'"):
        load_config(path)
    with pytest.raises(ConfigurationError, match="budget must be a number of tokens >= 256"):
        ServeConfig(budget=10)
    with pytest.raises(ConfigurationError, match="openai_base_url must be an http"):
        ServeConfig(openai_base_url="api.openai.com")


def test_the_command_serves_with_its_store_in_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_store() == f"sqlite:///{tmp_path / 'data' / 'windowkeeper' / 'gateway.sqlite3'}"
    with FakeOpenAIServer() as upstream, process("--budget", "4000", "--openai-base-url", upstream.base_url) as url:
        response = httpx.post(
            url + "/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert response.status_code == 200
    assert (tmp_path / "data" / "windowkeeper" / "gateway.sqlite3").is_file()


def test_a_bad_flag_exits_2_with_the_reason() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "windowkeeper.cli", "serve", "--budget", "12", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "budget must be a number of tokens >= 256 (e.g. 128000), got 12" in done.stderr
