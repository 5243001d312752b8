"""Piece-wise LibCST parsing (an editor's re-analysis) equals parsing the whole text."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import libcst as cst
import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.extract.parse import ModuleCache
from chainlens.analyzer.extract.positions import statement_calls
from chainlens.analyzer.render.graphs import result_to_json
from tests.support import ROOT, first_arguments

CORPUS = sorted((ROOT / "tests" / "fixtures" / "pipelines").glob("*.py"))
SOURCES = sorted((ROOT / "analyzer").rglob("*.py"))

TRICKY = {
    "two-space indent after imports": "import a\n\n\ndef f():\n  return 1\n\n\ndef g():\n  if a:\n    return 2\n",
    "indented comment after a block": "def f():\n    x = 1\n\n\n # odd comment\n\ndef g():\n    pass\n",
    "comment after a one-line suite": "if a: pass\n    # x = 1\nb = 2\n",
    "semicolons": "a = 1; b = 2\nc = 3\n",
    "decorators and comments": "# head\n\n@dec\n# between\n@dec2(1)\ndef f():\n    pass\n# tail\n",
    "CRLF": "import a\r\n\r\ndef f():\r\n    return 1\r\nx = f()\r\n",
    "no final newline": "import a\nx = 1",
    "trailing comments only": "x = 1\n\n# end\n# more\n",
    "tabs": "def f():\n\treturn 1\n\ndef g():\n\treturn 2\n",
    "mixed indentation per function": "def f():\n  return 1\n\ndef g():\n    return 2\n",
    "backslash continuation": "x = 1 + \\\n    2\ny = 3\n",
    "multi-line string": 's = """\n  text\n"""\nt = 1\n',
}


#: long functions and classes, each cut into chunks of its body (with a
#: cache that cuts every body it can, statement by statement)
BODIES = {
    "comment deeper after a nested block": "def f():\n    for x in y:\n        a()\n        # deeper\n    b()\n    c()\n",
    "comment at column 0 in a body": "def f():\n    a()\n# col0\n    b()\n    c()\n",
    "whitespace-only lines": "def f():\n    a()\n        \n    b()\n    \n    c()\n",
    "whitespace after a nested block": "def f():\n    if x:\n        a()\n        \n    b()\n",
    "comments after the colon": "def f():  # head\n    # first\n\n    a()\n    b()\n",
    "CRLF": "def f():\r\n    a()\r\n\r\n    b()\r\n",
    "tabs": "def f():\n\ta()\n\tif x:\n\t\tb()\n\tc()\n",
    "semicolons": "def f():\n    a(); b()\n    c()\n",
    "no final newline": "def f():\n    a()\n    b()",
    "trailing comments": "def f():\n    a()\n    b()\n    # end\n# dedented end\n",
    "nested decorated def": "def f():\n    a()\n    @dec\n    # c\n    def g():\n        pass\n    b()\n",
    "class": '@d\nclass A(B, metaclass=M):\n    """doc"""\n    x = 1\n\n    def m(self):\n        return 1\n\n    async def n(self):\n        await z()\n',
    "async def": "async def f(a=g(), *, b: h() = 1) -> k():\n    await a()\n    async for x in y:\n        pass\n    b()\n",
    "backslash": "def f():\n    x = 1 + \\\n        2\n    y = 3\n",
    "string with dedented lines": 'def f():\n    s = """\nhello\n  there"""\n    t = 1\n    u = 2\n',
    "nested block with its own indent": "def f():\n    for x in y:\n      a()\n    b()\n",
    "two-space body, four-space file": "if z:\n    pass\ndef f():\n  a()\n  b()\n",
    "comment deeper before a statement": "def f():\n    a()\n        # deeper alone\n    b()\n",
    "comment less deep before a statement": "def f():\n    a()\n  # less\n    b()\n",
    "one-line def": "def f(): a(); b()\n",
    "multi-line parameters": "def f(\n    a,\n    # c\n    b=g(),\n):\n    # lead\n    a()\n    b()\n",
    "form feed": "def f():\n    a()\n\x0c\n    b()\n",
    "blank lines at the end": "def f():\n    a()\n    b()\n\n\n",
    "comment last, no final newline": "def f():\n    a()\n    b()\n    # end",
    "nested def with a trailing comment": "def f():\n    def g():\n        a()\n        # in g\n\n    b()\n",
    "while-else": "def f():\n    while x:\n        a()\n    else:\n        b()\n    c()\n",
    "try-finally": "def f():\n    try:\n        a()\n    except E:\n        b()\n    # between\n    finally:\n        c()\n    d()\n",
    "match": "def f():\n    match x:\n        case 1:\n            a()\n    b()\n",
}


def assert_same(text: str, cache: ModuleCache) -> cst.Module:
    pieces = cache.parse_module(text, ast.parse(text))
    whole = cst.parse_module(text)
    assert pieces.code == text
    assert pieces.deep_equals(whole)
    return pieces


def reparsed(text: str, cache: ModuleCache) -> cst.Module:
    """An editor's parse of a new version: its changed lines only."""
    module = cache.reparse(text)
    assert module is not None
    assert module.code == text
    assert module.deep_equals(cst.parse_module(text))
    return module


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_texts(name: str) -> None:
    cache = ModuleCache()
    assert_same(TRICKY[name], cache)
    assert_same(TRICKY[name], cache)  # again, from the cache


