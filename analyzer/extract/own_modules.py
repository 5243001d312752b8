"""The program's own modules, followed by the evaluator as Python imports them.

``from M import a`` where ``M`` is one of the program's modules (found as
Python finds it: :class:`~chainlens.analyzer.extract.modules.ModuleFinder`)
runs that module's statements once, in its own context (positions in its own
file, reached from the program's import), and binds what it defines; a module
that is not the program's (the standard library, PyFlink) is a name the
resolver knows.  A part of the :class:`~chainlens.analyzer.extract.evaluator.Evaluator`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from chainlens.analyzer.extract.flow import (
    BreakError,
    Context,
    ContinueError,
    ReturnError,
    StopError,
)
from chainlens.analyzer.extract.interface import ProgramStopError, Record, Resolver
from chainlens.analyzer.extract.modules import (
    MAX_MODULE_BYTES,
    MAX_MODULES,
    PARSED,
    Guard,
    ModuleFinder,
    ReadText,
)
from chainlens.analyzer.extract.syntax import alias_name, dotted
from chainlens.analyzer.extract.values import ModuleValue, Opaque, QualifiedRef
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.values import Symbol


class OwnModules:
    """Imports of the program's own modules (a part of the Evaluator)."""

    if TYPE_CHECKING:  # what the Evaluator provides
        record: Record
        resolver: Resolver
        path: str | None
        read: ReadText
        guard: Guard | None
        guarded: int
        modules: dict[str, ModuleValue | None]
        context: Context
        top: int
        via: SourceRange | None
        _finder: ModuleFinder | None

        def exec_statement(
            self, stmt: cst.BaseStatement, scope: dict[str, object]
        ) -> None: ...

        def where(self, node: cst.CSTNode) -> SourceRange | None: ...

        def note_unknown(
            self, subject: str, reason: str, node: cst.CSTNode
        ) -> None: ...

    def exec_import_from(self, stmt: cst.ImportFrom, scope: dict[str, object]) -> None:
        """``from M import a, b as c``: from one of the program's own modules,
        the values it defines; otherwise names chainlens resolves itself."""
        level = len(stmt.relative)
        name = dotted(stmt.module) if stmt.module is not None else ""
        if level:
            absolute = self.finder().resolve_relative(self.context.found, level, name)
            if absolute is None:
                self.note_unknown(
                    "import",
                    "a relative import chainlens cannot resolve (the program "
                    "runs as a script, or the import goes above its package): "
                    "what it imports is not followed",
                    stmt,
                )
                if not isinstance(stmt.names, cst.ImportStar):
                    for alias in stmt.names:
                        local = alias_name(alias)
                        scope[local] = Symbol(
                            f"`{local}`", "imported by an unresolved relative import"
                        )
                return
            name = absolute
        own = self.load_module(name, stmt) if name else None
        if isinstance(stmt.names, cst.ImportStar):
            if own is not None:
                scope.update(
                    {k: v for k, v in own.namespace.items() if not k.startswith("_")}
                )
                return
            names = (
                self.resolver.star_names(name)
                if self.resolver.owns_module(name)
                else None
            )
            if names is None:
                self.note_unknown(
                    "import",
                    f"`from {name} import *`: chainlens does not know the names it "
                    "binds (only the __all__ of PyFlink's modules): a name used "
                    "after it that it binds is not followed",
                    stmt,
                )
                return
            scope.update({n: QualifiedRef(f"{name}.{n}") for n in sorted(names)})
            return
        for alias in stmt.names:
            attr = dotted(alias.name)
            local = alias_name(alias)
            if (
                own is None
                and not self.guarded
                and (missing := self.resolver.missing_name(name, attr)) is not None
            ):
                raise ProgramStopError(missing, self.where(stmt))
            if own is None:
                scope[local] = QualifiedRef(f"{name}.{attr}")
            elif attr in own.namespace:
                scope[local] = own.namespace[attr]
            else:
                sub = self.load_module(f"{name}.{attr}", stmt)
                scope[local] = (
                    sub if sub is not None else Opaque(f"{name}.{attr} (not defined)")
                )

    def finder(self) -> ModuleFinder:
        if self._finder is None:
            self._finder = ModuleFinder(Path(self.path or "__main__.py"))
        return self._finder

    def load_module(self, name: str, stmt: cst.CSTNode) -> ModuleValue | None:
        """Execute the program's own module ``name`` (once; its packages first)
        and return it; None for a module that is not the program's."""
        if name in self.modules:
            return self.modules[name]
        head = name.split(".", 1)[0]
        if (
            self.path is None
            or head in sys.stdlib_module_names
            or self.resolver.owns_module(name)
        ):
            return None
        parent: ModuleValue | None = None
        if "." in name:
            parent = self.load_module(name.rsplit(".", 1)[0], stmt)
            if parent is None:
                self.modules[name] = None
                return None
        found = self.finder().find(name)
        if found is None:
            self.modules[name] = None
            return None
        followed = sum(1 for m in self.modules.values() if m is not None)
        if followed >= MAX_MODULES:
            self.note_unknown(
                "module",
                f"module {name} is not followed: the program has more than "
                f"{MAX_MODULES} modules of its own",
                stmt,
            )
            self.modules[name] = None
            return None
        if found.path.is_dir():  # a namespace package: nothing to run
            value = ModuleValue(name, {"__name__": name})
            self.modules[name] = value
            if parent is not None:
                parent.namespace.setdefault(name.rsplit(".", 1)[1], value)
            return value
        text = self.read(found.path)
        parsed = None
        refused = None
        if text is not None and len(text) <= MAX_MODULE_BYTES:
            # parsed and guarded once per text (the next edit of the program
            # finds it so)
            parsed, refused = PARSED.parse(found.path, text, self.guard)
            if refused is not None:
                refused = refused.removesuffix("; the file was not analysed")
                refused = refused.removesuffix("; it was not analysed")
        if parsed is None:
            why = refused or "it cannot be read or parsed"
            self.note_unknown(
                "module",
                f"module {name} ({found.path}) is not followed: {why}",
                stmt,
            )
            self.modules[name] = None
            return None
        value = ModuleValue(name, {"__name__": name})
        self.modules[name] = value  # before it runs: an import cycle sees it
        if parent is not None:
            parent.namespace.setdefault(name.rsplit(".", 1)[1], value)
        self.record.modules.append(str(found.path))
        context = Context(parsed.locator(), str(found.path), found)
        caller = (self.context, self.top, self.via)
        if self.context.path is None:
            self.via = self.where(stmt)  # the program's import
        self.context = context
        try:
            for index, statement in enumerate(parsed.module.body):
                self.top = index
                self.exec_statement(statement, value.namespace)
        except (StopError, ReturnError, BreakError, ContinueError):
            pass
        finally:
            self.context, self.top, self.via = caller
        return value
