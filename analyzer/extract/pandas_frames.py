"""pandas DataFrames of facts written in the program (``--planner``).

``TableEnvironment.from_pandas`` makes a table of a DataFrame: its columns are
named and typed by the frame's labels and dtypes (as pyarrow reads them)
unless a schema says otherwise.  Measured with real Flink (1.18 to 2.3): what
Flink builds of it depends on these and on nothing else of the frame but that
it has rows (the number of rows, ``splits_num`` and the arrow batch size leave
the job as it is; a frame without rows makes PyFlink's ``from_pandas`` raise).
So a DataFrame is followed here only as its column labels, their dtypes and its
number of rows, never its values, and only when it is built of facts in the
code: ``pd.DataFrame`` of ``np.random.rand(rows[, columns])``, of literal
rows, or of a dict of literal columns (or of such arrays).  Anything else stays
an unknown value (``from_pandas`` of it is said not known).
"""

from __future__ import annotations

from typing import TypeGuard

from chainlens.analyzer.extract.interface import Args
from chainlens.analyzer.extract.values import Opaque

#: The dtypes a column is followed with (``str``: pandas' ``object`` of str
#: values, which pyarrow reads as strings).
DTYPES = ("int64", "float64", "bool", "str")

_INT64 = (-(2**63), 2**63 - 1)


class NumpyArray(Opaque):
    """An array of NumPy whose dtype and shape are known (values are not)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: str, shape: tuple[int, ...]) -> None:
        super().__init__(f"numpy array {dtype}{list(shape)}")
        self.dtype = dtype
        self.shape = shape


class DataFrame(Opaque):
    """A pandas DataFrame: its column labels with their dtypes, and its rows."""

    __slots__ = ("columns", "rows")

    def __init__(self, columns: tuple[tuple[str | int, str], ...], rows: int) -> None:
        super().__init__(f"pandas DataFrame of {rows} rows")
        self.columns = columns
        self.rows = rows


def numpy_pandas_call(qualname: str, args: Args) -> object | None:
    """What a call of NumPy or pandas makes, when followed (None: not)."""
    if args.unseen:
        return None
    if qualname == "numpy.random.rand":
        dims = [d for d in args.positional if _count(d)]
        if args.keywords or not 1 <= len(dims) == len(args.positional) <= 2:
            return None
        return NumpyArray("float64", tuple(dims))
    if qualname == "pandas.DataFrame":
        return _data_frame(args)
    return None


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _label(value: object) -> TypeGuard[str | int]:
    return isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


def _dtype(values: list[object] | tuple[object, ...]) -> str | None:
    """The dtype pandas infers for a column of literal values (None: another,
    or not known)."""
    if not values:
        return None
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if any(isinstance(v, bool) for v in values):
        return None  # a mix of bools and numbers: object
    numbers = [v for v in values if isinstance(v, int)]
    if len(numbers) == len(values):
        low, high = _INT64
        return "int64" if all(low <= v <= high for v in numbers) else None
    if all(isinstance(v, int | float) for v in values):
        return "float64"
    if all(isinstance(v, str) for v in values):
        return "str"
    return None


def _labels(given: object, width: int) -> tuple[str | int, ...] | None:
    """The column labels ``columns=`` gives a frame of ``width`` columns."""
    if given is None:
        return tuple(range(width))
    if not isinstance(given, list | tuple) or len(given) != width:
        return None
    labels = tuple(v for v in given if _label(v))
    return labels if len(labels) == width else None


def _frame(
    labels: tuple[str | int, ...], dtypes: list[str | None], rows: int
) -> object:
    known = [d for d in dtypes if d is not None]
    if len(known) != len(labels) or not labels:
        return None
    if len({str(label) for label in labels}) != len(labels):
        return None  # pyarrow refuses duplicate column names
    return DataFrame(tuple(zip(labels, known, strict=True)), rows)


def _data_frame(args: Args) -> object | None:
    """``pd.DataFrame(data, index=None, columns=None, dtype=None, copy=None)``
    with ``data`` and ``columns`` only."""
    if len(args.positional) > 3 or set(args.keywords) - {"data", "columns"}:
        return None
    if args.get(1, "index") is not None:
        return None
    data, columns = args.get(0, "data"), args.get(2, "columns")
    if isinstance(data, NumpyArray):
        if len(data.shape) == 1:
            width, rows = 1, data.shape[0]
        else:
            rows, width = data.shape
        labels = _labels(columns, width)
        if labels is None:
            return None
        return _frame(labels, [data.dtype] * width, rows)
    if isinstance(data, dict) and columns is None:
        lengths: set[int] = set()
        dtypes: list[str | None] = []
        for column in data.values():
            if isinstance(column, NumpyArray) and len(column.shape) == 1:
                lengths.add(column.shape[0])
                dtypes.append(column.dtype)
            elif isinstance(column, list | tuple):
                lengths.add(len(column))
                dtypes.append(_dtype(column))
            else:
                return None
        labels = tuple(k for k in data if _label(k))
        if len(lengths) != 1 or len(labels) != len(data):
            return None
        return _frame(labels, dtypes, lengths.pop())
    if isinstance(data, list | tuple) and data:
        if all(isinstance(row, list | tuple) for row in data):
            widths = {len(row) for row in data}
            if len(widths) != 1:
                return None
            width = widths.pop()
            cells = [[row[i] for row in data] for i in range(width)]
        else:
            width, cells = 1, [list(data)]
        labels = _labels(columns, width)
        if labels is None:
            return None
        return _frame(labels, [_dtype(c) for c in cells], len(data))
    return None
