"""What one PyFlink API call creates: its context and the transformations.

:class:`Call` is one call (the program, its arguments, where it is); the
factories build the transformations PyFlink builds for it, hidden ones
included (``_stream_key_by_map_operator``...), with the names, operators and
output types PyFlink gives them (``pyflink/datastream/data_stream.py``).
"""

from __future__ import annotations

from chainlens.analyzer.extract.interface import Args
from chainlens.analyzer.extract.positions import lambda_text
from chainlens.analyzer.extract.program import EnvState, Program
from chainlens.analyzer.extract.pyflink_values import (
    Stream,
    TypeInfo,
)
from chainlens.analyzer.extract.state_inventory import inventory
from chainlens.analyzer.extract.values import (
    FunctionDef,
    Instance,
    LambdaValue,
    QualifiedRef,
)
from chainlens.analyzer.model.enums import (
    OperatorKind,
    OutputType,
    Partitioner,
)
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.transformation import Transformation, TransformationKind
from chainlens.analyzer.model.values import Symbol

KEY_BY_MAP = "_stream_key_by_map_operator"
PARTITION_CUSTOM_MAP = "_partition_custom_map_operator"
KEYED_VALUES = "_keyed_stream_values_operator"

PP = OperatorKind.PYTHON_PROCESS
PKP = OperatorKind.PYTHON_KEYED_PROCESS


class Call:
    """The context of one API call: the program, its arguments and location."""

    def __init__(self, program: Program, args: Args, where: SourceRange | None) -> None:
        self.program = program
        self.args = args
        self.where = where

    def parallelism(self, value: object, what: str) -> int | Symbol:
        """Return ``value`` as a parallelism, or a symbol when it is not known."""
        if isinstance(value, bool):
            return self.symbol(what, "not an int")
        if isinstance(value, (int, Symbol)):
            if isinstance(value, Symbol):
                self.program.unknown(
                    what, value.reason or "not known statically", self.where
                )
            return value
        return self.symbol(what, "not known statically")

    def text(self, value: object, what: str) -> str | Symbol:
        """Return ``value`` as a string, or a symbol when it is not known."""
        if isinstance(value, str):
            return value
        if isinstance(value, Symbol):
            self.program.unknown(
                what, value.reason or "not known statically", self.where
            )
            return value
        return self.symbol(what, "not a string known statically")

    def symbol(self, what: str, reason: str) -> Symbol:
        """Create a symbol for a value of this call, and record it as unknown."""
        where = self.where
        label = f"{what}@{where.start.line}:{where.start.column}" if where else what
        self.program.unknown(what, reason, where)
        return Symbol(label, reason, where)


# ---------------------------------------------------------------------------
# transformation factories


def new_transformation(
    call: Call,
    env: EnvState,
    kind: TransformationKind,
    name: str,
    inputs: tuple[int, ...],
    *,
    operator: OperatorKind = OperatorKind.NONE,
    parallelism: int | Symbol | None = None,
    output_type: OutputType = OutputType.OTHER,
    api: str,
    hidden: bool = False,
    add_to_env: bool = True,
    **extra: object,
) -> Transformation:
    """Add the transformation ``call`` creates to the program (and, unless
    ``add_to_env``, to its environment's list)."""
    t = Transformation(
        id=call.program.new_id(),
        kind=kind,
        name=name,
        inputs=inputs,
        operator=operator,
        parallelism=parallelism,
        output_type=output_type,
        api=api,
        hidden=hidden,
        range=call.where,
        **extra,  # type: ignore[arg-type]
    )
    call.program.add(t)
    if add_to_env:
        env.transformations.append(t.id)
    spec = declared_type(call)
    if spec is not None:
        call.program.type_specs[t.id] = spec
    return t


def keep_type_spec(call: Call, source: int, target: int) -> None:
    """Give ``target`` the declared type of ``source`` (an operation that keeps
    its input's type: a filter, a partitioning)."""
    spec = call.program.type_specs.get(source)
    if spec is not None and target not in call.program.type_specs:
        call.program.type_specs[target] = spec


def keeps_original_type(call: Call, keyed: Stream, result: Stream) -> Stream:
    """Give ``result`` the declared type of the stream ``keyed`` (a
    KeyedStream, or a window of one) was keyed from: what PyFlink declares for
    an operation that gives back the records it was keyed by (a reduce, a
    keyed filter, ``_values``)."""
    if keyed.origin is not None:
        keep_type_spec(call, keyed.origin.tid, result.tid)
    return result


def declared_type(call: Call) -> list[object] | None:
    """Return the output type ``call`` declares (``output_type=``,
    ``type_info=``, as the Table planner is given it), else None."""
    for name in ("output_type", "type_info"):
        value = call.args.keywords.get(name)
        if isinstance(value, TypeInfo):
            return value.spec
    typed = [v for v in call.args.positional if isinstance(v, TypeInfo)]
    if len(typed) == 1:
        return typed[0].spec
    return None


def function_identity(func: object) -> tuple[str, ...]:
    """What the user function ``func`` is, to tell operators of one kind apart:
    its class, its function's name, a lambda's text (none when not known)."""
    if isinstance(func, Instance):
        return (f"class {func.cls.name}",)
    if isinstance(func, FunctionDef):
        return (f"def {func.name}",)
    if isinstance(func, LambdaValue):
        return (lambda_text(func.node),)
    if isinstance(func, QualifiedRef):
        return (func.qualname,)
    return ()


def py_proc(
    call: Call,
    stream: Stream,
    name: str,
    operator: OperatorKind,
    output_type: OutputType,
    api: str,
    *,
    hidden: bool = False,
    input_tid: int | None = None,
) -> Stream:
    """Mirror ``j_stream.transform(name, out, python_operator)`` (PyFlink's PyProc)."""
    env = stream.env
    t = new_transformation(
        call,
        env,
        TransformationKind.ONE_INPUT,
        name,
        (stream.tid if input_tid is None else input_tid,),
        operator=operator,
        parallelism=env.parallelism,
        output_type=output_type,
        api=api,
        hidden=hidden,
        keyed=operator is PKP,
        state=inventory(call.args.get(0, "func"), call.program.method_scans),
        functions=function_identity(call.args.get(0, "func")),
    )
    return Stream("DataStream", env, t.id, output_type)


def type_of(value: object, default: OutputType) -> OutputType:
    """Return the output type an ``output_type``/``type_info`` argument gives."""
    if value is None:
        return default
    if isinstance(value, TypeInfo):
        return value.output_type
    return OutputType.UNKNOWN


def partition(call: Call, stream: Stream, partitioner: Partitioner, api: str) -> Stream:
    """Mirror a ``PartitionTransformation`` (no node; an edge property)."""
    src = call.program.read(stream.tid)
    t = new_transformation(
        call,
        stream.env,
        TransformationKind.PARTITION,
        "Partition",
        (stream.tid,),
        parallelism=src.parallelism,
        output_type=stream.output_type,
        api=api,
        add_to_env=False,
        partitioner=partitioner,
    )
    keep_type_spec(call, stream.tid, t.id)
    return Stream("DataStream", stream.env, t.id, stream.output_type)
