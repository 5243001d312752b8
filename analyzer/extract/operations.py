"""Python's operations on the values the evaluator knows.

Truth, iteration, hashing, arithmetic and comparison as Python does them, on
literals, lists, tuples and dicts only; on anything else the outcome is not
known (None, or an :class:`Opaque` value), and a :class:`Symbol` operand makes a
result that stands for the same unknown.  Arithmetic refuses to build a value
too large to follow (``'a' * 10**10``, ``9 ** 10**8``): the evaluator says so
as an unknown instead.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from chainlens.analyzer.extract.values import BoundMethod, Opaque, QualifiedRef
from chainlens.analyzer.model.values import Symbol

#: Items of a list, tuple or string the program builds, and bits of an integer:
#: a larger value is an unknown (``'a' * 10**10`` is never built).
MAX_VALUE_SIZE = 100_000
MAX_INT_BITS = 10_000

BINOPS: dict[type[cst.BaseBinaryOp], Callable[[object, object], object]] = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
}

#: Python's operators by the name of their ``operator`` function: what a
#: library value an operand of them is told (the Table API's expressions).
OPERATOR_NAMES: dict[type[cst.CSTNode], str] = {
    cst.Add: "add",
    cst.Subtract: "sub",
    cst.Multiply: "mul",
    cst.Divide: "truediv",
    cst.FloorDivide: "floordiv",
    cst.Modulo: "mod",
    cst.Power: "pow",
    cst.BitAnd: "and_",
    cst.BitOr: "or_",
    cst.Equal: "eq",
    cst.NotEqual: "ne",
    cst.LessThan: "lt",
    cst.LessThanEqual: "le",
    cst.GreaterThan: "gt",
    cst.GreaterThanEqual: "ge",
    cst.BitInvert: "invert",
    cst.Minus: "neg",
}

AUGMENTED: dict[type[cst.BaseAugOp], Callable[[object, object], object]] = {
    cst.AddAssign: operator.add,
    cst.SubtractAssign: operator.sub,
    cst.MultiplyAssign: operator.mul,
    cst.FloorDivideAssign: operator.floordiv,
    cst.DivideAssign: operator.truediv,
    cst.ModuloAssign: operator.mod,
}

#: Python's comparisons take operands of any type (the unsupported ones raise
#: TypeError, which the caller catches), hence Any: ``object`` would reject <.
COMPARE: dict[type[cst.BaseCompOp], Callable[[Any, Any], object]] = {
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
    cst.In: lambda a, b: a in b,
    cst.NotIn: lambda a, b: a not in b,
    cst.Is: operator.is_,
    cst.IsNot: operator.is_not,
}

LITERAL_TYPES = (int, float, str, bool, type(None), bytes)
SEQ_OR_LITERAL = (*LITERAL_TYPES, list, tuple)
ANY_LITERAL = (*LITERAL_TYPES, list, tuple, dict, set)


def truth(value: object) -> bool | None:
    """``bool(value)``; None when it is not known."""
    if isinstance(value, Symbol | Opaque | QualifiedRef | BoundMethod):
        return None
    if isinstance(value, ANY_LITERAL):
        return bool(value)
    return True


def iterate(value: object) -> list[object] | None:
    """The items ``for`` would give; None when they are not known."""
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, dict):
        return list(value.keys())
    if isinstance(value, str):
        return list(value)
    return None


def hashable(value: object) -> bool:
    """Tell whether ``value`` can be a key of a dict the evaluator builds."""
    return isinstance(value, LITERAL_TYPES) or (
        isinstance(value, tuple) and all(hashable(v) for v in value)
    )


def comparable(value: object) -> bool:
    """Tell whether comparing ``value`` gives a known outcome."""
    return isinstance(value, ANY_LITERAL)


def derived(*values: object) -> object:
    """What an operation on ``values`` gives when one of them is unknown."""
    for value in values:
        if isinstance(value, Symbol):
            return Symbol(value.name, value.reason, value.range)
    return Opaque("derived")


def range_size(span: range) -> int:
    """``len(span)`` without its limit (``len(range(10**19))`` overflows)."""
    if span.step > 0:
        return max(0, (span.stop - span.start + span.step - 1) // span.step)
    return max(0, (span.start - span.stop - span.step - 1) // -span.step)


def _size(value: object) -> int:
    if isinstance(value, str | bytes | list | tuple | dict | set):
        return len(value)
    return 0


def too_large(
    op: Callable[[object, object], object], left: object, right: object
) -> str | None:
    """Why ``op(left, right)`` would build a value too large to follow (None:
    it would not)."""
    a = left if isinstance(left, int) and not isinstance(left, bool) else None
    b = right if isinstance(right, int) and not isinstance(right, bool) else None
    if (
        op is operator.pow
        and a is not None
        and b is not None
        and b > 0
        and abs(a) > 1
        and b * a.bit_length() > MAX_INT_BITS
    ):
        return f"a number of about {b * a.bit_length():,} bits"
    if op is operator.mul:
        if (
            a is not None
            and b is not None
            and a.bit_length() + b.bit_length() > MAX_INT_BITS
        ):
            return f"a number of more than {MAX_INT_BITS:,} bits"
        for seq, times in ((left, right), (right, left)):
            if isinstance(times, int) and _size(seq) * max(times, 0) > MAX_VALUE_SIZE:
                return f"a sequence of {_size(seq) * times:,} items"
    if op is operator.add and _size(left) + _size(right) > MAX_VALUE_SIZE:
        return f"a sequence of {_size(left) + _size(right):,} items"
    if op is operator.mod and isinstance(left, str | bytes):
        values = right if isinstance(right, tuple) else (right,)
        return formatting_too_large(left, values)
    return None


#: The numbers of a format (``%1000d``, ``{:>1000}``, ``.{n}f``): widths and
#: precisions, which a formatted value is padded to.
_NUMBERS = re.compile(rb"\d+")
#: A replacement field in a field (``{:>{}}``): its width is one of the values.
_NESTED = re.compile(rb"\{[^{}]*\{")


def _length(value: object) -> int:
    """The length of ``str(value)``, about (never building it)."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3 + 2
    return _size(value) * 8 + 32 if isinstance(value, list | tuple | dict) else 32


