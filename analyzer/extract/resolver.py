"""The PyFlink resolver: what PyFlink's names and objects do when the program runs.

The evaluator (``evaluator.py``) replays the program's Python and asks this
resolver about everything PyFlink: a call of a name imported from ``pyflink``
(``StreamExecutionEnvironment.get_execution_environment()``, ``Types.INT()``,
``FileSource.for_record_stream_format(...)``), an attribute or a method of an
object PyFlink made (``ds.map(...)``, ``env.set_parallelism(...)``,
``config.set_string(...)``), and values that go into code nobody follows.  It
routes them over the tables of ``pyflink_api.py`` (what each PyFlink 2.3 method
does to the transformation DAG), checks names against ``pyflink_names.json``
(``pyflink_names.py``) and keeps the program being rebuilt (``program.py``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, NoReturn

from chainlens.analyzer.extract import pyflink_api as api
from chainlens.analyzer.extract.interface import (
    UNRESOLVED,
    Args,
    Call,
    ProgramStopError,
    by_type,
)
from chainlens.analyzer.extract.pandas_frames import numpy_pandas_call
from chainlens.analyzer.extract.program import EnvState, Program
from chainlens.analyzer.extract.pyflink_calls import Call as ApiCall
from chainlens.analyzer.extract.pyflink_datastream import ASYNC_WAITS, async_wait
from chainlens.analyzer.extract.pyflink_environment import apply_config
from chainlens.analyzer.extract.pyflink_names import pyflink_names, star_names
from chainlens.analyzer.extract.pyflink_signatures import (
    TIME_PARAMETERS,
    Signature,
    pyflink_signatures,
    time_argument_error,
)
from chainlens.analyzer.extract.pyflink_table import (
    BUILDERS,
    TABLE_API,
    NotPlannedError,
    builder_method,
    builder_start,
    create_pure_table_env,
    create_table_env,
    data_type,
    environment_settings,
    expression_function,
    expression_method,
    expression_property,
    function_call,
    operate,
    settings_method,
    statement_set_method,
    table_column,
    table_config_set,
    table_env_method,
    table_method,
    table_text,
    user_function,
    user_function_method,
)
from chainlens.analyzer.extract.pyflink_values import (
    ConfigValue,
    EnvRef,
    JavaEnvRef,
    PyObject,
    StatementSetRef,
    Stream,
    TableBuilder,
    TableConfigRef,
    TableEnvRef,
    TableExpression,
    TableRef,
    TableSettings,
    TypeInfo,
    UserFunction,
)
from chainlens.analyzer.extract.values import (
    BoundMethod,
    Instance,
    Opaque,
    QualifiedRef,
)
from chainlens.analyzer.model.enums import OutputType
from chainlens.analyzer.model.source import SourceRange

#: The makers of user-defined Table functions: with ``--planner``, a static
#: declaration is handed over as a stand-in (never the function's body).
_USER_FUNCTIONS = frozenset({"udf", "udtf", "udaf", "udtaf"})

# Types.X() -> what alignment needs to know.
_ROW_TYPES = frozenset({"ROW", "ROW_NAMED"})
_PICKLED_TYPES = frozenset({"PICKLED_BYTE_ARRAY"})

# Builder-style objects: attributes their methods set.
_BUILDER_FLAGS: dict[str, tuple[str, object]] = {
    "with_timestamp_assigner": ("timestamp_assigner", True),
    # PyFlink returns a new WatermarkStrategy without the Python assigner
    "with_idleness": ("timestamp_assigner", False),
    "with_watermark_alignment": ("timestamp_assigner", False),
    "monitor_continuously": ("bounded", False),
}

#: What ``execute()`` and ``execute_async()`` return.
_JOB_RESULTS = frozenset({"JobExecutionResult", "JobClient"})

_SINKS_WITH_COMMITTER = frozenset({"FileSink", "KafkaSink"})
_BOUNDED_SOURCES = frozenset({"NumberSequenceSource", "FileSource"})
_UNBOUNDED_SOURCES = frozenset({"KafkaSource", "PulsarSource"})
_DYNAMIC_GAP = {
    "ProcessingTimeSessionWindows": "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows": "DynamicEventTimeSessionWindows",
}

#: What to do instead of APIs removed in Flink 2.0 (said with the failure).
_REMOVED_METHODS: dict[str, str] = {
    "set_restart_strategy": " (removed in Flink 2.0: set restart-strategy.type in "
    "the Configuration given to get_execution_environment())",
    "set_stream_time_characteristic": " (removed in Flink 2.0: event time is the "
    "default; remove the call and assign timestamps with a WatermarkStrategy)",
    "set_state_backend": " (removed in Flink 2.0: set state.backend.type in the "
    "Configuration given to get_execution_environment())",
    "register_type": " (removed in Flink 2.0: configure pipeline.serialization-config)",
    "register_type_with_kryo_serializer": " (removed in Flink 2.0: configure "
    "pipeline.serialization-config)",
    "add_default_kryo_serializer": " (removed in Flink 2.0: configure "
    "pipeline.serialization-config)",
    "time_window": " (removed in Flink 2.0: use window() with a window assigner, "
    "e.g. TumblingEventTimeWindows.of(...))",
    "assign_timestamps": " (use assign_timestamps_and_watermarks())",
}
_REMOVED_NAMES: dict[str, str] = {
    "TimeCharacteristic": " (removed in Flink 2.0: event time is the default)",
    "Time": " (use Duration; pyflink.common.time.Time was removed)",
}


class PyFlinkResolver:
    """Answer the evaluator's questions about PyFlink (an
    :class:`~chainlens.analyzer.extract.interface.Resolver`); what the
    program builds goes to ``program``."""

    def __init__(self, program: Program) -> None:
        self.program = program

    # ----------------------------------------------------------------- names

    def asks_instance(
        self, qualname: str, call: Call
    ) -> tuple[tuple[Instance, str, str], ...]:
        """``udaf(instance)`` and ``udtaf(instance)`` of ``--planner``: PyFlink
        asks the instance for the types it is not given, ``get_result_type()``
        and, for a general one, ``get_accumulator_type()``
        (``UserDefinedAggregateFunctionWrapper``)."""
        if self.program.tables is None or qualname not in _AGGREGATE_MAKERS:
            return ()
        function = call.args.get(0, "f")
        if not isinstance(function, Instance) or call.args.unseen:
            return ()
        asked = []  # in PyFlink's order
        general = call.args.get(6, "func_type", "general") == "general"
        if general and call.args.get(3, "accumulator_type") is None:
            asked.append((function, "get_accumulator_type", "accumulator_type"))
        if call.args.get(2, "result_type") is None:
            asked.append((function, "get_result_type", "result_type"))
        return tuple(asked)

    def owns_module(self, name: str) -> bool:
        """PyFlink's modules are never the program's own."""
        return name.split(".", 1)[0] == "pyflink"

    def missing_name(self, module: str, name: str) -> str | None:
        """``from pyflink.x import Name`` of a name PyFlink does not have."""
        names = pyflink_names(self.program.flink_version)
        if not names.lacks(module, name):
            return None
        return (
            f"PyFlink {names.version} has no {name} in {module}: the "
            "program fails at this import"
            + _REMOVED_NAMES.get(name, "")
            + names.elsewhere(module, name, module=True)
        )

    def star_names(self, module: str) -> frozenset[str] | None:
        """``from pyflink.x import *``: the module's ``__all__`` in the
        program's PyFlink (None: it has none, or the line lacks the module)."""
        return star_names(module, self.program.flink_version)

    def follows_subclass(self, base: str) -> bool:
        """The program's subclasses of PyFlink's classes (its user functions:
        ``MapFunction``, ``KeyedProcessFunction``, ...) are followed."""
        return base.startswith("pyflink.")

    def subclass_init(self, base: str, call: Call) -> object:
        """A program's subclass of ``StreamExecutionEnvironment`` is the
        environment whose Java environment its ``__init__`` is given (PyFlink
        2.3 ``StreamExecutionEnvironment.__init__(j_stream_execution_environment)``
        keeps it; every method then acts on it).  On any other Java environment
        it is a new environment whose jobs are partly known (the unknown is
        located at this call)."""
        if not (
            self.owns_module(base)
            and base.rsplit(".", 1)[-1] == "StreamExecutionEnvironment"
        ):
            return UNRESOLVED
        given = call.args.get(0, "j_stream_execution_environment")
        if isinstance(given, JavaEnvRef):
            return EnvRef(given.state)
        fresh = ApiCall(self.program, Args([], {}), call.where)  # no configuration
        env = api.new_environment(fresh, self.program)
        env.state.escape(
            "StreamExecutionEnvironment.__init__() with a Java environment "
            "chainlens does not know",
            call.where,
        )
        return env

    def call_name(
        self, ref: QualifiedRef, call: Call, *, guarded: bool = False
    ) -> object:
        """A call of a name of PyFlink (or of Java through its gateway)."""
        qual = ref.qualname
        parts = qual.split(".")
        last = parts[-1]
        owner = parts[-2] if len(parts) > 1 else ""
        if qual == "pyflink.java_gateway.get_gateway":
            return QualifiedRef("java")
        if parts[0] == "java":
            if not guarded:
                api.check_java_class(self._api(call), qual)
            return PyObject(qual, tuple(call.args.positional), dict(call.args.keywords))
        if parts[0] in ("numpy", "pandas") and self.program.tables is not None:
            # a DataFrame for from_pandas: its columns' labels and dtypes
            made = numpy_pandas_call(qual, call.args)
            return UNRESOLVED if made is None else made
        if parts[0] != "pyflink":
            return UNRESOLVED
        if len(parts) > 1 and parts[1] == "table":
            try:
                made = self.table_name_call(parts, call)
            except NotPlannedError as exc:
                return self.table_api_not_followed(call, qual, exc.reason)
            if made is not None:
                return made
            return self.table_api_not_followed(call, qual)
        if not guarded:
            self.check_function_binds(parts, call)
        if owner == "StreamExecutionEnvironment" and last in (
            "get_execution_environment",
            "create_local_environment",
        ):
            return api.new_environment(self._api(call), self.program)
        if last == "Configuration":
            # Configuration(other=None, j_configuration=None): a copy of other
            other = call.args.get(0, "other")
            if isinstance(other, ConfigValue):
                return ConfigValue(dict(other.entries))
            if other is not None or call.args.get(1, "j_configuration") is not None:
                self.program.unknown(
                    "configuration", "not known statically", call.where
                )
            return ConfigValue({})
        if owner == "Types":
            info = _type_info(last)
            info.spec = _type_spec(last, call)
            return info
        if last[:1].isupper():
            if not guarded:
                api.check_java_class(self._api(call), qual)
            obj = PyObject(qual, tuple(call.args.positional), dict(call.args.keywords))
            return _with_known_attrs(obj)
        if owner == "AsyncDataStream" and last in ASYNC_WAITS:
            waited = async_wait(self._api(call), last)
            if waited is not None:
                return waited
        if owner[:1].isupper():
            streams = [
                v
                for v in (*call.args.positional, *call.args.keywords.values())
                if isinstance(v, Stream)
            ]
            if streams:
                # a static method taking a stream (AsyncDataStream's): the
                # operators it adds are not followed, never silently dropped
                what = f"{owner}.{last}()"
                for stream in streams:
                    stream.env.escape(
                        f"{what} (an API chainlens does not model)", call.where
                    )
                self.program.problem(
                    "unsupported",
                    f"{what} is not modelled by chainlens: the graph after it is "
                    "not followed",
                    call.where,
                )
                return Opaque(f"unknown {last}")
            cls_name = owner
            if last == "with_dynamic_gap":
                cls_name = _DYNAMIC_GAP.get(owner, owner)
            cls_qual = ".".join([*parts[:-2], cls_name])
            obj = PyObject(
                cls_qual, tuple(call.args.positional), dict(call.args.keywords)
            )
            return _with_known_attrs(obj)
        return Opaque(f"{qual}()")

    def table_name_call(self, parts: list[str], call: Call) -> object:
        """A name of ``pyflink.table`` called (``--planner``): a table
        environment, an expression, a data type, settings; None when it is not
        handed to the planner."""
        tables = self.program.tables
        if tables is None or tables.stopped:
            return None
        owner, last = (parts[-2] if len(parts) > 1 else ""), parts[-1]
        if owner == "StreamTableEnvironment" and last == "create":
            return create_table_env(self._api(call))
        if owner == "TableEnvironment" and last == "create":
            fresh = ApiCall(self.program, Args([], {}), call.where)
            env = api.new_environment(fresh, self.program)
            return create_pure_table_env(self._api(call), env.state)
        if owner == "expressions":
            return expression_function(self._api(call), last)
        if owner == "DataTypes":
            return data_type(self._api(call), last)
        if owner == "EnvironmentSettings":
            return environment_settings(self._api(call), last)
        if owner in BUILDERS:
            return builder_start(self._api(call), owner, last)
        if owner == "udf" and last in _USER_FUNCTIONS:
            return user_function(self._api(call), last)
        return None

    # --------------------------------------------------------------- objects

    def attribute_named_at_run_time(self, owner: object) -> object | None:
        """A class of a Java package the chosen line does not have, by a name
        chosen at run time (``getattr(jvm.org...legacy, name)``): whichever
        class it is, calling it fails as an absent class does."""
        if not isinstance(owner, QualifiedRef) or not owner.qualname.startswith(
            "java."
        ):
            return None
        package = api.java_name(owner.qualname)
        if package not in api.absent_java_packages(self.program.flink_version):
            return None
        return QualifiedRef(f"{owner.qualname}.{api.RUN_TIME_CLASS}")

    def attribute(self, owner: object, name: str) -> object:
        """A method of a PyFlink object, before it is called."""
        return _attribute_getter(type(owner))(owner, name)

    def text(
        self,
        values: tuple[object, ...],
        build: Callable[[tuple[object, ...]], object],
        where: SourceRange | None,
        plain: int = 0,
    ) -> object:
        """A string naming tables by their ``str()`` (``--planner``)."""
        try:
            made = table_text(self.program, values, build, where, plain)
        except NotPlannedError as exc:
            return self.table_api_not_followed(
                Call(Args((), {}), where), "pyflink.table.Table.__str__", exc.reason
            )
        return UNRESOLVED if made is None else made

    def operate(self, name: str, operands: tuple[object, ...]) -> object:
        """An operator on an expression of the Table API (``col("a") > 1``)."""
        made = operate(name, operands)
        return UNRESOLVED if made is None else made

    def call_value(self, func: object, call: Call) -> object:
        """A Table API object called: it stays in that API (a user-defined
        function of ``--planner``: an expression, or the function its decorator
        makes)."""
        if isinstance(func, UserFunction):
            try:
                return function_call(self._api(call), func)
            except NotPlannedError as exc:
                return self.table_api_not_followed(
                    call, f"pyflink.table.udf.{func.kind}", exc.reason
                )
        if _from_table_api(func):
            self.unseen(call, "the Table API")
            return func
        return UNRESOLVED

    def call_method(
        self, receiver: object, name: str, call: Call, *, guarded: bool
    ) -> object:
        """``receiver.name(...)`` on a stream, an environment, a configuration or
        another PyFlink object."""
        return _method_handler(type(receiver))(self, receiver, name, call, guarded)

    def _table_object_method(
        self,
        receiver: TableEnvRef | TableRef | StatementSetRef,
        name: str,
        call: Call,
        guarded: bool,
    ) -> object:
        return self.table_method(receiver, name, call)

    def _user_function_method(
        self, receiver: UserFunction, name: str, call: Call, guarded: bool
    ) -> object:
        qual = f"pyflink.table.udf.{receiver.kind}.{name}"
        try:
            made = user_function_method(self._api(call), receiver, name)
        except NotPlannedError as exc:
            return self.table_api_not_followed(call, qual, exc.reason)
        if made is None:
            return self.table_api_not_followed(call, qual)
        return made

    def _table_value_method(
        self,
        receiver: TableExpression | TableSettings | TableConfigRef | TableBuilder,
        name: str,
        call: Call,
        guarded: bool,
    ) -> object:
        return self.table_value_method(receiver, name, call)

    def _stream_method(
        self, receiver: Stream, name: str, call: Call, guarded: bool
    ) -> object:
        if not guarded:
            self.check_method_exists(receiver, name, call)
        result = api.stream_method(self._api(call), receiver, name)
        if result is None:
            # its job is not known from here: never "no operators"
            self.not_modelled(receiver.env, receiver.kind, name, call)
            return Opaque(f"unknown {name}")
        return result

    def _env_method(
        self, receiver: EnvRef, name: str, call: Call, guarded: bool
    ) -> object:
        if not guarded:
            self.check_method_exists(receiver, name, call)
        result = api.env_method(self._api(call), receiver, name)
        if result is None:
            self.not_modelled(receiver.state, "StreamExecutionEnvironment", name, call)
            return Opaque(f"unknown {name}")
        return result

    def _config_method(
        self, receiver: ConfigValue, name: str, call: Call, guarded: bool
    ) -> object:
        if not guarded:
            self.check_object_binds("Configuration", name, call)
        return self.config_method(receiver, name, call)

    def _py_object_method(
        self, receiver: PyObject, name: str, call: Call, guarded: bool
    ) -> object:
        kind = receiver.simple_name
        if kind in _JOB_RESULTS:
            # after the job was submitted: a failure here keeps the job
            if not guarded:
                self.check_method_exists(receiver, name, call)
            return Opaque(f"{kind}.{name}()")
        if not guarded and receiver.qualname.startswith("pyflink."):
            self.check_object_binds(kind, name, call)
        return self.object_method(receiver, name, call)

    def _java_env_method(
        self, receiver: JavaEnvRef, name: str, call: Call, guarded: bool
    ) -> object:
        # the Java environment changed behind PyFlink's back
        receiver.state.escape(f"{name}() of its Java environment", call.where)
        return Opaque(f"{name}()")

    def _no_method(
        self, receiver: object, name: str, call: Call, guarded: bool
    ) -> object:
        return UNRESOLVED

    def table_method(
        self, receiver: TableEnvRef | TableRef | StatementSetRef, name: str, call: Call
    ) -> object:
        """A method of a table environment, a table or a statement set
        (``--planner``)."""
        kind = "Table"
        result: object = None
        try:
            if isinstance(receiver, TableEnvRef):
                kind = "TableEnvironment" if receiver.pure else "StreamTableEnvironment"
                result = table_env_method(self._api(call), receiver, name)
            elif isinstance(receiver, StatementSetRef):
                kind = "StatementSet"
                result = statement_set_method(self._api(call), receiver, name)
            else:
                result = table_method(self._api(call), receiver, name)
        except NotPlannedError as exc:
            receiver.env.escape(TABLE_API, call.where)
            return self.table_api_not_followed(
                call, f"pyflink.table.{kind}.{name}", exc.reason
            )
        if result is None:
            receiver.env.escape(TABLE_API, call.where)
            return self.table_api_not_followed(call, f"pyflink.table.{kind}.{name}")
        return result

    def table_value_method(
        self,
        receiver: TableExpression | TableSettings | TableConfigRef | TableBuilder,
        name: str,
        call: Call,
    ) -> object:
        """A method of an expression, of settings or of a table configuration
        (``--planner``)."""
        kind = "Expression"
        result: object = None
        tables = self.program.tables
        if tables is None or tables.stopped:
            return self.table_api_not_followed(call, f"pyflink.table.{kind}.{name}")
        try:
            if isinstance(receiver, TableExpression):
                result = expression_method(self._api(call), receiver, name)
            elif isinstance(receiver, TableBuilder):
                kind = receiver.cls
                result = builder_method(self._api(call), receiver, name)
            elif isinstance(receiver, TableSettings):
                kind = "EnvironmentSettings"
                result = settings_method(self._api(call), receiver, name)
            else:
                kind = "TableConfig"
                if name == "set":
                    key, value = table_config_set(self._api(call), receiver)
                    env = receiver.table_env.env
                    apply_config(self._api(call), env, ConfigValue({key: value}))
                    result = receiver
        except NotPlannedError as exc:
            return self.table_api_not_followed(
                call, f"pyflink.table.{kind}.{name}", exc.reason
            )
        if result is None:
            return self.table_api_not_followed(call, f"pyflink.table.{kind}.{name}")
        return result

    def table_api_not_followed(
        self, call: Call, qual: str, reason: str | None = None
    ) -> Opaque:
        """A Table API call chainlens does not follow: an honest unknown (with
        ``--planner``, no later Table statement is planned either)."""
        self.unseen(call, "the Table API")
        tables = self.program.tables
        if reason is not None or (tables is not None and not tables.stopped):
            self.program.unknown(
                TABLE_API,
                f"{reason or f'{qual}() is not planned'}: the planner is not asked "
                "about it or any Table statement after it, and the operators and "
                "jobs they make are not shown",
                call.where,
            )
        elif not any(u.subject == TABLE_API for u in self.program.unknowns):
            self.program.unknown(
                TABLE_API,
                "chainlens does not analyse it: the operators it adds and the "
                "jobs it submits (execute_sql, execute_insert, ...) are not shown",
                call.where,
            )
        if tables is not None:
            tables.stopped = True
        return Opaque(f"{qual}()")

    def not_modelled(self, env: EnvState, kind: str, name: str, call: Call) -> None:
        """A method chainlens does not model: said where it is called, as a
        method the chosen line has (an honest unknown) or one chainlens does not
        know (a class no table covers, or a call inside a ``try``); what goes
        into it is not followed, so its job is partly known."""
        table = pyflink_names(self.program.flink_version)
        known = name in table.classes.get(kind, frozenset())
        what = (
            "an API chainlens does not model"
            if known
            else "an API chainlens does not know"
        )
        env.escape(f"{kind}.{name}() ({what})", call.where)
        if known:
            self.program.problem(
                "unsupported",
                f"{kind}.{name}() of PyFlink {table.version} is not modelled by "
                "chainlens: the graph after it is not followed",
                call.where,
            )
            return
        self.program.problem(
            "unknown-api",
            f"{kind}.{name}() is not a PyFlink {table.version} API chainlens knows; "
            "the graph after it is not followed",
            call.where,
        )

    def check_method_exists(
        self, receiver: Stream | EnvRef | PyObject, name: str, call: Call
    ) -> None:
        """A method PyFlink's class does not have raises AttributeError when the
        program runs (an API removed in Flink 2.0, a misspelling)."""
        if isinstance(receiver, EnvRef):
            kind = "StreamExecutionEnvironment"
        elif isinstance(receiver, PyObject):
            kind = receiver.simple_name
        else:
            kind = receiver.kind
        key = (self.program.flink_version, kind, name)
        if key in _EXISTING_METHODS:
            signature = _EXISTING_METHODS[key]
        else:
            names = pyflink_names(self.program.flink_version).classes.get(kind)
            if names is None:
                return
            if name not in names:
                self.method_missing(kind, name, call)
            signature = _EXISTING_METHODS[key] = pyflink_signatures(
                self.program.flink_version
            ).method(kind, name)
        self.check_binds(f"{kind}.{name}", signature, call)
        api.check_arguments(kind, name, call.args, call.where)

    def method_missing(self, kind: str, name: str, call: Call) -> NoReturn:
        """Raise where the program calls ``kind.name``, which the chosen
        line's class does not have."""
        table = pyflink_names(self.program.flink_version)
        names = table.classes[kind]
        close = difflib.get_close_matches(name, sorted(names), n=1)
        advice = _REMOVED_METHODS.get(name, "") + table.elsewhere(kind, name) or (
            f" (did you mean {close[0]}()?)" if close else ""
        )
        raise ProgramStopError(
            f"{kind}.{name}() does not exist in PyFlink {table.version}: "
            "the program fails here with AttributeError" + advice,
            call.where,
        )

    def check_function_binds(self, parts: list[str], call: Call) -> None:
        """A static method (``TumblingEventTimeWindows.of``) or a constructor
        (``Configuration(...)``) of PyFlink called by name, checked as
        :meth:`check_binds` does: by the class's name, once the module it comes
        from is known to export that class."""
        signatures = pyflink_signatures(self.program.flink_version)
        names = pyflink_names(self.program.flink_version)
        for size in (1, 2):
            if len(parts) <= size:
                return
            cls = parts[-size]
            key = ".".join(parts[-size:])
            signature = signatures.function(key)
            if signature is None and key not in TIME_PARAMETERS:
                continue
            module = ".".join(parts[:-size])
            if cls in names.modules.get(module, frozenset()):
                self.check_binds(key, signature, call)
                self.check_time_arguments(key, signature, call)
            return

    def check_time_arguments(
        self, key: str, signature: Signature | None, call: Call
    ) -> None:
        """A window assigner or trigger given what is not a ``Time`` (a
        ``Duration``, milliseconds as an int) fails on ``to_milliseconds()``."""
        if call.args.unseen:
            return
        error = time_argument_error(
            key,
            signature,
            call.args.positional,
            call.args.keywords,
            lambda v: v.simple_name if isinstance(v, PyObject) else None,
        )
        if error is not None:
            raise ProgramStopError(error, call.where)

    def check_object_binds(self, kind: str, name: str, call: Call) -> None:
        """A method of a ``Configuration`` or a ``WatermarkStrategy`` the
        chosen line has, checked as :meth:`check_binds` does."""
        if kind not in ("Configuration", "WatermarkStrategy"):
            return
        if name not in pyflink_names(self.program.flink_version).classes.get(
            kind, frozenset()
        ):
            return
        signature = pyflink_signatures(self.program.flink_version).method(kind, name)
        self.check_binds(f"{kind}.{name}", signature, call)

    def check_binds(self, what: str, signature: Signature | None, call: Call) -> None:
        """A call whose arguments do not fit the signature PyFlink's method has
        in the chosen line raises TypeError before the method runs (not said
        where a ``*args`` or ``**kwargs`` hides the arguments)."""
        if signature is None or call.args.unseen:
            return
        error = signature.bind_error(len(call.args.positional), call.args.keywords)
        if error is None:
            return
        version = pyflink_signatures(self.program.flink_version).version
        raise ProgramStopError(
            f"{what}() {error}: the program fails here with TypeError "
            f"(PyFlink {version}: {what}{signature.shown()})",
            call.where,
        )

    def config_method(self, config: ConfigValue, name: str, call: Call) -> object:
        """``Configuration.set_string(key, value)`` and its getters."""
        if name.startswith("set_") or name == "set":
            key = call.args.get(0, "key")
            value = call.args.get(1, "value")
            if isinstance(key, str):
                config.entries[key] = value
            else:
                self.program.unknown(
                    "configuration key", "not known statically", call.where
                )
            return config
        if name == "get_string" or name == "get_integer" or name == "get":
            key = call.args.get(0, "key")
            return (
                config.entries.get(key, call.args.get(1, "default_value"))
                if isinstance(key, str)
                else Opaque("config")
            )
        if name == "add_all":
            # Java's addAll(other[, prefix]): every key of other, prefixed
            other = call.args.get(0, "other")
            prefix = call.args.get(1, "prefix")
            if isinstance(other, ConfigValue) and isinstance(prefix, str | None):
                for key, value in list(other.entries.items()):
                    config.entries[(prefix or "") + key] = value
            else:
                self.program.unknown(
                    "configuration",
                    "the keys added are not known statically",
                    call.where,
                )
            return config
        if name == "remove_config":
            key = call.args.get(0, "key")
            if isinstance(key, str):
                return config.entries.pop(key, None) is not None
            self.program.unknown(
                "configuration key removed", "not known statically", call.where
            )
            return Opaque("config")
        return Opaque("config")

    def object_method(self, obj: PyObject, name: str, call: Call) -> object:
        """A builder's method (``WatermarkStrategy.with_idleness``, ...)."""
        if name == "enable_compact":
            return api._unsupported(
                self._api(call), "FileSink compaction (enable_compact)"
            )
        flag = _BUILDER_FLAGS.get(name)
        if flag is not None:
            attrs = dict(obj.attrs)
            attrs[flag[0]] = flag[1]
            return PyObject(obj.qualname, obj.args, obj.kwargs, attrs)
        return obj

    # ---------------------------------------------------------------- escapes

    def unseen(self, call: Call, what: str) -> None:
        """Note that streams or environments passed to ``call`` leave what
        chainlens follows (their jobs are then only partly known)."""
        pending: list[object] = [*call.args.positional, *call.args.keywords.values()]
        seen = 0
        while pending and seen < 1000:
            value = pending.pop()
            seen += 1
            if isinstance(value, Stream):
                value.env.escape(what, call.where)
                for other in (value.origin, value.other):
                    if other is not None:
                        pending.append(other)
            elif isinstance(value, EnvRef | JavaEnvRef):
                value.state.escape(what, call.where)
            elif (
                isinstance(value, TableRef)
                and self.program.tables is not None
                and self.program.tables.unseen_table is None
            ):
                # its str() there may take a name of Flink's counter
                self.program.tables.unseen_table = what
            elif isinstance(value, Instance) and value.delegate is not None:
                pending.append(value.delegate)
            elif isinstance(value, (list, tuple)):
                pending.extend(value[:100])
            elif isinstance(value, dict):
                pending.extend(list(value.values())[:100])

    def _api(self, call: Call) -> ApiCall:
        """``call`` as ``pyflink_api``'s functions take it."""
        return ApiCall(self.program, call.args, call.where)


