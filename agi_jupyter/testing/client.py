"""``FakeLLMClient``: script a fake server in another process through its control endpoints.

Standard library only (``urllib``), so a notebook kernel can use it without extra packages::

    fake = FakeLLMClient(os.environ["FAKE_LLM_URL"])
    fake.enqueue(Turn(text="hello"))
    fake.requests()[-1].body
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.parse import quote

from agi_jupyter.testing.script import RecordedRequest, Turn, request_from_dict, turn_to_dict


class FakeLLMClient:
    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def enqueue(self, *turns: Turn) -> None:
        self._call("POST", "/_fake/enqueue", [turn_to_dict(turn) for turn in turns])

    def requests(self) -> list[RecordedRequest]:
        return [request_from_dict(item) for item in self._call("GET", "/_fake/requests")]

    def reset(self) -> None:
        self._call("POST", "/_fake/reset", {})

    def complete_background(self, response_id: str) -> None:
        self._call("POST", "/_fake/complete/" + quote(response_id, safe=""), {})

    def release(self) -> None:
        self._call("POST", "/_fake/release", {})

    def closed_streams(self) -> list[tuple[str, float]]:
        """Streams their client closed before their end: (path, the server's
        ``time.monotonic()`` when it saw it)."""
        return [(i["path"], float(i["monotonic"])) for i in self._call("GET", "/_fake/closed")]

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/_fake/health")
        return result

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.loads(response.read())