def formatting_too_large(template: str | bytes, values: Sequence[object]) -> str | None:
    """Why formatting ``values`` with ``template`` (``%``, ``str.format`` or an
    f-string's format spec) would build a string too large to follow: a width
    or precision in it (``*`` takes one from the values), or the values
    themselves (None: it would not)."""
    data = (
        template.encode("utf-8", "surrogatepass")
        if isinstance(template, str)
        else template
    )
    widths = [len(n) for n in _NUMBERS.findall(data)]
    if widths and max(widths) > 6:  # more than 999,999
        return "a string padded to more than a million characters"
    largest = max((int(n) for n in _NUMBERS.findall(data)), default=0)
    if b"*" in data or _NESTED.search(data):  # a width taken from the values
        largest = max(
            [largest]
            + [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        )
    total = len(data) + largest + sum(_length(v) for v in values)
    if total > MAX_VALUE_SIZE:
        return f"a string of about {total:,} characters"
    return None


def method_too_large(receiver: str, name: str, args: Sequence[object]) -> str | None:
    """Why ``receiver.name(*args)`` (a method of ``str`` the evaluator follows)
    would build a string too large to follow (None: it would not)."""
    if name == "format":
        return formatting_too_large(receiver, args)
    if name == "join" and args and isinstance(args[0], list | tuple):
        items = args[0]
        total = sum(_length(i) for i in items) + len(receiver) * max(len(items) - 1, 0)
        if total > MAX_VALUE_SIZE:
            return f"a string of about {total:,} characters"
    if name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        if isinstance(old, str) and isinstance(new, str):
            count = receiver.count(old) if old else len(receiver) + 1
            if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
                count = min(count, args[2])
            total = len(receiver) + count * max(len(new) - len(old), 0)
            if total > MAX_VALUE_SIZE:
                return f"a string of about {total:,} characters"
    return None
