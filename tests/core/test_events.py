"""The event vocabulary has one list: the ``Event`` union. ``EVENT_TYPES`` and the server's
OpenAPI union are derived from it, so an event added to the union reaches every consumer."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, Field, is_dataclass
from typing import get_args

from agi_jupyter import events as ev
from agi_jupyter.server.models import Event as EventModel


def test_every_event_class_is_in_the_union_and_in_event_types() -> None:
    defined = {
        cls
        for _, cls in inspect.getmembers(ev, inspect.isclass)
        if is_dataclass(cls) and issubclass(cls, ev.BaseEvent) and cls is not ev.BaseEvent
    }
    assert set(get_args(ev.Event)) == defined
    assert set(ev.EVENT_TYPES.values()) == defined
    for name, cls in ev.EVENT_TYPES.items():
        assert cls.__dataclass_fields__["type"].default == name


def test_the_api_model_reads_every_event_of_the_union() -> None:
    for name, cls in ev.EVENT_TYPES.items():
        required = {
            f.name: _sample(f.type) for f in cls.__dataclass_fields__.values() if _required(f)
        }
        event = cls(**required)
        wire = ev.event_to_dict(event)
        parsed = EventModel.model_validate(wire).root
        assert type(parsed) is cls, name
        assert ev.event_from_dict(wire) == event


def _required(field: Field[object]) -> bool:
    return field.default is MISSING and field.default_factory is MISSING


def _sample(annotation: object) -> object:
    text = str(annotation)
    if "int" in text:
        return 1
    if "bool" in text:
        return True
    if "JSON" in text or "dict" in text:
        return {"id": "x"}
    return "x"