def _env_attribute(owner: EnvRef, name: str) -> object:
    if name == "_j_stream_execution_environment":
        return JavaEnvRef(owner.state)
    return BoundMethod(owner, name)


def _table_attribute(owner: TableRef, name: str) -> object:
    column = table_column(owner, name)
    return BoundMethod(owner, name) if column is None else column


def _expression_attribute(owner: TableExpression, name: str) -> object:
    made = expression_property(owner, name)
    if made is not None:
        return made
    return BoundMethod(owner, name)


def _other_attribute(owner: object, name: str) -> object:
    if _from_table_api(owner):
        return owner  # a Table API object: its methods stay in that API
    return UNRESOLVED


@by_type
def _attribute_getter(kind: type) -> Callable[[Any, str], object]:
    """How ``PyFlinkResolver.attribute`` reads an attribute of a value of type
    ``kind``, chosen once per type (each getter takes the value and the
    attribute's name)."""
    if issubclass(kind, EnvRef):
        return _env_attribute
    if issubclass(kind, Stream | ConfigValue | PyObject | JavaEnvRef):
        return BoundMethod
    if issubclass(kind, TableRef):
        return _table_attribute
    if issubclass(kind, TableEnvRef | StatementSetRef):
        return BoundMethod
    if issubclass(kind, TableSettings | TableConfigRef | TableBuilder):
        return BoundMethod
    if issubclass(kind, UserFunction):
        return BoundMethod
    if issubclass(kind, TableExpression):
        return _expression_attribute
    return _other_attribute


