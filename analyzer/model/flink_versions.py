"""The Flink versions chainlens models, and what differs between them.

Every fact that is not the same in all supported versions is named once here,
with the range of versions it holds for (:data:`FACTS`).  The stages read a
fact through :class:`VersionProfile` (``profile("1.20").value("...")``), never
by comparing version numbers themselves.  What a version offers of the PyFlink
API is data too: ``analyzer/extract/pyflink_names*.json``, read from each
version's wheel by ``tests/tools/pyflink_names.py``.

Versions are Flink's minor lines (``"1.20"``); each is modelled after the patch
release in :data:`RELEASES`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

#: The supported lines, oldest first: every line whose PyFlink installs on
#: Python 3.11 (1.17 and older need Python 3.10 or older).
SUPPORTED: Final = ("1.18", "1.19", "1.20", "2.0", "2.1", "2.2", "2.3")

#: The version used when nothing chooses one.
NEWEST: Final = SUPPORTED[-1]

#: The release of each line the tables and facts were read from.
RELEASES: Final = {
    "1.18": "1.18.1",
    "1.19": "1.19.3",
    "1.20": "1.20.5",
    "2.0": "2.0.2",
    "2.1": "2.1.3",
    "2.2": "2.2.1",
    "2.3": "2.3.0",
}

#: Patch numbers tried when a pin is a range (``>=1.20.3,<2``): a range is
#: satisfied by a line when one of its releases X.Y.0 .. X.Y.49 satisfies it.
_PATCHES: Final = 50


class VersionError(ValueError):
    """A Flink version chainlens does not model, or text that is no version."""


def supported_text() -> str:
    """The supported versions, for messages."""
    return ", ".join(SUPPORTED)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def parse_version(text: str) -> str:
    """Return the supported line ``text`` names (``"1.20"``, ``"1.20.5"``,
    ``"2"`` is not one); raise :class:`VersionError` otherwise."""
    from packaging.version import InvalidVersion, Version

    stripped = text.strip()
    try:
        parsed = Version(stripped)
    except InvalidVersion:
        raise VersionError(
            f"{text!r} is not a Flink version (supported: {supported_text()})"
        ) from None
    line = f"{parsed.major}.{parsed.minor}"
    if len(parsed.release) < 2 or line not in SUPPORTED or parsed.is_prerelease:
        raise VersionError(
            f"Flink {stripped} is not supported (supported: {supported_text()})"
        )
    return line


def parse_range(text: str) -> tuple[str, str]:
    """Parse ``A..B`` (an upgrade from A to B) into two supported lines."""
    first, sep, second = text.partition("..")
    if not sep or not first.strip() or not second.strip():
        raise VersionError(
            f"{text!r} is not an upgrade A..B of Flink versions (supported: "
            f"{supported_text()})"
        )
    return parse_version(first), parse_version(second)


def newest_satisfying(specifier: str) -> str | None:
    """The newest supported line with a release satisfying the pip version
    specifier ``specifier`` (``"==1.20.0"``, ``">=1.19,<2"``, ``""`` for any);
    None when none does.  Raise :class:`VersionError` for a malformed one."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        raise VersionError(f"{specifier!r} is not a version specifier") from None
    for line in reversed(SUPPORTED):
        if (
            any(Version(f"{line}.{patch}") in spec for patch in range(_PATCHES))
            or Version(line) in spec
        ):
            return line
    return None


def at_least(version: str, first: str) -> bool:
    """Tell whether ``version`` is ``first`` or newer (both supported lines)."""
    return _key(version) >= _key(first)


