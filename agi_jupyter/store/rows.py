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
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import orjson

from agi_jupyter import records, run_state_codec
from agi_jupyter.errors import UsageError
from agi_jupyter.records import (
    Artifact,
    Capability,
    Change,
    KernelExecution,
    Message,
    Part,
    Run,
    RunEvent,
    Session,
    Task,
    TextPart,
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
        codecs: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] | None = None,
    ) -> None:
        excluded = set(exclude)
        fields = [f for f in dataclasses.fields(typing.cast(Any, cls)) if f.name not in excluded]
        self.cls = cls
        self.table = table
        self.columns: tuple[str, ...] = tuple(f.name for f in fields)
        self.json_columns = frozenset(json_columns)
        # JSON columns whose field holds a typed record: (to JSON, from JSON) of its codec
        self.codecs = dict(codecs or {})
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
        for name, (_, decode) in self.codecs.items():
            values[name] = decode(values[name])
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
            if name in self.codecs:
                value = self.codecs[name][0](value)
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
    json_columns=("tool_config", "metadata", "budget"),
    readonly=(
        "message_count",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "cached_input_tokens",
    ),
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
    readonly=("session_id", "version", "epoch"),
    codecs={"loop_state": (run_state_codec.to_column, run_state_codec.from_column)},
)
RUN_EVENTS = Mapping(RunEvent, "run_events", json_columns=("payload",))
TOOL_CALLS = Mapping(
    ToolCall,
    "tool_calls",
    json_columns=("args", "result", "approval"),
    bool_columns=("is_error",),
    readonly=("run_id", "tool_call_id"),
)
ARTIFACTS = Mapping(Artifact, "artifacts", json_columns=("data",))
WEBHOOK_EVENTS = Mapping(WebhookEvent, "webhook_events", json_columns=("payload",))
TASKS = Mapping(Task, "tasks")
CAPABILITIES = Mapping(Capability, "capabilities", json_columns=("tool_schema",))
CHANGES = Mapping(Change, "changes")
EXECUTIONS = Mapping(KernelExecution, "executions")


# --- message parts --------------------------------------------------------------------------
#
# A message's parts are stored twice, written in the same transaction: as rows of
# ``message_parts`` (type, content JSON without "type"; what artifacts and SQL queries refer to)
# and as the ``messages.parts`` column, the JSON array of the parts' dicts
# (``records.part_to_dict``), which messages are read from. A NULL ``parts`` column means "read
# ``message_parts``" (see migrations.m005_messages_parts_column).

_PART_CLASSES: dict[str, type[Any]] = {
    cls.__dataclass_fields__["type"].default: cls for cls in typing.get_args(Part)
}


def plain_dataclass(cls: type[Any]) -> bool:
    """Whether ``__init__`` of dataclass ``cls`` does nothing but assign every field, so that a
    bare instance (``object.__new__``) given a dict of all its fields, in field order, as
    ``__dict__`` is the same object ``__init__`` would make."""
    params = cls.__dataclass_params__
    return (
        not params.frozen
        and "__slots__" not in cls.__dict__
        and not hasattr(cls, "__post_init__")
        and all(f.init for f in dataclasses.fields(cls))
    )


# Part classes that a decoded dict with exactly their fields can become without ``__init__``
# (``_part``): type -> (class, field names). The keys are checked as a set; they
# are in field order as ``part_to_dict`` (and the m005 backfill) wrote them.
_DIRECT_PARTS: dict[str, tuple[type[Any], frozenset[str]]] = {
    kind: (cls, frozenset(f.name for f in dataclasses.fields(cls)))
    for kind, cls in _PART_CLASSES.items()
    if plain_dataclass(cls)
}
# ``messages_from_cursor`` makes messages without ``__init__``, assigning their slots in this
# order (the undecoded ones' ``meta`` and ``parts`` left unset): any other field would be left
# unset too.
_ASSIGNED = [
    "id",
    "session_id",
    "role",
    "run_id",
    "status",
    "text",
    "meta",
    "parts",
    "created_at",
    "updated_at",
]
if [f.name for f in dataclasses.fields(Message)] != _ASSIGNED:
    raise TypeError("records.Message's fields changed: update messages_from_cursor")