#: What handles a method of a receiver (it takes the resolver, the receiver
#: of its kind, the method's name, the call and whether it is guarded).
_MethodHandler = Callable[..., object]


@by_type
def _method_handler(kind: type) -> _MethodHandler:
    """How ``PyFlinkResolver.call_method`` treats a receiver of type ``kind``,
    chosen once per type."""
    if issubclass(kind, TableEnvRef | TableRef | StatementSetRef):
        return PyFlinkResolver._table_object_method
    if issubclass(kind, UserFunction):
        return PyFlinkResolver._user_function_method
    if issubclass(
        kind, TableExpression | TableSettings | TableConfigRef | TableBuilder
    ):
        return PyFlinkResolver._table_value_method
    if issubclass(kind, Stream):
        return PyFlinkResolver._stream_method
    if issubclass(kind, EnvRef):
        return PyFlinkResolver._env_method
    if issubclass(kind, ConfigValue):
        return PyFlinkResolver._config_method
    if issubclass(kind, PyObject):
        return PyFlinkResolver._py_object_method
    if issubclass(kind, JavaEnvRef):
        return PyFlinkResolver._java_env_method
    return PyFlinkResolver._no_method


#: The methods the chosen line's classes have, by (Flink line, class, method):
#: their signatures (None: not known), looked up once per process.
_EXISTING_METHODS: dict[tuple[str, str, str], Signature | None] = {}

