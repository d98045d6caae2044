"""Row <-> record mapping, in one place.

Every table that backs a record has exactly the record's fields as columns (plus, for
artifacts, an inline ``content`` BLOB that ``read_artifact`` returns). A ``Mapping`` knows a
record's columns, which of them hold JSON text or 0/1 booleans and which take a fixed set of
values (the ``Literal`` types of ``records``), and converts in both directions. Column names in
generated SQL come only from these mappings, never from a caller, so every statement stays
parameterized.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from agi_jupyter import records
from agi_jupyter.errors import UsageError
from agi_jupyter.records import (
    Artifact,
    Capability,
    Message,
    Part,
    Run,
    RunEvent,
    Session,
    Task,
    ToolCall,
    WebhookEvent,
)

R = TypeVar("R")
Row = Sequence[Any]

ALWAYS_SET = frozenset({"id", "created_at", "updated_at"})


def dumps(value: Any) -> str:
    """Compact JSON text for a JSON column; a value JSON cannot hold is the caller's mistake."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise UsageError(f"value is not JSON serializable: {e}") from e


def _literal_choices(cls: type[Any]) -> dict[str, frozenset[str]]:
    """The allowed values of each field typed with a ``Literal`` alias (status, role, ...)."""
    hints = typing.get_type_hints(cls)
    return {
        name: frozenset(str(arg) for arg in typing.get_args(hint))
        for name, hint in hints.items()
        if typing.get_origin(hint) is typing.Literal
    }


class Mapping(Generic[R]):
    """How one record class maps onto the columns of one table."""

    def __init__(
        self,
        cls: type[R],
        table: str,
        *,
        json_columns: Iterable[str] = (),
        bool_columns: Iterable[str] = (),
        exclude: Iterable[str] = (),
        readonly: Iterable[str] = (),
    ) -> None:
        excluded = set(exclude)
        fields = [f for f in dataclasses.fields(typing.cast(Any, cls)) if f.name not in excluded]
        self.cls = cls
        self.table = table
        self.columns: tuple[str, ...] = tuple(f.name for f in fields)
        self.json_columns = frozenset(json_columns)
        self.bool_columns = frozenset(bool_columns)
        self.choices = {k: v for k, v in _literal_choices(cls).items() if k in self.columns}
        self.updatable = frozenset(self.columns) - ALWAYS_SET - set(readonly)
        # What a NULL JSON column reads back as: the field's default ({} for dict fields).
        self._null: dict[str, Callable[[], Any]] = {
            f.name: f.default_factory
            for f in fields
            if f.name in self.json_columns and f.default_factory is not dataclasses.MISSING
        }

    def select(self, alias: str = "") -> str:
        """The column list of a SELECT that ``from_row`` can read."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(prefix + c for c in self.columns)

    def from_row(self, row: Row) -> R:
        values = dict(zip(self.columns, row, strict=True))
        for name in self.json_columns:
            raw = values[name]
            if raw is None:
                factory = self._null.get(name)
                values[name] = factory() if factory is not None else None
            else:
                values[name] = json.loads(raw)
        for name in self.bool_columns:
            values[name] = bool(values[name])
        return self.cls(**values)

    def to_row(self, record: R) -> dict[str, Any]:
        """Every column of a record, ready to insert."""
        return self.encode({c: getattr(record, c) for c in self.columns})

    def encode(self, values: dict[str, Any]) -> dict[str, Any]:
        """Check values against the allowed choices and convert them to column values."""
        out: dict[str, Any] = {}
        for name, value in values.items():
            allowed = self.choices.get(name)
            if allowed is not None and (not isinstance(value, str) or value not in allowed):
                options = ", ".join(sorted(allowed))
                raise UsageError(f"invalid {name} {value!r} for {self.table} (one of: {options})")
            if name in self.json_columns:
                out[name] = None if value is None else dumps(value)
            elif name in self.bool_columns:
                out[name] = int(bool(value))
            else:
                out[name] = value
        return out

    def changes(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Validate the field names of an update (unknown or read-only: ``UsageError``)."""
        bad = sorted(set(changes) - self.updatable)
        if bad:
            allowed = ", ".join(sorted(self.updatable))
            raise UsageError(
                f"cannot update {', '.join(bad)} of {self.table} (updatable: {allowed})"
            )
        return self.encode(changes)

    def check_new(self, fields: dict[str, Any], *, fixed: Iterable[str]) -> None:
        """Validate the field names given to a create call (``fixed`` are set by the store)."""
        bad = sorted(set(fields) - (set(self.columns) - set(fixed)))
        if bad:
            raise UsageError(f"unknown or store-managed {self.table} fields: {', '.join(bad)}")