# What ``messages_from_cursor`` reads, in this order: a message's columns but ``session_id`` (the
# same for a whole history, so given once); ``updated_at`` as NULL when it equals
# ``created_at`` (never updated: both fields then share one string); then its ``meta`` and
# ``parts`` JSON texts joined by a comma, NULL as ``null``: the items of a JSON array, one text
# per message to keep undecoded (``records.PARTS_JSON``), and the texts of many rows join into
# one JSON array to decode at once.
MESSAGE_SELECT = (
    "id, role, run_id, status, text, created_at, nullif(updated_at, created_at),"
    " coalesce(meta, 'null') || ',' || coalesce(parts, 'null')"
)
_NO_PARTS = ",null"  # how the last column ends when ``parts`` is NULL


def parts_json(dicts: Sequence[dict[str, Any]]) -> str:
    """The ``messages.parts`` column of a message: the JSON array of its parts' dicts."""
    return dumps(list(dicts))


def part_row(data: dict[str, Any]) -> tuple[str, str]:
    """The (type, content) columns of a ``message_parts`` row, from the part's dict."""
    content = dict(data)
    kind = str(content.pop("type"))
    return kind, dumps(content)


# Rows decoded at a time by an eager read: the JSON texts, decoded values and records of a batch
# stay in the CPU caches (measured ~10% faster than decoding 10,000 rows at once), and memory
# stays bounded.
_BATCH = 1000


def _loads(text: str) -> Any:
    """Parse a JSON text: orjson (about twice as fast as ``json``), falling back to ``json``
    for what only ``json`` reads (``NaN`` / ``Infinity``, which ``json.dumps`` writes for such
    floats, and integers over 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def loads_many(texts: Sequence[str | None]) -> list[Any]:
    """Parse many JSON texts with one ``json.loads`` call (NULL reads as None): per-call
    overhead would dominate otherwise."""
    return list(json.loads("[" + ",".join(t or "null" for t in texts) + "]")) if texts else []


def part_from_data(kind: str, data: dict[str, Any]) -> Part:
    """A part from a ``message_parts`` row: its ``type`` column and its decoded ``content``."""
    cls = _PART_CLASSES.get(kind)
    if cls is not None:
        try:
            part: Part = cls(**data)
            return part
        except TypeError:
            pass  # written by another version: let part_from_dict drop the unknown keys
    return records.part_from_dict({**data, "type": kind})


def _parts(datas: list[dict[str, Any]]) -> list[Part]:
    """Parts from their stored dicts, in place (the list becomes the list of parts). A dict
    with exactly its class's fields becomes the ``__dict__`` of a bare instance: per-object
    overhead is what dominates a long history, and the part comes out the same (see
    ``plain_dataclass``). Any other (written by another version) goes through
    ``records.part_from_dict``, which drops unknown keys."""
    direct_parts = _DIRECT_PARTS
    new = object.__new__
    for i, data in enumerate(datas):
        direct = direct_parts.get(data.get("type"))  # type: ignore[arg-type]
        if direct is not None and data.keys() == direct[1]:
            part = new(direct[0])
            part.__dict__ = data
        else:
            part = records.part_from_dict(data)
        datas[i] = part
    return typing.cast(list[Part], datas)


def _texts_of(datas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored dicts of the non-empty text parts (and of the ``@`` mentions and the images
    attached to a user message: those whose bytes are an artifact)."""
    return [
        d
        for d in datas
        if (d.get("text") and d.get("type") in ("text", "mention"))
        or (d.get("type") == "image" and d.get("artifact_id"))
    ]


def decode_message(stored: str, text_only: bool) -> tuple[records.JSON, list[Part]]:
    """The meta and parts of a message left undecoded by ``messages_from_cursor(lazy=True)``
    (``records.Message.__getattr__``): its stored ``meta,parts`` text; ``text_only``: its
    non-empty text parts only."""
    meta, datas = _loads("[" + stored + "]")
    return meta or {}, _parts(_texts_of(datas) if text_only else datas)


records.Message.decoder = decode_message


class RowSource(typing.Protocol):
    """An executed SELECT of either backend (``sqlite3`` or ``psycopg`` cursor)."""

    def __iter__(self) -> Iterator[Any]: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...