@dataclass(frozen=True, slots=True)
class VersionRange:
    """The versions from ``first`` to ``last`` (both included)."""

    first: str = SUPPORTED[0]
    last: str = NEWEST

    def __contains__(self, version: object) -> bool:
        return isinstance(version, str) and _key(self.first) <= _key(version) <= _key(
            self.last
        )

    def versions(self) -> tuple[str, ...]:
        """The supported versions in the range."""
        return tuple(v for v in SUPPORTED if v in self)

    def __str__(self) -> str:
        if self.first == self.last:
            return self.first
        return f"{self.first}-{self.last}"


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing a range of Flink versions does: ``value`` holds for the
    versions in ``holds``; outside it, the next fact of the same name does."""

    name: str
    holds: VersionRange
    value: object
    #: what it is, and which Flink class or PyFlink module says so
    about: str


#: Java classes Flink 2.0 moved into ``.legacy`` packages: the 1.x name, the 2.x name.
_MOVED_TO_LEGACY: Final = (
    (
        "org.apache.flink.streaming.api.functions.sink.DiscardingSink",
        "org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink",
    ),
    (
        "org.apache.flink.streaming.api.functions.source.StatefulSequenceSource",
        "org.apache.flink.streaming.api.functions.source.legacy.StatefulSequenceSource",
    ),
)

#: The packages Flink 2.0 made for them, which 1.x does not have at all.
_LEGACY_PACKAGES: Final = tuple(
    sorted({new.rsplit(".", 1)[0] for _, new in _MOVED_TO_LEGACY})
)

_ABSENT_PACKAGES = (
    "Java packages this line does not have at all: any class of them, named "
    "literally or chosen at run time (getattr of the gateway's JVM view), fails "
    "as an absent class does. The .legacy packages of sources and sinks are "
    "2.0's (no jar of 1.18.1, 1.19.3 or 1.20.5 has a class in them)"
)

_COLLECT_UID = (
    "the uid DataStream.collectAsync gives the collect sink of execute_and_collect "
    "({id}: the sink transformation's id); None: no uid, so its operator ID is the "
    "topology hash (StreamGraphHasherV2) and its task's ID differs. 2.x sets it, "
    "1.x does not (no CollectStreamSink.uid call in DataStream of 1.18.1, 1.19.3, "
    "1.20.5); seen in the expected files of 1.20.5"
)
_ABSENT_CLASSES = (
    "Java classes by name that this line does not have: PyFlink's load_java_class "
    "(SinkFunction('...'), SourceFunction('...')) and the gateway's JVM view fail "
    "on them (TypeError: Could not found the Java class). Flink 2.0 moved "
    "DiscardingSink and StatefulSequenceSource into .legacy packages (jars of "
    "1.18.1, 1.19.3 and 1.20.5 have only the old names, 2.0.2 and later only the "
    "new); seen in the expected files of 1.20.5"
)

_SINK_CONFIGURED = (
    "whether the Writer and Committer of a Sink V2 (sink_to) count as operators "
    "whose parallelism was set, whatever the sink says: 1.18's "
    "SinkTransformationTranslator sets their parallelism with setParallelism(p), "
    "which marks it configured; from 1.19 it passes the sink's own flag "
    "(setParallelism(p, configured)). In BATCH with automatic parallelism a "
    "configured vertex keeps the default parallelism instead of -1; seen in the "
    "expected files of 1.18.1 (True: always configured; False: as the sink)"
)

_TTL_CHANGE = (
    "what a restore does with a state whose TTL was enabled or disabled since "
    "the savepoint: 'fails' (StateMigrationException; observed on 1.20.5 with "
    "the heap and RocksDB backends), 'restores' (observed on 2.3.0; Flink's "
    "TTL state migration, FLINK-35780, FLINK-37294, documented as complete in "
    "2.2), 'unknown' (2.0 and 2.1: the migration landed per backend in that "
    "span)"
)

#: Every fact that differs between supported versions.  A fact has one entry
#: per range; together the ranges of one name cover every supported version.
FACTS: Final[tuple[Fact, ...]] = (
    Fact("collect-sink.uid", VersionRange("1.18", "1.20"), None, _COLLECT_UID),
    Fact(
        "collect-sink.uid",
        VersionRange("2.0", "2.3"),
        "dataStreamCollect_{id}",
        _COLLECT_UID,
    ),
    Fact(
        "java.absent-classes",
        VersionRange("1.18", "1.20"),
        {new: old for old, new in _MOVED_TO_LEGACY},
        _ABSENT_CLASSES + " (value: the absent name -> the name this line has)",
    ),
    Fact(
        "java.absent-classes",
        VersionRange("2.0", "2.3"),
        dict(_MOVED_TO_LEGACY),
        _ABSENT_CLASSES + " (value: the absent name -> the name this line has)",
    ),
    Fact(
        "java.absent-packages",
        VersionRange("1.18", "1.20"),
        _LEGACY_PACKAGES,
        _ABSENT_PACKAGES,
    ),
    Fact("java.absent-packages", VersionRange("2.0", "2.3"), (), _ABSENT_PACKAGES),
    Fact(
        "sink-v2.parallelism-configured",
        VersionRange("1.18", "1.18"),
        True,
        _SINK_CONFIGURED,
    ),
    Fact(
        "sink-v2.parallelism-configured",
        VersionRange("1.19", "2.3"),
        False,
        _SINK_CONFIGURED,
    ),
    Fact(
        "pyflink.names",
        VersionRange("1.18", "2.3"),
        "per version",
        "the modules, names and methods of PyFlink's public API "
        "(analyzer/extract/pyflink_names*.json, read from each version's wheel)",
    ),
    Fact(
        "pyflink.state-not-restored",
        VersionRange("1.18", "2.3"),
        frozenset({"reduce", "sum", "min", "max", "min_by", "max_by"}),
        "the KeyedStream methods whose own state PyFlink never reads back after a "
        "restore: KeyedStream.reduce names its ReducingState "
        '"_reduce_state" + str(uuid.uuid4()) in open(), a new name on every '
        "start, and sum, min, max, min_by and max_by call reduce "
        "(pyflink/datastream/data_stream.py of 1.18.1, 1.19.3, 1.20.3, 2.0.1, "
        "2.1.1, 2.2.0 and 2.3.0; restores observed on 2.3.0 and 1.20.5)",
    ),
    Fact(
        "state.ttl-change",
        VersionRange("1.18", "1.20"),
        "fails",
        _TTL_CHANGE,
    ),
    Fact("state.ttl-change", VersionRange("2.0", "2.1"), "unknown", _TTL_CHANGE),
    Fact("state.ttl-change", VersionRange("2.2", "2.3"), "restores", _TTL_CHANGE),
    Fact(
        "state.compatible-with",
        VersionRange("1.18", "1.20"),
        VersionRange("1.18", "1.20"),
        "the versions whose savepoints a job of this version is guaranteed to "
        "restore: Flink does not guarantee state compatibility between 1.x and "
        "2.x (Flink 2.0 release notes)",
    ),
    Fact(
        "state.compatible-with",
        VersionRange("2.0", "2.3"),
        VersionRange("2.0", "2.3"),
        "the versions whose savepoints a job of this version is guaranteed to "
        "restore: Flink does not guarantee state compatibility between 1.x and "
        "2.x (Flink 2.0 release notes)",
    ),
)


@dataclass(frozen=True, slots=True)
class VersionProfile:
    """What one Flink version does, fact by fact."""

    version: str

    @property
    def release(self) -> str:
        """The patch release this version is modelled after."""
        return RELEASES[self.version]

    def value(self, name: str) -> object:
        """The value of fact ``name`` for this version."""
        return _fact_value(self.version, name)


@functools.cache
def _fact_value(version: str, name: str) -> object:
    """The value of fact ``name`` for ``version`` (the facts are constants:
    looked up once per pair; the compiler and the rules ask per operator)."""
    for fact in FACTS:
        if fact.name == name and version in fact.holds:
            return fact.value
    raise KeyError(f"no fact {name!r} for Flink {version}")


@functools.cache
def profile(version: str = NEWEST) -> VersionProfile:
    """The profile of a supported version (``parse_version`` first)."""
    if version not in SUPPORTED:
        raise VersionError(
            f"Flink {version} is not supported (supported: {supported_text()})"
        )
    return VersionProfile(version)


@dataclass(frozen=True, slots=True)
class FlinkVersion:
    """The version an analysis models, and what chose it.

    ``source`` is ``"default"``, ``"flag"`` (the command line or the editor's
    setting), ``"config:<path>"`` (``flink-version`` of a chainlens config) or
    ``"pin:<path>:<line>"`` (the project's own requirement on ``apache-flink``).
    """

    version: str = NEWEST
    source: str = "default"

    def to_json(self) -> dict[str, str]:
        """``{"version", "source"}`` as every JSON output carries it."""
        return {"version": self.version, "source": self.source}

    def describe(self) -> str:
        """One phrase for text outputs: ``Flink 1.20 (pin: requirements.txt:3)``."""
        kind, _, where = self.source.partition(":")
        said = {
            "default": "the default: the newest supported",
            "flag": "--flink-version",
            "config": f"flink-version in {where}",
            "pin": f"apache-flink pinned in {where}",
            "deployment": f"deployment {where}",
        }.get(kind, self.source)
        return f"Flink {self.version} ({said})"


#: What is analysed for when nothing chooses a version.
DEFAULT_VERSION: Final = FlinkVersion()