SESSIONS = Mapping(
    Session,
    "sessions",
    json_columns=("tool_config", "metadata"),
    readonly=("message_count", "input_tokens", "output_tokens", "cost_usd"),
)
MESSAGES = Mapping(
    Message,
    "messages",
    json_columns=("meta",),
    exclude=("parts",),
    readonly=("session_id", "role", "text"),
)
RUNS = Mapping(
    Run,
    "runs",
    json_columns=("error", "loop_state", "usage"),
    readonly=("session_id", "version"),
)
RUN_EVENTS = Mapping(RunEvent, "run_events", json_columns=("payload",))
TOOL_CALLS = Mapping(
    ToolCall,
    "tool_calls",
    json_columns=("args", "result"),
    bool_columns=("is_error",),
    readonly=("run_id", "tool_call_id"),
)
ARTIFACTS = Mapping(Artifact, "artifacts", json_columns=("data",))
WEBHOOK_EVENTS = Mapping(WebhookEvent, "webhook_events", json_columns=("payload",))
TASKS = Mapping(Task, "tasks")
CAPABILITIES = Mapping(Capability, "capabilities", json_columns=("tool_schema",))


# --- message parts: stored as (type, content JSON without "type") -----------------------------

_PART_CLASSES: dict[str, type[Any]] = {
    cls.__dataclass_fields__["type"].default: cls for cls in typing.get_args(Part)
}


def part_row(part: Part) -> tuple[str, str]:
    """The (type, content) columns of a message part."""
    data = records.part_to_dict(part)
    kind = str(data.pop("type"))
    return kind, dumps(data)


def loads_many(texts: Sequence[str | None]) -> list[Any]:
    """Parse many JSON texts with one ``json.loads`` call (NULL reads as None): loading a long
    history is dominated by per-call overhead otherwise."""
    return list(json.loads("[" + ",".join(t or "null" for t in texts) + "]")) if texts else []


def part_from_data(kind: str, data: dict[str, Any]) -> Part:
    """A part from its ``type`` column and its decoded ``content``."""
    cls = _PART_CLASSES.get(kind)
    if cls is not None:
        try:
            part: Part = cls(**data)
            return part
        except TypeError:
            pass  # written by another version: let part_from_dict drop the unknown keys
    return records.part_from_dict({**data, "type": kind})


def messages_from_rows(rows: Sequence[Row], parts: dict[str, list[Part]]) -> list[Message]:
    """Message rows (``MESSAGES.select()`` order, extra trailing columns ignored) with their
    parts: the hot path of loading a history."""
    metas = loads_many([row[6] for row in rows])
    messages = []
    for row, meta in zip(rows, metas, strict=True):
        id_, session_id, role, run_id, status, text, _, created_at, updated_at = row[:9]
        messages.append(
            Message(
                id=id_,
                session_id=session_id,
                role=role,
                run_id=run_id,
                status=status,
                text=text or "",
                meta=meta or {},
                parts=parts[id_],
                created_at=created_at,
                updated_at=updated_at,
            )
        )
    return messages


# --- opaque cursors ----------------------------------------------------------------------------


def encode_cursor(table: str, rowid: int) -> str:
    """An opaque page cursor: the position after which the next page of ``table`` starts."""
    raw = json.dumps([table, rowid], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, table: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        kind, rowid = json.loads(raw)
    except (binascii.Error, ValueError, TypeError) as e:
        raise UsageError(f"invalid cursor {cursor!r}") from e
    if kind != table or isinstance(rowid, bool) or not isinstance(rowid, int):
        raise UsageError(f"invalid cursor {cursor!r} for {table}")
    return rowid


def check_limit(limit: int | None, *, name: str = "limit") -> int:
    """A LIMIT value; ``None`` means no limit (-1 in SQLite)."""
    if limit is None:
        return -1
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"{name} must be a positive integer, got {limit!r}")
    return limit
