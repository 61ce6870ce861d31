"""Typed config: each notebook family's config is a frozen dataclass (nested ones included), built from
plain data by :func:`build`, which rejects an unknown or ill-typed key at any depth with its full path
(``accuracy.generation.max_new_tokens``) and the valid names, and changed by :func:`merge`, field by field.
Defaults live in the dataclasses only. ``Mapping[str, X]`` fields are built key by key, a ``tuple[...]``
accepts any sequence, ``int`` no bool, ``float`` an int; further checks go in ``__post_init__`` (its
``ValueError`` is reported with the section's path).
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Mapping as MappingABC
from typing import Any, Mapping, TypeVar, Union

S = TypeVar("S")


class ConfigError(ValueError):
    """A setting that does not exist or has the wrong type; the message starts with its path."""


class Choice(str, enum.Enum):
    """Base of the ``str`` enums that choose, one decision each, between the paper's text (``principled``) and
    what its released code does (``released``; ``book/released-code.md``), e.g. the prompt layout."""

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, value: Any, what: str = "choice") -> Any:
        """``value`` as a member; a ValueError naming ``what`` and the members otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"unknown {what} {value!r}; choose one of {_members(cls, value)}") from None


#: Choice values that have a new name: the error for the old one names the new one.
RENAMED_CHOICES = types.MappingProxyType({"paper_code_compat": "released"})  # rename: keep


def _members(cls: type[enum.Enum], value: Any) -> str:
    """The members of ``cls``, and the new name of ``value`` when it is an old one."""
    members = ", ".join(m.value for m in cls)
    new = RENAMED_CHOICES.get(value) if isinstance(value, str) else None
    return f"{members} ({value!r} is now called {new!r})" if new else members


def build(cls: type[S], value: Any, path: str) -> S:
    """``value`` (a mapping of field names, an instance of ``cls``, or None for the defaults) as a ``cls``;
    :class:`ConfigError` for an unknown key, a value of the wrong type or a failing check of ``cls``."""
    if isinstance(value, cls):
        return value
    if value is None:
        value = {}
    if not isinstance(value, MappingABC):
        raise ConfigError(f"{path}: expected a mapping of config keys ({', '.join(_names(cls))}), got {value!r}")
    hints = _hints(cls)
    _refuse_unknown(cls, value, path)
    kwargs = {name: _coerce(hints[name], item, f"{path}.{name}") for name, item in value.items()}
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{path}: {error}") from None


def merge(instance: S, overrides: Mapping[str, Any] | None, path: str) -> S:
    """``instance`` with ``overrides`` applied field by field (errors as :func:`build`): None keeps the current
    value, a nested section given as a mapping is merged into the current one (unless it names another
    ``name``: a different thing, built from the mapping alone)."""
    if not overrides:
        return instance
    cls = type(instance)
    fields = _refuse_unknown(cls, overrides, path)
    changed = {}
    for name, value in overrides.items():
        if value is None:
            continue
        current = getattr(instance, name)
        renamed = isinstance(value, MappingABC) and "name" in value and value["name"] != getattr(current, "name", None)
        if dataclasses.is_dataclass(current) and isinstance(value, MappingABC) and not renamed:
            changed[name] = merge(current, value, f"{path}.{name}")
        else:
            changed[name] = value
    return build(cls, {**{f: getattr(instance, f) for f in fields}, **changed}, path)


#: Field metadata of a setting added after runs were made with its type: the setting is recorded (in a run's
#: provenance, in a checkpoint's fingerprint) only when it differs from its default, so what was made before
#: it keeps the record and the key it had, and stays current.
RECORDED_WHEN_SET = types.MappingProxyType({"recorded": "when set"})


def as_data(value: Any) -> Any:
    """Settings as plain JSON data (dicts, lists, strings, numbers): what a run's provenance records. A
    config dataclass gives every field, less those marked :data:`RECORDED_WHEN_SET` that hold their default."""
    return json.loads(json.dumps(value, default=_plain))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)
                if not (f.metadata.get("recorded") == "when set" and getattr(value, f.name) == f.default)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple, range)):
        return list(value)
    if isinstance(value, types.MappingProxyType):
        return dict(value)
    return str(value)


_hints = functools.lru_cache(maxsize=None)(typing.get_type_hints)


def _names(cls: type) -> list[str]:
    return sorted(f.name for f in dataclasses.fields(cls) if f.init)


def _refuse_unknown(cls: type, keys: Mapping[str, Any], path: str) -> list[str]:
    """The settings of ``cls`` (its init fields); a ConfigError naming the first key of ``keys`` not one."""
    names = _names(cls)
    unknown = sorted(k for k in keys if k not in names)
    if unknown:
        raise ConfigError(f"{path}.{unknown[0]}: unknown key; the keys of {path} are {', '.join(names)}")
    return names


#: What a setting of each plain type accepts (a bool is never an int or a float here), as its error says it.
_SCALARS = {bool: ((bool,), "true or false"), int: ((int,), "an integer"), float: ((int, float), "a number"),
            str: ((str,), "a string")}


def _coerce(hint: Any, value: Any, path: str) -> Any:
    """``value`` checked against the type ``hint`` (built when it is a config dataclass)."""
    if hint is Any:
        return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors: list[ConfigError] = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _coerce(option, value, path)
            except ConfigError as error:
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        names = " or ".join(getattr(a, "__name__", str(a)) for a in args)
        raise ConfigError(f"{path}: expected {names}, got {value!r}")
    if dataclasses.is_dataclass(hint):
        return build(hint, value, path)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            raise ConfigError(f"{path}: expected one of {_members(hint, value)}, got {value!r}") from None
    if origin is tuple:
        if isinstance(value, (str, bytes, MappingABC)) or not isinstance(value, (tuple, list, range)):
            raise ConfigError(f"{path}: expected a sequence, got {value!r}")
        item = args[0] if args and (len(args) == 1 or args[1] is Ellipsis) else Any
        return tuple(_coerce(item, v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin in (Mapping, MappingABC, dict):
        if not isinstance(value, MappingABC):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}")
        item = args[1] if args else Any
        return types.MappingProxyType({k: _coerce(item, v, f"{path}.{k}") for k, v in value.items()})
    if hint in _SCALARS:
        accepted, words = _SCALARS[hint]
        if not isinstance(value, accepted) or (isinstance(value, bool) and hint is not bool):
            raise ConfigError(f"{path}: expected {words}, got {value!r}")
        return float(value) if hint is float else value
    return value
