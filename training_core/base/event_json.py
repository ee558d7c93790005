"""Events to and from their JSON form: `json_safe` (what `events.jsonl` holds: strict JSON, a non-finite number
as a string) and `event_from_dict`, the forgiving reader every reader of a record goes through (base/events.py
says what it forgives). Kept apart from the kinds themselves, which are what a feature adds to."""
from __future__ import annotations

import math
import types
import typing
from dataclasses import fields
from typing import Any

from training_core.base.events import EVENTS, OLD_KINDS, Event, UnknownEvent


def _types_of(hint: Any) -> tuple[type, ...]:
    """The runtime types a field accepts (`int | None` -> (int, NoneType))."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return tuple(typing.get_origin(a) or a for a in args)


_FIELD_TYPES: dict[type[Event], dict[str, tuple[type, ...]]] = {}


def _field_types(cls: type[Event]) -> dict[str, tuple[type, ...]]:
    got = _FIELD_TYPES.get(cls)
    if got is None:
        hints = typing.get_type_hints(cls)
        got = _FIELD_TYPES[cls] = {f.name: _types_of(hints[f.name]) for f in fields(cls)}
    return got


def _fits(value: Any, accepted: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in accepted:
        return False  # JSON true is not a step number
    if float in accepted and isinstance(value, int):
        return True
    return isinstance(value, accepted)


NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float written as the string "nan", "inf" or "-inf".

    `events.jsonl` is one JSON object a line, and JSON has no NaN: Python would write the bare word `NaN`,
    which jq and Python read but JavaScript's `JSON.parse`, Go and serde refuse (a rejected command that set
    a rate of NaN echoed it so). `event_from_dict` reads these strings back as floats where a float belongs."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def event_from_dict(d: Any) -> Event | None:
    """An event from its dictionary form, or None if `d` is not one (see the module docstring)."""
    if not isinstance(d, dict) or not isinstance(d.get("kind"), str):
        return None
    step = d.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return None
    t = d.get("time", 0.0)
    t = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) else 0.0
    cls = EVENTS.get(d["kind"], OLD_KINDS.get(d["kind"]))
    if cls is None:
        return UnknownEvent(step=step, time=t, data=dict(d))
    kwargs: dict[str, Any] = {"step": step, "time": t}
    for name, accepted in _field_types(cls).items():
        if name in kwargs or name not in d:
            continue
        value = d[name]
        if float in accepted and str not in accepted and isinstance(value, str) and value in NON_FINITE:
            value = NON_FINITE[value]  # json_safe's strings
        if _fits(value, accepted):
            kwargs[name] = float(value) if float in accepted and int not in accepted and isinstance(value, int) \
                else value
    return cls(**kwargs)