def test_corpus_and_own_sources() -> None:
    cache = ModuleCache()
    for path in [*CORPUS, *SOURCES]:
        assert_same(path.read_text(encoding="utf-8"), cache)


def _cutting() -> ModuleCache:
    return ModuleCache(split_lines=0, chunk_lines=1)


def _assert_same_calls(text: str, cache: ModuleCache) -> None:
    """The calls of each statement, paired from the chunks, are those paired
    from the whole module."""
    module = cache.parse_module(text, ast.parse(text))
    known = cache.known_calls(module)
    whole = statement_calls(module, text)
    if known is None or whole is None:
        return  # the pieces disagree on the indentation, or the pairing fails:
        # the module was parsed whole, and its calls are located from it
    for index, expected in enumerate(whole):
        found = known(index)
        assert found is not None
        assert {id(c): w for c, w in found} == {id(c): w for c, w in expected}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_bodies_cut_into_chunks(name: str) -> None:
    newline = "\r\n" if "CRLF" in name else "\n"
    text = f"import os{newline}" + BODIES[name]
    cache = _cutting()
    assert_same(text, cache)
    assert_same(text, cache)
    _assert_same_calls(text, cache)


def test_corpus_and_own_sources_cut_into_chunks() -> None:
    cut = 0
    for path in [*CORPUS, *SOURCES]:
        cache = _cutting()
        text = path.read_text(encoding="utf-8")
        assert_same(text, cache)
        _assert_same_calls(text, cache)
        cut += any(piece.parts for piece in cache._pieces.values())
    assert cut > len(CORPUS)  # most files have a function or class that was cut


def test_an_edit_in_a_long_function_parses_its_chunk_only() -> None:
    stages = "".join(
        f"    s{i} = s{i - 1}.map(lambda e: e + {i}).name('stage {i}')\n"
        for i in range(1, 200)
    )
    text = (
        "import os\n\n\ndef main():\n    s0 = env.from_collection([1])\n"
        f"{stages}    s199.print()\n"
    )
    cache = ModuleCache(keep_current_only=True)
    cache.parse_module(text, ast.parse(text))
    before = cache.misses
    edited = text.replace("'stage 100'", "'stage one hundred'").replace(
        "e + 100)", "e * 100)"
    )
    module = cache.reparse(edited)
    assert module is not None
    assert module.code == edited
    assert module.deep_equals(cst.parse_module(edited))
    assert cache.misses - before == 1
    parsed = [p for p in cache._pieces.values() if "stage one hundred" in p.text]
    assert min(len(p.text.splitlines()) for p in parsed) <= 4  # the chunk
    _assert_same_calls(edited, cache)
    # one literal changed: the chunk is made from its last version's nodes
    typed = edited.replace("'stage one hundred'", "'stage one hundred and one'")
    module = cache.reparse(typed)
    assert module is not None
    assert module.deep_equals(cst.parse_module(typed))
    assert cache.misses - before == 1
    _assert_same_calls(typed, cache)


