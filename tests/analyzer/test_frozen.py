"""The model's frozen dataclasses built by ``model/frozen.py``'s ``__init__``
behave as the dataclass's own would: the same signature and defaults, the
same errors, frozen, equal and hashed alike, pickled and replaced alike."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from chainlens.analyzer.model import frozen
from chainlens.analyzer.model.diagnostic import Fix, TextEdit
from chainlens.analyzer.model.source import SourcePosition, SourceRange
from chainlens.analyzer.model.stream_graph import StreamEdge, StreamNode
from chainlens.analyzer.model.transformation import Transformation

QUICK = [SourceRange, TextEdit, Fix, Transformation, StreamNode, StreamEdge]


@pytest.mark.parametrize("cls", QUICK, ids=lambda c: c.__name__)
def test_the_quick_init_is_the_classes_and_keeps_its_signature(cls: type) -> None:
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    assert frozen.writable(cls) is not None
    names = [p.name for p in inspect.signature(cls).parameters.values()]
    assert names == [f.name for f in dataclasses.fields(cls)]


def _range() -> SourceRange:
    return SourceRange(SourcePosition(3, 4), SourcePosition(3, 9))


def test_an_instance_is_of_its_class_frozen_equal_and_hashed_alike() -> None:
    made = _range()
    assert type(made) is SourceRange
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.path = "x"  # type: ignore[misc]
    other = SourceRange(SourcePosition(3, 4), SourcePosition(3, 9), None, None)
    assert made == other
    assert hash(made) == hash(other)
    assert made.path is None  # a default
    assert dataclasses.replace(made, path="m.py").path == "m.py"
    assert pickle.loads(pickle.dumps(made)) == made
    assert repr(made).startswith("SourceRange(start=SourcePosition(line=3")


def test_wrong_arguments_fail_as_the_dataclass_fails() -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        SourceRange(SourcePosition(1, 0))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        TextEdit(_range(), "x", nope=1)  # type: ignore[call-arg]


def test_a_subclass_that_is_not_a_dataclass_keeps_its_class() -> None:
    class Marked(SourceRange):
        __slots__ = ()

    made = Marked(SourcePosition(1, 0), SourcePosition(1, 2))
    assert type(made) is Marked
    assert made == Marked(SourcePosition(1, 0), SourcePosition(1, 2))
