"""What running every command as a new user found: hints that could not be pasted, numbers that did not match
the file, messages that did not name the bad value."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from windowkeeper.cli.app import app

runner = CliRunner()


def test_the_jq_hint_names_the_file_the_user_passed(tmp_path: Path) -> None:
    """The hint for a LongMemEval question said ``FILE`` where the path goes, so it could not be pasted."""
    folder = tmp_path / "my data"
    folder.mkdir()
    question = folder / "q 1.json"
    chat = [{"role": "user", "content": "I moved to Lisbon."}, {"role": "assistant", "content": "Welcome!"}]
    question.write_text(json.dumps({"question_id": "q1", "question": "Where?", "haystack_sessions": [chat]}))
    for command in ("inspect", "compact"):
        result = runner.invoke(app, [command, str(question)])
        assert result.exit_code == 2
        assert f"jq '.haystack_sessions[0]' '{question}' > session.json" in result.stderr
        assert "FILE" not in result.stderr