def test_a_comment_above_a_long_function_parses_no_more_than_its_neighbour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stages = "".join(
        f"    s{i} = s{i - 1}.map(f).name('stage {i}')\n" for i in range(1, 200)
    )
    text = (
        f"import os\n\nX = 1\n\n\ndef main():\n    s0 = s\n{stages}    s199.print()\n"
    )
    cache = ModuleCache(keep_current_only=True)
    cache.parse_module(text, ast.parse(text))
    parsed: list[str] = []
    real = ast.parse

    def counting(source: str, *args: object, **kwargs: object) -> ast.Module:
        parsed.append(source)
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ast, "parse", counting)
    for edited in (
        text.replace("\n\n\ndef main", "\n\n# above main\ndef main"),
        text.replace("\n\n\ndef main", "\n\n\n\n# above main\n\ndef main"),
        text.replace("\nX = 1\n", "\n# new\nX = 1\n"),
    ):
        cache.parse_module(text, real(text))
        parsed.clear()
        module = cache.reparse(edited)
        assert module is not None
        assert module.deep_equals(cst.parse_module(edited))
        assert parsed
        assert max(len(p.splitlines()) for p in parsed) <= 8  # not main's 200 lines


def test_an_edit_reparses_only_its_statement() -> None:
    text = (ROOT / "tests" / "fixtures" / "pipelines" / "example_orders.py").read_text(
        encoding="utf-8"
    )
    cache = ModuleCache()
    cache.parse_module(text, ast.parse(text))
    before = cache.misses
    edited = text.replace('.name(f"parse {name}")', '.name(f"parsed {name}")')
    assert edited != text
    assert_same(edited, cache)
    assert cache.misses - before == 1


