"""Operator IDs: Flink's ``StreamGraphHasherV2``, byte for byte.

Every StreamNode gets a 16-byte hash, which becomes its ``OperatorID`` and, for a
chain head, the ``JobVertexID``.  A node with a ``uid()`` is hashed from the uid
alone; any other node from its position in a breadth-first walk from the sources,
its number of chained outputs and the hashes of its inputs (docs/flink-model.md §7).

A uid that chainlens cannot know (a :class:`Symbol`) still gets a placeholder
hash (of the symbol's text) so that the rest of the graph can be hashed; callers
mark such nodes and everything hashed from them as uncertain
(:func:`hash_dependents`).
"""

from __future__ import annotations

import heapq
import struct
from collections import deque
from collections.abc import Iterable, Mapping
from typing import cast

import mmh3

from chainlens.analyzer.compile.chaining import (
    ChainingVerdict,
    chaining_verdicts,
)
from chainlens.analyzer.model.job_graph import JobGraphError
from chainlens.analyzer.model.stream_graph import StreamGraph
from chainlens.analyzer.model.values import Symbol


def murmur3_128(data: bytes) -> bytes:
    """Return Guava's ``Hashing.murmur3_128(0).hashBytes(data).asBytes()``."""
    return mmh3.hash_bytes(data, seed=0, x64arch=True)


def generate_user_specified_hash(uid: str) -> bytes:
    """Return the hash of a user-specified ``uid()``: murmur3 of its UTF-8 bytes.

    Mirrors StreamGraphHasherV2.generateUserSpecifiedHash (Flink 2.3).
    """
    return murmur3_128(uid.encode("utf-8"))


def hash_collision_message(uid: object) -> str:
    """Return the text of Flink's error for a uid used twice."""
    return (
        f'Hash collision on user-specified ID "{uid}". Most likely cause is a '
        "non-unique ID. Please check that all IDs specified via "
        "`uid(String)` are unique."
    )


#: byte -> the low byte of byte * 37 (the same for a signed Java byte)
_TIMES_37 = bytes((b * 37) & 0xFF for b in range(256))


def chained_outputs(
    graph: StreamGraph, verdicts: Mapping[int, ChainingVerdict] | None = None
) -> dict[int, int]:
    """Return, per node, how many of its out-edges are chainable.

    What the hash of a node without uid counts; it depends on the graph's
    shape and settings, never on uids, so a graph hashed again with other
    uids (``claimants``) counts it once.  ``verdicts``: the graph's
    :func:`chaining_verdicts`, when known."""
    if verdicts is None:
        verdicts = chaining_verdicts(graph)
    counts = dict.fromkeys((node.id for node in graph.nodes), 0)
    for edge in graph.edges:
        if not verdicts[id(edge)].reasons:
            counts[edge.source_id] += 1
    return counts


#: (position, chained outputs) -> the murmur3 digest a node without uid
#: starts from, and that digest times 37 as an integer: the same in every
#: graph, and a graph hashed again (an edit, a uid fix checked) meets the same
#: positions again
_OWN: dict[tuple[int, int], tuple[bytes, int]] = {}
_OWN_KEPT = 1 << 16


def generate_deterministic_hash(
    position: int, chained: int, inputs: Iterable[bytes]
) -> bytes:
    """Return the hash of a node without uid from its inputs' hashes.

    Mirrors StreamGraphHasherV2.generateDeterministicHash (Flink 2.3): murmur3 of
    the little-endian int ``position`` (how many nodes were hashed before it)
    written once plus once per chainable out-edge (``chained``), then mixed
    with each input's hash in in-edge order as ``h[j] = (byte) (h[j] * 37 ^
    input[j])`` on signed Java bytes (the low byte of a product does not
    depend on the sign; the 16 bytes are mixed at once).
    """
    key = (position, chained)
    own = _OWN.get(key)
    if own is None:
        digest = murmur3_128(struct.pack("<i", position) * (1 + chained))
        own = (digest, int.from_bytes(digest.translate(_TIMES_37), "little"))
        if len(_OWN) >= _OWN_KEPT:
            _OWN.clear()
        _OWN[key] = own
    digest, mixed = own
    first = True
    for other in inputs:
        if not first:
            mixed = int.from_bytes(digest.translate(_TIMES_37), "little")
        first = False
        digest = (mixed ^ int.from_bytes(other, "little")).to_bytes(16, "little")
    return digest


