"""Keep secrets out of what is stored and shown: tool arguments, results and errors.

A ``Redactor`` is built from a mapping of environment variables (the application passes
``os.environ``; this module never reads it). The values of variables whose names look secret
(``*_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``, ...) and that are at least 8 characters
long are replaced by ``[REDACTED:<NAME>]`` wherever they appear.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SECRET_NAME = re.compile(
    r"(_KEY|_TOKEN|_PAT)$|^(API_KEY|TOKEN)$|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE
)
MIN_SECRET_LENGTH = 8


def looks_secret(name: str) -> bool:
    """Whether an environment variable name suggests its value is a secret."""
    return bool(SECRET_NAME.search(name))


class Redactor:
    """Replaces known secret values in strings and, recursively, in JSON values."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        extra: Mapping[str, str] | None = None,
        min_length: int = MIN_SECRET_LENGTH,
    ) -> None:
        secrets: dict[str, str] = {}
        for name, value in (env or {}).items():
            if looks_secret(name) and isinstance(value, str) and len(value) >= min_length:
                secrets.setdefault(value, name)
        for name, value in (extra or {}).items():
            if len(value) >= min_length:
                secrets[value] = name
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = sorted(secrets.items(), key=lambda item: len(item[0]), reverse=True)
        self._pattern = (
            re.compile("|".join(re.escape(value) for value, _ in self._secrets))
            if self._secrets
            else None
        )
        self._names = dict(self._secrets)

    @property
    def names(self) -> list[str]:
        """The names of the variables whose values are redacted (never the values)."""
        return sorted(set(self._names.values()))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def redact_text(self, value: str) -> str:
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(lambda m: f"[REDACTED:{self._names[m.group(0)]}]", value)

    def redact_json(self, value: Any) -> Any:
        """A copy of a JSON value with every string (keys included) redacted."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {self.redact_text(str(k)): self.redact_json(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_json(v) for v in value]
        return value

    __call__ = redact_json