def messages_from_cursor(
    cursor: RowSource, session_id: str, *, text_only: bool = False, lazy: bool = False
) -> tuple[list[Message], list[int]]:
    """The rows of an executed ``SELECT {MESSAGE_SELECT}`` of one session's messages as
    records (the hot path of loading a history); and the positions of the messages whose
    ``parts`` column is NULL: their ``parts`` are left empty for the caller to read from
    ``message_parts``. ``text_only``: the messages keep only their non-empty text parts.

    Each record is a bare instance whose slots are assigned one by one, not built by
    ``__init__`` (its parts: bare instances given their ``__dict__``, ``plain_dataclass``):
    per-object overhead is what dominates a long history. ``lazy``: each message's ``meta``
    and ``parts`` are left as the JSON texts read, decoded when first read
    (``records.Message.__getattr__``): a history is then little more than the rows of its
    SELECT, and a reader of roles and texts never pays for decoding the rest; but decoding
    them one message at a time costs more than the eager read, which decodes the texts of a
    batch of rows with one ``orjson.loads`` call.
    """
    if lazy:
        return _deferred_messages(cursor, session_id, text_only=text_only)
    new = object.__new__
    direct_parts = _DIRECT_PARTS
    messages: list[Message] = []
    missing: list[int] = []
    while rows := cursor.fetchmany(_BATCH):
        decoded = iter(_loads("[" + ",".join([row[7] for row in rows]) + "]"))
        for (id_, role, run_id, status, text, created_at, updated_at, _), meta, parts in zip(
            rows, decoded, decoded, strict=True
        ):
            if parts is None:
                missing.append(len(messages))
                parts = []
            else:  # the decoded list becomes the message's list of parts (``_parts``, inlined)
                if text_only:
                    for data in parts:  # a list of non-empty texts is kept as it is
                        if data.get("type") != "text" or not data.get("text"):
                            parts = _texts_of(parts)
                            break
                for i, data in enumerate(parts):
                    direct = direct_parts.get(data.get("type"))
                    if direct is not None and data.keys() == direct[1]:
                        part = new(direct[0])
                        part.__dict__ = data
                    else:
                        part = records.part_from_dict(data)
                    parts[i] = part
            message = new(Message)
            message.id = id_
            message.session_id = session_id
            message.role = role
            message.run_id = run_id
            message.status = status
            message.text = text or ""
            message.meta = meta or {}
            message.parts = parts
            message.created_at = created_at
            message.updated_at = created_at if updated_at is None else updated_at
            messages.append(message)
    return messages, missing


def _deferred_messages(
    cursor: RowSource, session_id: str, *, text_only: bool
) -> tuple[list[Message], list[int]]:
    """``messages_from_cursor(lazy=True)``. The rows are iterated, not fetched as one list:
    each row tuple is freed as soon as its record holds its values."""
    no_parts = _NO_PARTS
    new = object.__new__
    messages: list[Message] = []
    missing: list[int] = []
    for id_, role, run_id, status, text, created_at, updated_at, stored in cursor:
        # The slots assigned one by one: a specialized store each, cheaper than any call.
        message = new(Message)
        message.id = id_
        message.session_id = session_id
        message.role = role
        message.run_id = run_id
        message.status = status
        message.text = text or ""
        if stored.endswith(no_parts):  # its parts are read from ``message_parts`` by the caller
            missing.append(len(messages))
            message.meta = _loads("[" + stored + "]")[0] or {}
            message.parts = []
        elif text_only:
            message._texts_json = stored
        else:
            message._parts_json = stored
        message.created_at = created_at
        message.updated_at = created_at if updated_at is None else updated_at
        messages.append(message)
    return messages, missing


def keep_texts(messages: Iterable[Message]) -> None:
    """Leave each message only its non-empty text parts (the simple history view), in place
    (for the messages whose parts were read from ``message_parts``:
    ``messages_from_cursor(text_only=True)`` filters the others). A message holding nothing
    else keeps its list as it is."""
    text_part = TextPart
    for message in messages:
        parts = message.parts
        for part in parts:
            if type(part) is not text_part or not part.text:
                message.parts = [p for p in parts if type(p) is text_part and p.text]
                break


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
