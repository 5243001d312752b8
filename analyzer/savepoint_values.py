"""Whether the values a savepoint holds fit a state's declared PyFlink type.

PyFlink (process mode, 1.18 to 2.3) keeps each Python state in a Java state
of bytes (``BeamKeyedStateStore``): the declared type is not in any
serializer, it is in the bytes, written by the coder of the declared type
(``pyflink.fn_execution.coders.from_type_info`` and ``coder_impl_slow`` /
``coder_impl_fast``).  The formats read here, each confirmed on real
savepoints of PyFlink 2.3 and 1.20 (``tests/test_savepoint_states_real.py``):

* ``BYTE``, ``BOOLEAN`` 1 byte (``BOOLEAN``: 0 or 1), ``SHORT`` 2, ``INT`` 4,
  ``LONG`` 8 (``BIG_INT`` too), ``FLOAT`` 4, ``DOUBLE`` 8, big-endian;
* ``STRING`` (and ``CHAR``): a 4-byte length, then that many bytes of UTF-8;
  ``BIG_DEC`` the same of its text;
* ``PICKLED_BYTE_ARRAY`` (the type of a state declared without one): a 4-byte
  length, then a ``pickle`` of the value (``\\x80`` protocol byte ... ``.``);
* ``PRIMITIVE_ARRAY(BYTE())``: a 4-byte length and the bytes; other
  ``PRIMITIVE_ARRAY``\\ s a 4-byte count and the elements; ``BASIC_ARRAY``,
  ``OBJECT_ARRAY`` and ``LIST`` a 4-byte count, then per element a byte (1:
  present) and the element;
* ``MAP(k, v)``: a 4-byte count, then per entry the key, a byte (1: null) and
  the value;
* ``ROW`` / ``ROW_NAMED``: a mask (the row kind's 2 bits, then one bit per
  field set when the field is None; ``max(1, ceil((n + 2) / 8))`` bytes), then
  the fields that are not None; ``TUPLE``: the fields, one after the other.

A value, reducing or aggregating state holds one value per element; a list
state's elements are appended chunks of one or more values; a map state's
values and keys are one value each.  :func:`state_fits` answers ``yes`` (every
sample reads as the declared type, to its last byte), ``no`` with the reason,
or ``unknown`` (no samples, a type not read here, not a PyFlink state).  Types
of the same width (``INT`` and ``FLOAT``, ``LONG`` and ``DOUBLE``) cannot be
told apart by their bytes: such a change is ``yes``, and the reason says so.
"""

from __future__ import annotations

import ast
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from chainlens.analyzer.model.savepoint import SavedState

