"""Editor settings as a client sends them: each value read, each bad one named."""

from __future__ import annotations

import pytest

from chainlens.server.settings import ClientSettings


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", ""), ("main", "main"), ("off", "off"), (None, "")],
)
def test_savepoint_base_accepts_its_documented_values(
    value: str | None, expected: str
) -> None:
    # the VS Code default is "": the merge-base with the default branch
    settings = ClientSettings.from_json({"savepointBase": value})
    assert settings.savepoint_base == expected
    assert settings.problems == ()


def test_a_bad_value_is_named_and_the_default_kept() -> None:
    settings = ClientSettings.from_json({"savepointBase": 3, "docsUrl": ""})
    assert settings.savepoint_base == ""
    assert settings.docs_url is None
    assert settings.problems == (
        "setting chainlens.docsUrl: '' is empty",
        "setting chainlens.savepointBase: 3 is not a string",
    )