def test_the_statements_an_edit_left_alone_are_the_same_nodes() -> None:
    """Blank lines between top-level statements lead the next statement in
    LibCST's tree; a statement so led and left alone by an edit is the node it
    was (the 300 classes of a 4,000-line program were made again on every
    edit), and one whose leading lines changed is not."""
    text = (ROOT / "tests" / "fixtures" / "pipelines" / "example_orders.py").read_text(
        encoding="utf-8"
    )
    cache = ModuleCache()
    before = cache.parse_module(text, ast.parse(text))
    edited = text.replace('.name(f"parse {name}")', '.name(f"parsed {name}")')
    after = reparsed(edited, cache)
    led = [i for i, stmt in enumerate(before.body) if stmt.leading_lines]
    assert len(led) > 3  # a real test
    changed = [
        i
        for i, (a, b) in enumerate(zip(before.body, after.body, strict=True))
        if a is not b
    ]
    assert len(changed) == 1, changed
    # more blank lines above a statement: that one is led anew, the rest stay
    index = led[-1]
    first_line = before.body[index].leading_lines[-1]
    assert isinstance(first_line, cst.EmptyLine)
    code = before.code_for_node(before.body[index]).lstrip("\n")
    assert code in edited
    spaced = edited.replace(code, "\n" + code, 1)
    again = reparsed(spaced, cache)
    moved = [
        i
        for i, (a, b) in enumerate(zip(after.body, again.body, strict=True))
        if a is not b
    ]
    assert index in moved, moved
    assert len(moved) <= 2, moved


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_analysis_with_the_cache_equals_analysis_without(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    cache = ModuleCache()
    plain = result_to_json(analyze_source(str(path), text))
    assert result_to_json(analyze_source(str(path), text, cache=cache)) == plain
    assert result_to_json(analyze_source(str(path), text, cache=cache)) == plain


def _edits(text: str) -> list[str]:
    """Versions an editor would send: typing, deleting, joining, breaking."""
    lines = text.split("\n")
    middle = len(lines) // 2
    versions = [
        "\n".join([*lines[:middle], "x_new = 1", *lines[middle:]]),
        "\n".join([*lines[:middle], "x_new = (", *lines[middle:]]),  # a syntax error
        "\n".join(
            [
                *lines[:middle],
                "if x_new:",
                "    pass",
                "else:",
                "    pass",
                *lines[middle:],
            ]
        ),
        "\n".join([*lines[:middle], "    # an indented comment", *lines[middle:]]),
        "\n".join(lines[: middle - 1] + lines[middle + 1 :]),
        "\n".join([*lines, "# the end"]),
        "# a new first line\n" + text,
        "\n".join([*lines[:middle], "# a comment at column 0", "", *lines[middle:]]),
        *_comments_before_statements(text),
        text,
    ]
    return versions


def _comments_before_statements(text: str) -> list[str]:
    """A comment at column 0 just above each top-level statement, one after
    another; then each removed again, and an empty line added in its place."""
    lines = text.split("\n")
    starts = [s.lineno - 1 for s in ast.parse(text).body]
    versions = []
    for start in starts[::3]:
        lines = [*lines[:start], f"# above line {start}", *lines[start:]]
        versions.append("\n".join(lines))
        starts = [s + (s >= start) for s in starts]
    for start in starts[::3]:
        if lines[start - 1].startswith("# above"):
            lines = [*lines[: start - 1], "", *lines[start:]]
            versions.append("\n".join(lines))
    return versions


@pytest.mark.parametrize("path", CORPUS[::7], ids=lambda p: p.stem)
def test_reparse_after_edits_equals_parsing_the_whole_text(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    cache = ModuleCache()
    cache.parse_module(text, ast.parse(text))
    for version in _edits(text):
        try:
            whole = cst.parse_module(version)
            ast.parse(version)
        except (SyntaxError, cst.ParserSyntaxError):
            assert cache.reparse(version) is None
            continue
        module = cache.reparse(version) or cache.parse_module(
            version, ast.parse(version)
        )
        assert module.code == version
        assert module.deep_equals(whole)


def _indented_edits(text: str, seed: int) -> list[str]:
    """Versions an editor would send while typing inside function bodies:
    lines added at the indentation of the line they go before (statements,
    comments, deeper comments, an unclosed parenthesis), lines removed,
    changed and doubled."""
    chooser = random.Random(seed)
    versions = []
    for _ in range(6):
        lines = (versions[-1] if versions else text).split("\n")
        at = chooser.randrange(len(lines))
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        kind = chooser.randrange(8)
        if kind == 0:
            lines.insert(at, indent + "x_new = f(1)")
        elif kind == 1:
            del lines[at]
        elif kind == 2:
            lines[at] = lines[at].replace("(", "( ", 1)
        elif kind == 3:
            lines.insert(at, indent + "# a comment")
        elif kind == 4:
            lines.insert(at, indent + "    # deeper")
        elif kind == 5:
            lines.insert(at, "" if chooser.randrange(2) else "# at column 0")
        elif kind == 6:
            lines.insert(at, indent + "x = (")
        else:
            lines.insert(at, lines[at])
        versions.append("\n".join(lines))
    return versions


@pytest.mark.parametrize("path", CORPUS[::3] + SOURCES[::4], ids=lambda p: p.stem)
def test_edits_inside_bodies_cut_into_chunks_equal_parsing_the_whole_text(
    path: Path,
) -> None:
    text = path.read_text(encoding="utf-8")
    cache = ModuleCache(keep_current_only=True, split_lines=0, chunk_lines=2)
    cache.parse_module(text, ast.parse(text))
    for version in _indented_edits(text, len(text)):
        try:
            whole = cst.parse_module(version)
            ast.parse(version)
        except (SyntaxError, cst.ParserSyntaxError):
            continue
        if whole.code != version:
            continue  # LibCST itself does not give this text back
        module = cache.reparse(version) or cache.parse_module(
            version, ast.parse(version)
        )
        assert module.code == version
        assert module.deep_equals(whole)
        _assert_same_calls(version, cache)


def test_an_indented_comment_between_top_level_statements_survives_a_reparse() -> None:
    """LibCST parses a piece that ends with an indented comment without the
    blank lines before it: such a piece is never cut."""
    before = "import x\n\n\nclass A:\n    pass\n"
    after = "import x\n\n    # deeper\n\nclass A:\n    pass\n"
    cache = ModuleCache(keep_current_only=True)
    cache.parse_module(before, ast.parse(before))
    module = cache.reparse(after) or cache.parse_module(after, ast.parse(after))
    assert module.code == after
    assert module.deep_equals(cst.parse_module(after))


def test_reparse_refuses_what_does_not_parse_alone() -> None:
    text = "def f():\n    return 1\n\n\nx = f()\n\n\ny = 2\n"
    cache = ModuleCache()
    cache.parse_module(text, ast.parse(text))
    assert cache.reparse(text.replace("x = f()", "x = f(")) is None


@pytest.mark.parametrize("path", CORPUS[::5], ids=lambda p: p.stem)
def test_analysis_over_edits_with_the_cache_equals_analysis_without(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    cache = ModuleCache()
    for version in [text, *_edits(text)]:
        plain = result_to_json(analyze_source(str(path), version))
        assert result_to_json(analyze_source(str(path), version, cache=cache)) == plain


LAMBDAS = {
    "plain": "f(lambda e: e[0])\n",
    "parenthesized": "f((lambda e: e[0]))\nf(( lambda  e :  e[0] ) )\n",
    "parenthesized body": "f(lambda e: (e[0]))\nf(lambda e: (e[0], e[1]))\n",
    "laid out on lines": "f(\n    lambda e: (\n        e[0],  # the key\n        e[1],\n    )\n)\n",
    "backslash": "f(lambda e: \\\n    e[0])\n",
    "not ASCII": "f(lambda é: ('ü', é))\nf(lambda e: e + 'ß')\n",
    "nested": "f(lambda e: g(lambda x: x + e))\n",
    "defaults": "f(lambda e, k=h(lambda y: y): e)\n",
    "in an f-string": "f(f'{(lambda x: x)(1)}', lambda e: e)\n",
    "in a function": "def job(s):\n    return s.map(lambda e: e)\\\n        .filter(lambda e: e)\n",
    "star and keywords": "f(*[lambda: 1], key=lambda a, *b, c=2, **d: (a, b))\n",
}


def _lambdas(node: cst.CSTNode) -> list[cst.Lambda]:
    found: list[cst.Lambda] = []

    class Visitor(cst.CSTVisitor):
        def visit_Lambda(self, lam: cst.Lambda) -> None:  # noqa: N802
            found.append(lam)

    node.visit(Visitor())
    return found


@pytest.mark.parametrize(
    "text",
    [*LAMBDAS.values(), *(p.read_text(encoding="utf-8") for p in CORPUS)],
    ids=[*LAMBDAS, *(p.name for p in CORPUS)],
)
def test_a_lambda_text_cut_from_the_source_is_the_generated_one(text: str) -> None:
    """The editor's parse cuts each lambda's text from the source where ``ast``
    puts it; it is the text LibCST generates from the node (whitespace folded)."""
    from chainlens.analyzer.extract import positions

    module = cst.parse_module(text)
    positions._LAMBDA_TEXTS.clear()
    assert positions.statement_calls(module, text) is not None
    empty = cst.Module(body=())
    lambdas = _lambdas(module)
    cut = {id(n): t for n, t in positions._LAMBDA_TEXTS.values()}
    for node in lambdas:
        generated = " ".join(empty.code_for_node(node).split())
        if id(node) in cut:
            assert cut[id(node)] == generated
        assert positions.lambda_text(node) == generated
    if lambdas and "f'" not in text:
        assert all(id(node) in cut for node in lambdas)


def test_an_edit_beside_a_long_statement_does_not_parse_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A statement edited next to a literal of thousands of lines (the
    ``if`` after it) is parsed alone, as are the others; a change that parses
    only with its neighbour (an ``else:`` added to the ``if`` above, a line
    indented into its block) is parsed with it; each gives the whole text's
    module."""
    rows = "rows = [\n" + "".join(f"    ({i}, 'v{i}'),\n" for i in range(3000)) + "]\n"
    text = f"import os\n\n{rows}if os.sep:\n    a = 1\nb = len(rows)\nc = 3\n"
    versions = [
        text.replace("b = len(rows)", "b = len(rows) + 1"),
        text.replace("c = 3\n", "c = 3\nd = 4\n"),
        text.replace("    a = 1\n", "    a = 1\nelse:\n    a = 2\n"),
        text.replace("b = len(rows)", "    b = len(rows)"),
        text.replace("if os.sep:", "if not os.sep:"),
    ]
    long_parses: list[int] = []
    regions: list[int] = []
    for version in versions:
        cache = ModuleCache()
        cache.parse_module(text, ast.parse(text))
        with monkeypatch.context() as spied:
            parsed = first_arguments(spied, ast, "parse")
            module = cache.reparse(version)
        assert module is not None
        assert module.code == version
        assert module.deep_equals(cst.parse_module(version))
        long_parses.append(sum("(2999, 'v2999')" in source for source in parsed))
        regions.append(len(parsed))
    assert long_parses == [0] * len(versions)
    # an else added and a line indented parse only with the if above: the
    # statements changed alone do not parse, then they are parsed with it
    assert regions == [1, 1, 2, 2, 1]


def test_a_long_literal_of_constants_is_read_once_and_changed_by_no_one_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows written out in the program are read once per node (an edit
    elsewhere keeps the node); each analysis gets a list of its own, so what
    the program appends is not there the next time, and every analysis is
    the one made without reading them once."""
    from chainlens.analyzer.extract import evaluator

    rows = "".join(
        f"    ('k{i % 7}', {i}, -{i}.5, b'x', None, (True, 'v')),\n" for i in range(300)
    )
    text = (
        "from pyflink.common import Types\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        f"ROWS = [\n{rows}]\n"
        "ONE = 1\n"
        "MIXED = [\n" + "    1,\n" * 40 + "    ONE,\n]\n"
        "ROWS.append(('extra', 1, 2.0, b'y', None, (False, 'w')))\n"
        "env.set_parallelism(len(ROWS) - 300 + len(MIXED) - 41 + MIXED[-1])\n"
        "s = env.from_collection(ROWS).key_by(lambda r: r[0]).reduce(lambda a, b: a)\n"
        "s.name('rows').set_parallelism(4).print()\n"
        "env.execute('rows')\n"
    )
    versions = [
        text,
        *(
            text.replace("set_parallelism(4)", f"set_parallelism({n})")
            for n in (5, 6, 7)
        ),
    ]
    cache = ModuleCache()
    elements = first_arguments(monkeypatch, evaluator.Evaluator, "_elements")
    once = [result_to_json(analyze_source("rows.py", v, cache=cache)) for v in versions]
    read = [len(items) for items in elements]
    assert read.count(300) == 1  # the rows, once
    assert read.count(41) == len(versions)  # not constants: every time
    (job,) = analyze_source("rows.py", text, cache=cache).jobs
    assert job.spec.env.parallelism == 2  # one row appended, one item more
    monkeypatch.setattr(evaluator, "_CONSTANT_FROM", 1 << 30)  # never kept
    plain = [result_to_json(analyze_source("rows.py", v)) for v in versions]
    assert once == plain


def test_the_lambda_texts_of_a_program_are_cut_from_its_source_run_after_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check (no editor's parse) cuts each lambda's text from the source
    as it pairs the calls of a statement, and a statement of 1,500 lambdas
    keeps its texts however many programs were analysed before: none is
    generated from its node (80 ms for the 1,800 lambdas of a 4,200-line
    program)."""
    from chainlens.analyzer.api import analyze_source
    from chainlens.analyzer.extract import positions

    stages = "\n".join(
        f"    s = s.map(lambda x: x + {i}).filter(lambda x: x > {i})"
        for i in range(750)
    )
    text = (
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "def main():\n"
        "    env = StreamExecutionEnvironment.get_execution_environment()\n"
        "    s = env.from_collection([1, 2])\n"
        f"{stages}\n"
        "    s.print()\n"
        "    env.execute('lambdas')\n"
        "main()\n"
    )
    generated = 0

    class Counted:
        def code_for_node(self, node: cst.CSTNode) -> str:
            nonlocal generated
            if isinstance(node, cst.Lambda):
                generated += 1
            return cst.Module(body=()).code_for_node(node)

    monkeypatch.setattr(positions, "_EMPTY", Counted())
    for run in range(3):  # 4,500 texts kept in all, more than are kept at once
        generated = 0
        result = analyze_source("lambdas.py", text + "\n" * run)
        assert result.jobs
        assert result.jobs[0].stream_graph is not None
        assert generated == 0, run


def test_the_walk_of_libcst_nodes_reads_their_fields_only() -> None:
    """The call index's walk reads each node class's dataclass fields, not
    its class variables (``__dataclass_fields__`` names LibCST's
    ``__slots__`` too, whose names the walk pushed for every node: most of
    what it popped)."""
    import dataclasses

    from chainlens.analyzer.extract import positions

    classes = [
        c
        for c in vars(cst).values()
        if isinstance(c, type) and issubclass(c, cst.CSTNode) and c is not cst.CSTNode
    ]
    assert len(classes) > 100
    for cls in classes:
        if not dataclasses.is_dataclass(cls):
            continue
        names = {f.name for f in dataclasses.fields(cls)}
        assert set(positions._fields(cls)) <= names, cls


def _nodes(module: cst.Module) -> list[int]:
    """The identity of every node of ``module`` (a node may be at two
    places: each place counts)."""
    found: list[int] = []

    class Visitor(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(id(node))
            return True

    module.visit(Visitor())
    return found


_REDUCE = "s.key_by(lambda v: v).reduce(lambda a, b: a + b).print()\n"


@pytest.mark.parametrize(
    "text",
    [
        # statements written alike at the module level
        "from pyflink.datastream import StreamExecutionEnvironment\n\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        f"s = env.from_collection([1, 2, 3])\n{_REDUCE}x = 1\n{_REDUCE}{_REDUCE}"
        "env.execute('alike')\n",
        # chunks written alike in a long function (three lines each)
        "from pyflink.datastream import StreamExecutionEnvironment\n\n\n"
        "def main():\n"
        "    env = StreamExecutionEnvironment.get_execution_environment()\n"
        "    s = env.from_collection([1, 2, 3])\n"
        + "".join(f"    z{i} = {i}\n" for i in range(42))
        + f"    {_REDUCE}    x = 1\n    y = 2\n"
        + "".join(f"    z{i} = {i}\n" for i in range(42))
        + f"    {_REDUCE}    x = 1\n    y = 2\n"
        + "".join(f"    z{i} = {i}\n" for i in range(42))
        + "    env.execute('alike')\n\n\nmain()\n",
    ],
    ids=["statements", "chunks"],
)
def test_code_written_alike_twice_has_nodes_of_its_own(text: str) -> None:
    """Each place gets nodes of its own (the analysis finds each keyed
    reduce where it is, as without the cache), and an edit elsewhere keeps
    them: the same nodes as before."""
    cache = ModuleCache(keep_current_only=True)
    cached = analyze_source("p.py", text, cache=cache)
    fresh = analyze_source("p.py", text)
    assert cached.diagnostics == fresh.diagnostics
    assert len({d.range.start.line for d in fresh.diagnostics}) >= 2
    module = cache.module_of(text)
    assert module is not None
    nodes = _nodes(module)
    assert len(nodes) == len(set(nodes))
    edited = text.replace("[1, 2, 3]", "[1, 2, 4]")
    again = analyze_source("p.py", edited, cache=cache)
    assert again.diagnostics == analyze_source("p.py", edited).diagnostics
    module = cache.module_of(edited)
    assert module is not None
    kept = _nodes(module)
    assert len(kept) == len(set(kept))
    assert len(set(nodes) & set(kept)) > len(nodes) * 0.8