#: the fixed-width types: their width in bytes
_FIXED = {
    "BYTE": 1,
    "BOOLEAN": 1,
    "SHORT": 2,
    "INT": 4,
    "FLOAT": 4,
    "LONG": 8,
    "BIG_INT": 8,
    "DOUBLE": 8,
    "SQL_DATE": 4,
}
#: a 4-byte length, then bytes
_LENGTH_PREFIXED = ("STRING", "CHAR", "BIG_DEC", "PICKLED_BYTE_ARRAY", "BINARY")
#: the types tried to say what unknown bytes are, in this order
_GUESSES = (
    "BYTE",
    "BOOLEAN",
    "SHORT",
    "INT",
    "FLOAT",
    "LONG",
    "DOUBLE",
    "STRING",
    "PICKLED_BYTE_ARRAY",
)
#: the Java state kind behind each PyFlink descriptor (``BeamKeyedStateStore``)
JAVA_KIND = {
    "ValueStateDescriptor": "LIST",
    "ListStateDescriptor": "LIST",
    "ReducingStateDescriptor": "LIST",
    "AggregatingStateDescriptor": "LIST",
    "MapStateDescriptor": "MAP",
}
_INT = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Fit:
    """Whether saved values fit a declared type: ``yes``, ``no`` or
    ``unknown``, and why."""

    verdict: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """The fit as JSON."""
        return {"verdict": self.verdict, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class DeclaredType:
    """A declared type as the coders see it."""

    name: str
    children: tuple[DeclaredType, ...] = ()

    @property
    def label(self) -> str:
        if not self.children:
            return self.name
        return f"{self.name}({', '.join(c.label for c in self.children)})"


class _MismatchError(Exception):
    """The bytes do not read as the type; the message says why."""


class _UnsupportedError(Exception):
    """A type not read here."""


# ---------------------------------------------------------------- types


def parse_type(text: str) -> DeclaredType | None:
    """``Types.ROW([Types.STRING(), Types.LONG()])`` as the coders see it;
    None when the text is not a ``Types`` call chainlens reads."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    try:
        return _from_ast(tree)
    except _UnsupportedError:
        return None


def _from_ast(node: ast.expr) -> DeclaredType:
    if not isinstance(node, ast.Call):
        raise _UnsupportedError
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id != "Types":
            raise _UnsupportedError
        name = func.attr
    elif isinstance(func, ast.Name):
        name = func.id
    else:
        raise _UnsupportedError
    args = node.args
    if name in _FIXED or name in _LENGTH_PREFIXED:
        if args:
            raise _UnsupportedError
        return DeclaredType("LONG" if name == "BIG_INT" else name)
    if name == "ROW" and len(args) == 1:
        return DeclaredType("ROW", _list(args[0]))
    if name == "ROW_NAMED" and len(args) == 2:
        return DeclaredType("ROW", _list(args[1]))
    if name == "TUPLE" and len(args) == 1:
        return DeclaredType("TUPLE", _list(args[0]))
    if name == "PRIMITIVE_ARRAY" and len(args) == 1:
        element = _from_ast(args[0])
        if element.name == "BYTE":
            return DeclaredType("BINARY")
        return DeclaredType("PRIMITIVE_ARRAY", (element,))
    if name in ("BASIC_ARRAY", "OBJECT_ARRAY", "LIST") and len(args) == 1:
        return DeclaredType("ARRAY", (_from_ast(args[0]),))
    if name == "MAP" and len(args) == 2:
        return DeclaredType("MAP", (_from_ast(args[0]), _from_ast(args[1])))
    raise _UnsupportedError


def _list(node: ast.expr) -> tuple[DeclaredType, ...]:
    if not isinstance(node, ast.List | ast.Tuple):
        raise _UnsupportedError
    return tuple(_from_ast(e) for e in node.elts)


def split_map_type(text: str) -> tuple[str, str] | None:
    """A map descriptor's ``"K, V"`` (the state inventory joins them) as
    ``("K", "V")``: split at the top-level comma."""
    depth = 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            return text[:index].strip(), text[index + 1 :].strip()
    return None


# ---------------------------------------------------------------- decoding


def _read(kind: DeclaredType, data: bytes, pos: int) -> int:
    """Where the value of ``kind`` written at ``pos`` ends."""
    name = kind.name
    width = _FIXED.get(name)
    if width is not None:
        if pos + width > len(data):
            raise _MismatchError(
                f"{name} reads {_bytes(width)}, {len(data) - pos} left"
            )
        if name == "BOOLEAN" and data[pos] > 1:
            raise _MismatchError(f"BOOLEAN reads 0 or 1, the byte is {data[pos]}")
        return pos + width
    if name in _LENGTH_PREFIXED:
        length = _length(name, data, pos)
        body = data[pos + 4 : pos + 4 + length]
        if name in ("STRING", "CHAR", "BIG_DEC"):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                raise _MismatchError(f"{name} reads UTF-8, the bytes are not") from None
            if name == "BIG_DEC" and not _is_decimal(text):
                raise _MismatchError(
                    f"BIG_DEC reads a number's text, not {text[:20]!r}"
                )
        if name == "PICKLED_BYTE_ARRAY" and not (
            len(body) >= 2 and body[0] == 0x80 and body[-1] == 0x2E
        ):
            raise _MismatchError(
                "PICKLED_BYTE_ARRAY reads a pickle, the bytes are not one"
            )
        return pos + 4 + length
    if name == "ROW":
        fields = kind.children
        mask = max(1, -(-(len(fields) + 2) // 8))
        if pos + mask > len(data):
            raise _MismatchError(
                f"a ROW of {len(fields)} fields reads a {mask}-byte mask"
            )
        bits = int.from_bytes(data[pos : pos + mask], "big")
        pos += mask
        for index, field in enumerate(fields):
            if bits & (1 << (mask * 8 - 3 - index)):
                continue  # None
            pos = _read(field, data, pos)
        return pos
    if name == "TUPLE":
        for field in kind.children:
            pos = _read(field, data, pos)
        return pos
    if name in ("ARRAY", "PRIMITIVE_ARRAY", "MAP"):
        count = _length(name, data, pos, unit="elements")
        pos += 4
        for _ in range(count):
            if name == "MAP":
                pos = _read(kind.children[0], data, pos)
                null = _flag(name, data, pos)
                pos += 1
                if not null:
                    pos = _read(kind.children[1], data, pos)
            elif name == "ARRAY":
                present = _flag(name, data, pos)
                pos += 1
                if present:
                    pos = _read(kind.children[0], data, pos)
            else:
                pos = _read(kind.children[0], data, pos)
        return pos
    raise _UnsupportedError


def _length(name: str, data: bytes, pos: int, unit: str = "bytes") -> int:
    if pos + 4 > len(data):
        short = _bytes(len(data) - pos)
        raise _MismatchError(f"{name} reads a 4-byte length, {short} left")
    (length,) = _INT.unpack_from(data, pos)
    left = len(data) - pos - 4
    # an element takes at least one byte (a value, or a presence flag)
    if length < 0 or length > left:
        raise _MismatchError(
            f"{name} reads a 4-byte length, then that many {unit}: the length "
            f"would be {length}, {_bytes(left)} follow"
        )
    return int(length)


def _flag(name: str, data: bytes, pos: int) -> bool:
    if pos >= len(data) or data[pos] > 1:
        raise _MismatchError(f"{name} reads a 0 or 1 byte before each element")
    return bool(data[pos])


def _is_decimal(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _whole(kind: DeclaredType, data: bytes, *, several: bool) -> None:
    """``data`` is one value of ``kind`` (``several``: one or more)."""
    pos = _read(kind, data, 0)
    while several and 0 < pos < len(data):
        pos = _read(kind, data, pos)
    if pos != len(data):
        extra = len(data) - pos
        raise _MismatchError(f"{kind.label} reads {_bytes(pos)}, {extra} more follow")


def _guess(data: bytes) -> list[str]:
    """The simple types that read ``data`` as one value."""
    found = []
    for name in _GUESSES:
        try:
            _whole(DeclaredType(name), data, several=False)
        except _MismatchError:
            continue
        found.append(name)
    return found


def _reads_several(kind: DeclaredType, data: bytes) -> bool:
    try:
        _whole(kind, data, several=True)
    except (_MismatchError, _UnsupportedError):
        return False
    return True


def _bytes(count: int) -> str:
    return f"{count} byte" + ("" if count == 1 else "s")


def _article(names: list[str]) -> str:
    words = [
        n if n.startswith("several") else ("an " if n[0] in "AEIOU" else "a ") + n
        for n in names
    ]
    return " or ".join(words)


# ---------------------------------------------------------------- verdicts


def samples_fit(
    declared: str, samples: Sequence[bytes], *, several: bool = False
) -> Fit:
    """Whether every sample reads as the declared type (``Types.INT()``, ...)
    to its last byte; ``several``: a sample may hold one or more values (a
    list state's appended chunk)."""
    kind = parse_type(declared)
    if kind is None:
        return Fit(
            "unknown", f"the declared type {declared} is not one chainlens reads"
        )
    if not samples:
        return Fit("unknown", "no saved values were sampled")
    for sample in samples:
        data = bytes(sample)
        try:
            _whole(kind, data, several=several)
        except _UnsupportedError:
            return Fit("unknown", f"{kind.label} is not a type chainlens reads")
        except _MismatchError as exc:
            size = _bytes(len(data))
            what = _guess(data)
            if not several and _reads_several(kind, data):
                what = [f"several {kind.label} values (a list state's appends)"]
            saved = (
                f"the saved values are {size}"
                if len(samples) > 1
                else (f"the saved value is {size}")
            )
            if what:
                saved += f": {_article(what)}"
            return Fit("no", f"{saved}; {exc}")
    count = len(samples)
    reason = f"the {count} sampled value{'s' if count > 1 else ''} read as {kind.label}"
    twin = {"INT": "FLOAT", "FLOAT": "INT", "LONG": "DOUBLE", "DOUBLE": "LONG"}.get(
        kind.name
    )
    if twin is not None:
        reason += f" ({twin} reads the same bytes: such a change is not seen)"
    return Fit("yes", reason)


def state_fits(state: SavedState, descriptor_kind: str, declared: str | None) -> Fit:
    """Whether a saved state fits a PyFlink descriptor (its class,
    ``ValueStateDescriptor``...; its declared type as written, a map's
    ``"K, V"``)."""
    if not state.pyflink:
        return Fit("unknown", f"{state.name} is not a PyFlink state")
    wanted = JAVA_KIND.get(descriptor_kind)
    if wanted is not None and state.kind is not None and state.kind != wanted:
        saved = "a map state" if state.kind == "MAP" else "a value, list, reducing "
        saved += "" if state.kind == "MAP" else "or aggregating state"
        return Fit(
            "no",
            f"the saved state is {saved} (Java {state.kind}); {descriptor_kind} "
            f"keeps a Java {wanted}",
        )
    if declared is None:
        return Fit("unknown", "the declared type is not known")
    if not state.values:
        why = state.values_note or "no saved values were sampled"
        return Fit("unknown", why)
    if descriptor_kind == "MapStateDescriptor":
        pair = split_map_type(declared)
        if pair is None:
            return Fit("unknown", f"{declared} is not a map's key and value types")
        keys = samples_fit(pair[0], state.map_keys) if state.map_keys else None
        if keys is not None and keys.verdict == "no":
            return Fit("no", "map keys: " + keys.reason)
        values = samples_fit(pair[1], state.values)
        if values.verdict != "yes" or keys is None:
            return values
        return Fit("yes", f"keys: {keys.reason}; values: {values.reason}")
    several = descriptor_kind == "ListStateDescriptor"
    return samples_fit(declared, state.values, several=several)