def _check_collision(
    uid: object,
    digest: bytes,
    taken: set[bytes],
    symbolic: dict[int, Symbol],
    node_id: int,
) -> None:
    """Raise Flink's error when a uid's hash equals one computed before
    (``taken``: the hashes computed, but the placeholders of unknown uids)."""
    if isinstance(uid, Symbol):
        # Only the same unknown value is known to collide.
        if uid in symbolic.values():
            raise JobGraphError(hash_collision_message(uid), node_id)
        return
    if digest in taken:
        raise JobGraphError(hash_collision_message(uid), node_id)


def traverse_stream_graph_and_generate_hashes(
    graph: StreamGraph,
    symbolic: dict[int, Symbol] | None = None,
    *,
    uids: Mapping[int, object] | None = None,
    chained: Mapping[int, int] | None = None,
    unready: set[int] | None = None,
) -> dict[int, bytes]:
    """Return every node's 16-byte hash, in the order Flink computes them.

    Mirrors StreamGraphHasherV2.traverseStreamGraphAndGenerateHashes and
    generateNodeHash (Flink 2.3): a breadth-first walk from the sources
    (ascending id) along out-edges in order; a node with a uid is hashed from
    the uid alone (:func:`generate_user_specified_hash`) and does not wait for
    its inputs; any other node whose inputs are not all hashed is dropped from
    the visited set and re-enqueued by a later input.  Raises
    :class:`JobGraphError` with Flink's message when two uids collide.  Nodes
    unreachable from a source get no hash.

    ``symbolic`` collects the nodes whose uid is a :class:`Symbol` (their hash
    is a placeholder, of the symbol's text).  ``uids`` replaces the uids of
    nodes by id (the same graph with other uids: the edges and settings are
    the graph's); ``chained`` is :func:`chained_outputs` of the graph, when
    known.  ``unready`` collects the nodes some of whose inputs were not
    hashed when the walk first took them (see :class:`Rehasher`).
    """
    symbolic = {} if symbolic is None else symbolic
    if chained is None:
        chained = chained_outputs(graph)
    hashes: dict[int, bytes] = {}
    # the hashes computed, but the placeholders of unknown uids
    taken: set[bytes] = set()
    sources = graph.source_ids
    remaining: deque[int] = deque(sources)
    visited: set[int] = set(sources)
    # names bound once: a graph is hashed again per uid fix checked
    node, in_edges, out_edges = graph.node, graph.in_edges, graph.out_edges
    pop, push, seen = remaining.popleft, remaining.append, visited.add
    overridden = uids or {}
    while remaining:
        current = pop()
        uid = overridden[current] if current in overridden else node(current).uid
        if uid is None:
            inputs = [hashes.get(edge.source_id) for edge in in_edges(current)]
            if None in inputs:
                visited.discard(current)  # enqueued again by a later input
                if unready is not None:
                    unready.add(current)
                continue
            digest = generate_deterministic_hash(
                len(hashes), chained[current], cast(list[bytes], inputs)
            )
            taken.add(digest)
        else:
            if unready is not None and any(
                edge.source_id not in hashes for edge in in_edges(current)
            ):
                unready.add(current)
            digest = generate_user_specified_hash(str(uid))
            _check_collision(uid, digest, taken, symbolic, current)
            if isinstance(uid, Symbol):
                symbolic[current] = uid
            else:
                taken.add(digest)
        hashes[current] = digest
        for edge in out_edges(current):
            if edge.target_id not in visited:
                push(edge.target_id)
                seen(edge.target_id)
    return hashes


