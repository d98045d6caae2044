"""What ``Agi.ask`` returns: the final answer, the run, the run's messages and its usage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agi_jupyter.records import Message, Run


@dataclass
class RunResult:
    """What ``ask`` returns: the final answer, the run, the run's messages and its usage."""

    text: str
    run: Run
    messages: list[Message]
    usage: dict[str, Any]

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def session_id(self) -> str:
        return self.run.session_id

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text