#: The makers of aggregate functions that ask the function's own methods for
#: the types they are not given.
_AGGREGATE_MAKERS = frozenset({"pyflink.table.udf.udaf", "pyflink.table.udf.udtaf"})


def _from_table_api(value: object) -> bool:
    """Tell whether ``value`` is a Table API object (which is not followed)."""
    return isinstance(value, Opaque) and value.description.startswith("pyflink.table.")


def _type_spec(name: str, call: Call) -> list[object] | None:
    """``Types.name(...)`` as the Table planner is given it, if static."""
    if call.args.keywords or call.args.unseen:
        return None
    arguments: list[object] = []
    for value in call.args.positional:
        converted = _spec_argument(value, 0)
        if converted is None:
            return None
        arguments.append(converted)
    return [name, *arguments]


def _spec_argument(value: object, depth: int) -> object:
    if depth > 20:
        return None
    if isinstance(value, TypeInfo):
        return None if value.spec is None else {"type": value.spec}
    if isinstance(value, str | int) and not isinstance(value, bool):
        return value
    if isinstance(value, list | tuple) and len(value) <= 1000:
        items = [_spec_argument(item, depth + 1) for item in value]
        return None if any(item is None for item in items) else items
    return None


def _type_info(name: str) -> TypeInfo:
    if name in _ROW_TYPES:
        return TypeInfo(OutputType.ROW, name)
    if name in _PICKLED_TYPES:
        return TypeInfo(OutputType.PICKLED, name)
    return TypeInfo(OutputType.OTHER, name)


def _with_known_attrs(obj: PyObject) -> PyObject:
    name = obj.simple_name
    if name in _BOUNDED_SOURCES:
        obj.attrs.setdefault("bounded", True)
    elif name in _UNBOUNDED_SOURCES:
        obj.attrs.setdefault("bounded", False)
    if name in _SINKS_WITH_COMMITTER:
        obj.attrs.setdefault("committer", True)
    return obj
