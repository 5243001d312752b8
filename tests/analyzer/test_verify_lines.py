"""A code action's fixes checked alone: ``verified_diagnostics(lines=...)``.

Checking every uid fix of a large job hashes the job again per finding (a
second for 1,791 operators); a code action offers the fixes of the findings on
its lines only, so only theirs are checked.  Each is what checking them all
gives it; the other findings keep their plain, unchecked fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chainlens.analyzer import Config, check_document
from chainlens.analyzer.gate.compare import verified_diagnostics
from chainlens.analyzer.rules import uid_plan

STAGE = """
class Count{i}(KeyedProcessFunction):
    def open(self, ctx):
        self.seen = ctx.get_state(ValueStateDescriptor("seen-{i}", Types.INT()))

    def process_element(self, value, ctx):
        yield value[0], value[1] + (self.seen.value() or 0)
"""
HEAD = """from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor

EVENT = Types.TUPLE([Types.STRING(), Types.INT()])
"""
BODY = """
env = StreamExecutionEnvironment.get_execution_environment()
s = env.from_collection([("a", 1)], type_info=EVENT)
"""
STEP = (
    "s = s.key_by(lambda e: e[0]).process(Count{i}(), output_type=EVENT)"
    '.name("count {i}")\n'
    "s = s.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))\n"
)
TEXT = (
    HEAD
    + "".join(STAGE.format(i=i) for i in range(4))
    + BODY
    + "".join(STEP.format(i=i) for i in range(4))
    + 's.print()\nenv.execute("chain")\n'
)
CONFIG = Config(default_parallelism=4)


def _calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[object]:
    """The arguments of every call of ``uid_plan.<name>`` from now on."""
    calls: list[object] = []
    real = getattr(uid_plan, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(uid_plan, name, counted)
    return calls


def _committed_and_edited(folder: Path) -> tuple[Path, str]:
    """The job committed in a new repository in ``folder``, and its text with
    an operator added at the start (every generated ID after it moves)."""
    from tests.support import git

    path = folder / "job.py"
    path.write_text(TEXT, encoding="utf-8")
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "base")
    edited = TEXT.replace(
        "type_info=EVENT)\n", "type_info=EVENT).filter(lambda e: True)\n", 1
    )
    assert edited != TEXT
    return path, edited


@pytest.fixture(scope="module")
def published():  # type: ignore[no-untyped-def]
    """The findings as an edit publishes them: the fixes unchecked."""
    checked = check_document("/job.py", TEXT, CONFIG, verify_fixes=False)
    assert checked.result is not None
    return checked.result


def test_each_findings_fixes_checked_alone_are_those_checked_with_all(
    published, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    hashed = _calls(monkeypatch, "moved")
    every = verified_diagnostics("/job.py", TEXT, published, CONFIG)
    assert every is not None
    all_hashed = len(hashed)
    fixable = [d for d in published.diagnostics if d.fixes]
    assert len(fixable) >= 6
    # checking them changes what some say: a uid upstream moves the IDs of the
    # stateful operators after it
    assert tuple(every) != published.diagnostics
    for finding in fixable:
        line = finding.range.start.line
        hashed.clear()
        alone = verified_diagnostics(
            "/job.py", TEXT, published, CONFIG, lines=(line, line)
        )
        assert alone is not None
        assert len(alone) == len(every)
        for ours, all_checked, plain in zip(
            alone, every, published.diagnostics, strict=True
        ):
            on_line = ours.range.start.line == line
            assert ours == (all_checked if on_line else plain)
        # the job hashed again for this line's calls only
        assert 0 < len(hashed) <= 3 < all_hashed


def test_no_line_checks_every_fix(published) -> None:  # type: ignore[no-untyped-def]
    checked = check_document("/job.py", TEXT, CONFIG)
    assert checked.result is not None
    every = verified_diagnostics("/job.py", TEXT, published, CONFIG)
    assert every == checked.result.diagnostics


def test_a_document_in_git_plans_its_uids_once_per_edit(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The rules and the savepoint rules against the git base run apart on an
    edit; the unchecked uid plan is made once for both, and the findings are
    those made with a plan of their own each."""
    from chainlens.analyzer.gate.compare import EditorBaseline

    path, edited = _committed_and_edited(tmp_path)
    made = _calls(monkeypatch, "_build_uid_plan")
    checked = check_document(
        str(path), edited, CONFIG, baseline=EditorBaseline(None), verify_fixes=False
    )
    assert len(made) == 1
    assert checked.result is not None
    assert any(d.code.code == "CL201" for d in checked.result.diagnostics)
    monkeypatch.setattr(uid_plan, "_LAST_PLAN", type(uid_plan._LAST_PLAN)())
    kept = uid_plan.build_uid_plan

    def fresh(*args: object, **kwargs: object) -> object:
        uid_plan._LAST_PLAN.plan = None
        return kept(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(uid_plan, "build_uid_plan", fresh)
    again = check_document(
        str(path), edited, CONFIG, baseline=EditorBaseline(None), verify_fixes=False
    )
    assert again.result is not None
    assert again.result.diagnostics == checked.result.diagnostics


@pytest.mark.parametrize("edit", ["unchanged", "operator added", "new file"])
def test_fixes_checked_against_the_base_once_are_those_of_two_passes(
    tmp_path, edit: str
) -> None:  # type: ignore[no-untyped-def]
    """A document in git: its fixes checked once against what its base says
    savepoints hold (``verified_diagnostics``, ``check_document``) are those
    checked against every ID first and, when a fix pins or is unsafe, again
    against the base's (as ``check`` does)."""
    from dataclasses import replace

    from chainlens.analyzer.api import with_findings
    from chainlens.analyzer.check import pins_or_unsafe
    from chainlens.analyzer.gate.compare import EditorBaseline
    from tests.support import git

    path = tmp_path / "job.py"
    path.write_text(TEXT if edit != "new file" else "x = 1\n", encoding="utf-8")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    text = TEXT
    if edit == "operator added":
        text = TEXT.replace(
            "type_info=EVENT)\n", "type_info=EVENT).filter(lambda e: True)\n", 1
        )
    published = check_document(
        str(path), text, CONFIG, baseline=EditorBaseline(None), verify_fixes=False
    ).result
    assert published is not None
    base = EditorBaseline(None)
    bare = replace(published, diagnostics=())
    two = with_findings(bare, text, CONFIG)
    if any(pins_or_unsafe(d) for d in two.diagnostics):
        held = base.held(path, two, CONFIG)
        if held is not None:
            two = with_findings(bare, text, CONFIG, held=held)
    expected = (*two.diagnostics, *base.findings(path, text, two, CONFIG))
    assert any(d.fixes for d in expected)
    if edit == "unchanged":
        assert any(pins_or_unsafe(d) for d in expected)  # the base's IDs matter
    found = verified_diagnostics(
        str(path), text, published, CONFIG, baseline=EditorBaseline(None)
    )
    assert found == expected
    checked = check_document(str(path), text, CONFIG, baseline=EditorBaseline(None))
    assert checked.result is not None
    assert checked.result.diagnostics == expected


def test_a_check_no_longer_wanted_stops_within_a_rule(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """An editor checks the fixes of an edit once the document is left alone
    and stops when it changes again (the next analysis shares the interpreter
    with it).  Stopped as the first uid fix is checked, no further rule runs
    and no saved state is looked at: a stop was seen only before a job was
    hashed again, and the rule seeing it was reported as failed while the
    others ran on (up to half a second on a job of 1,791 operators)."""
    from chainlens.analyzer.gate.compare import EditorBaseline
    from chainlens.analyzer.rules import (
        cl108_aggregate_not_restored,
        cl201_state_not_restored,
    )

    path, edited = _committed_and_edited(tmp_path)
    baseline = EditorBaseline(None)
    published = check_document(
        str(path), edited, CONFIG, baseline=baseline, verify_fixes=False
    ).result
    assert published is not None
    assert sum(d.code.code == "CL201" for d in published.diagnostics) >= 4

    changed = [False]
    ran: list[str] = []
    hashed = _calls(monkeypatch, "moved")

    def stop() -> bool:
        if hashed:
            changed[0] = True  # the document changes as a fix is first checked
        return changed[0]

    for rule, method, label in (
        (cl108_aggregate_not_restored.AggregateNotRestored, "check", "CL108"),
        (cl201_state_not_restored.StateNotRestored, "check_landing", "CL201"),
    ):
        real = getattr(rule, method)

        def counted(*args, real=real, label=label):  # type: ignore[no-untyped-def]
            ran.append(label)
            return real(*args)

        monkeypatch.setattr(rule, method, counted)
    stopped = verified_diagnostics(
        str(path), edited, published, CONFIG, baseline=baseline, stop=stop
    )
    assert stopped is None
    assert hashed
    assert ran == []
    # unstopped, the later rules run and every saved state is looked at
    every = verified_diagnostics(
        str(path), edited, published, CONFIG, baseline=baseline, stop=lambda: False
    )
    assert every is not None
    assert "CL108" in ran
    assert ran.count("CL201") >= 8


def test_an_editors_check_leaves_out_the_findings_it_does_not_read(
    tmp_path: Path,
) -> None:
    """An editor publishes the result's diagnostics: asked with
    ``findings=False``, a check of a document in git (its savepoint findings
    joined in) gives the same diagnostics and no findings, whose fingerprints
    only reports read."""
    from chainlens.analyzer.gate.compare import EditorBaseline

    path, edited = _committed_and_edited(tmp_path)
    full = check_document(
        str(path), edited, CONFIG, baseline=EditorBaseline(None), verify_fixes=False
    )
    lean = check_document(
        str(path),
        edited,
        CONFIG,
        baseline=EditorBaseline(None),
        verify_fixes=False,
        findings=False,
    )
    assert full.result is not None
    assert lean.result is not None
    assert any(d.code.code == "CL201" for d in lean.result.diagnostics)
    assert lean.result.diagnostics == full.result.diagnostics
    assert [f.diagnostic for f in full.findings] == list(full.result.diagnostics)
    assert all(f.fingerprint for f in full.findings)
    assert lean.findings == ()


def test_the_fix_that_keeps_each_state_starts_from_the_restores_assignment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan of the fix that puts each saved state back in its operator
    starts from the operators and the assignment the restore was judged by
    (nothing is changed yet): the first of its rounds assigns nothing again,
    and the findings and fixes are those of a plan that does."""
    from dataclasses import replace

    from chainlens.analyzer.gate.compare import EditorBaseline
    from chainlens.analyzer.rules.restore import fix
    from tests.support import first_arguments

    path, edited = _committed_and_edited(tmp_path)

    def check() -> tuple[object, ...]:
        checked = check_document(
            str(path), edited, CONFIG, baseline=EditorBaseline(None)
        )
        assert checked.result is not None
        return checked.result.diagnostics

    assigned = first_arguments(monkeypatch, fix, "assign")
    reused = check()
    rounds = len(assigned)
    plan = fix.plan_restore_fix

    def from_nothing(restore: fix.Restore, *args: object) -> object:
        return plan(replace(restore, claimants=()), *args)  # type: ignore[arg-type]

    monkeypatch.setattr(fix, "plan_restore_fix", from_nothing)
    assigned.clear()
    again = check()
    assert any(d.code.code == "CL201" and d.fixes for d in reused)  # type: ignore[attr-defined]
    assert reused == again
    assert len(assigned) == rounds + 1
