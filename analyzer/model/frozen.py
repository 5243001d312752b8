"""Frozen dataclasses of the model, built faster.

A frozen dataclass's ``__init__`` sets each field through
``object.__setattr__`` (its own ``__setattr__`` refuses): on CPython 3.11 that
costs about 0.1 us a field, 2.3-2.9 us for a ``Transformation``.  The compiler
builds thousands per analysis.  :func:`quick_init` gives a frozen slots
dataclass an ``__init__`` of the same signature that sets its fields while the
instance is, for the time of the call, of a subclass that adds nothing but
the plain ``__setattr__`` (a slot store, as in a class that is not frozen),
and gives it its class back before it returns (0.6-0.8 us for a
``Transformation``).  Equality, hashing, ``repr``, immutability,
``dataclasses.fields``/``replace`` and pickling are the dataclass's own:
only ``__init__`` is replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeVar

_C = TypeVar("_C", bound=type)

#: per frozen slots class: its subclass whose instances can be written
_WRITABLE: dict[type, type] = {}


def writable(cls: type) -> type | None:
    """Return the subclass of the frozen slots dataclass ``cls`` whose
    ``__setattr__`` is ``object``'s (the same instance layout: an instance
    of ``cls`` may be given it, written, then given ``cls`` back), or None
    when ``cls`` is not one (no slots, a ``__post_init__``)."""
    made = _WRITABLE.get(cls)
    if made is not None:
        return made
    if (
        not is_dataclass(cls)
        or "__slots__" not in cls.__dict__
        or hasattr(cls, "__post_init__")
    ):
        return None
    made = type(
        cls.__name__,
        (cls,),
        {
            "__slots__": (),
            "__module__": cls.__module__,
            "__qualname__": f"{cls.__qualname__}.<writable>",
            # both: each of them alone leaves the slot Python's, not a store
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
        },
    )
    _WRITABLE[cls] = made
    return made


def quick_init(cls: _C) -> _C:
    """Give the frozen slots dataclass ``cls`` a faster ``__init__`` of the
    same signature (see the module's text); one that ``__init__`` cannot
    serve (a ``__post_init__``, a field not in ``__init__``, a default
    factory, keyword-only fields) is left as it is."""
    target = writable(cls)
    if target is None:
        return cls
    dataclass_init = cls.__dict__["__init__"]
    params: list[str] = []
    # the names the text uses besides the fields' (which may be ``type``)
    scope: dict[str, Any] = {
        "__quick_cls__": cls,
        "__quick_target__": target,
        "__quick_type__": type,
        "__quick_set__": object.__setattr__,
        "__quick_init__": dataclass_init,
    }
    for f in fields(cls):
        if not f.init or f.kw_only or f.default_factory is not MISSING:
            return cls
        if f.default is MISSING:
            params.append(f.name)
        else:
            scope[f"__quick_default_{f.name}__"] = f.default
            params.append(f"{f.name}=__quick_default_{f.name}__")
    names = [f.name for f in fields(cls)]
    if "self" in names:
        return cls
    args = ", ".join(params)
    lines = [
        f"def __init__(self, {args}):",
        # an instance of a subclass (not a dataclass) keeps its class
        "    if __quick_type__(self) is not __quick_cls__:",
        f"        return __quick_init__(self, {', '.join(names)})",
        "    __quick_set__(self, '__class__', __quick_target__)",
        *(f"    self.{n} = {n}" for n in names),
        "    self.__class__ = __quick_cls__",
    ]
    exec("\n".join(lines), scope)  # its text is made here, of the field names
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(dataclass_init.__annotations__)
    # (mypy refuses an assignment to a method)
    setattr(cls, "__init__", init)  # noqa: B010
    return cls