class Rehasher:
    """One graph hashed again with other uids (a uid fix checked: the same
    graph, uids added), from the hashes it had the last time.

    The walk's order depends on uids only where a node's inputs are not all
    hashed when the walk first takes it: without a uid it is put back, with
    one it is hashed at once.  Where every node whose uid is set or removed
    had its inputs hashed by then, the walk takes the nodes in the same order
    as before, each at the same position, and only the hashes mixed from a
    changed one differ: those are hashed again, in that order, and nothing
    past a node whose hash comes out as it was.  Any other change (a node
    taken before its inputs, a uid chainlens cannot know) is hashed by the
    whole walk, as Flink does."""

    def __init__(self, graph: StreamGraph, chained: Mapping[int, int]) -> None:
        self.graph = graph
        self.chained = chained
        unready: set[int] = set()
        symbolic: dict[int, Symbol] = {}
        #: the uids, hashes and IDs of the last uids hashed, first the graph's
        #: own (None: the graph is rejected, or holds unknown uids)
        self._last: (
            tuple[dict[int, object], dict[int, bytes], dict[int, str]] | None
        ) = None
        try:
            hashes = traverse_stream_graph_and_generate_hashes(
                graph, symbolic, chained=chained, unready=unready
            )
        except JobGraphError:
            return
        if symbolic:
            return
        self.order = list(hashes)
        self.position = {node_id: i for i, node_id in enumerate(self.order)}
        self.unready = unready
        self._last = ({}, hashes, {k: v.hex() for k, v in hashes.items()})

    def hashes(self, uids: Mapping[int, object]) -> dict[int, bytes]:
        """Every node's hash with ``uids`` set (node id -> uid) on the graph's
        own: what :func:`traverse_stream_graph_and_generate_hashes` returns,
        and raises, with them."""
        found = self._again(uids)
        if found is None:
            return traverse_stream_graph_and_generate_hashes(
                self.graph, uids=uids, chained=self.chained
            )
        return dict(found[0])

    def hex_ids(self, uids: Mapping[int, object]) -> dict[int, str]:
        """:meth:`hashes` as operator IDs (hex)."""
        found = self._again(uids)
        if found is None:
            hashes = traverse_stream_graph_and_generate_hashes(
                self.graph, uids=uids, chained=self.chained
            )
            return {k: v.hex() for k, v in hashes.items()}
        return dict(found[1])

    def _again(
        self, uids: Mapping[int, object]
    ) -> tuple[dict[int, bytes], dict[int, str]] | None:
        if self._last is None:
            return None  # the whole walk says what Flink says of the graph
        last_uids, last, last_hex = self._last
        node = self.graph.node
        position = self.position

        def uid_of(node_id: int, given: Mapping[int, object]) -> object:
            return given[node_id] if node_id in given else node(node_id).uid

        # the uids set differently from the last time (compared in C)
        differ = {k for k, _ in uids.items() ^ last_uids.items()}
        changed = [
            node_id
            for node_id in differ
            if node_id in position
            and uid_of(node_id, uids) != uid_of(node_id, last_uids)
        ]
        for node_id in changed:
            uid = uid_of(node_id, uids)
            if (
                isinstance(uid, Symbol)  # (the last uids never hold one)
                or (
                    (uid is None) != (node(node_id).uid is None)
                    and node_id in self.unready
                )
            ):
                return None  # the walk may take the nodes in another order
        hashes = dict(last)
        moved: list[int] = []
        pending = [position[node_id] for node_id in changed]
        heapq.heapify(pending)
        done: set[int] = set()
        order, in_edges, out_edges = (
            self.order,
            self.graph.in_edges,
            self.graph.out_edges,
        )
        while pending:
            at = heapq.heappop(pending)
            if at in done:
                continue
            done.add(at)
            current = order[at]
            uid = uid_of(current, uids)
            if uid is None:
                digest = generate_deterministic_hash(
                    at,
                    self.chained[current],
                    [hashes[edge.source_id] for edge in in_edges(current)],
                )
            else:
                digest = generate_user_specified_hash(str(uid))
            if digest == hashes[current]:
                continue  # nothing mixed from it changes
            hashes[current] = digest
            moved.append(current)
            for edge in out_edges(current):
                target = edge.target_id
                if target in position and uid_of(target, uids) is None:
                    heapq.heappush(pending, position[target])
        self._collisions(hashes, uids)
        hexes = dict(last_hex)
        for node_id in moved:
            hexes[node_id] = hashes[node_id].hex()
        self._last = (dict(uids), hashes, hexes)
        return hashes, hexes

    def _collisions(
        self, hashes: Mapping[int, bytes], uids: Mapping[int, object]
    ) -> None:
        """Raise Flink's error at the first node with a uid whose hash one
        hashed before it has."""
        if len(set(hashes.values())) == len(hashes):
            return  # no two alike
        taken: set[bytes] = set()
        node = self.graph.node
        for node_id in self.order:
            digest = hashes[node_id]
            uid = uids[node_id] if node_id in uids else node(node_id).uid
            if uid is not None and digest in taken:
                raise JobGraphError(hash_collision_message(uid), node_id)
            taken.add(digest)


def hash_dependents(graph: StreamGraph, roots: Iterable[int]) -> set[int]:
    """Return ``roots`` and every node whose generated hash is mixed from theirs.

    A node without uid mixes in the hashes of all its inputs, so a change of one
    hash propagates downstream until a node with a uid (hashed from the uid alone).
    """
    result: set[int] = set()
    pending = deque(roots)
    while pending:
        node_id = pending.popleft()
        if node_id in result:
            continue
        result.add(node_id)
        for edge in graph.out_edges(node_id):
            if graph.node(edge.target_id).uid is None:
                pending.append(edge.target_id)
    return result
