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

import struct
from collections import deque
from collections.abc import Iterable, Mapping

import mmh3

from chainlens.analyzer.compile.chaining import (
    ChainingVerdict,
    chaining_verdicts,
    is_chainable,
)
from chainlens.analyzer.model.job_graph import JobGraphError
from chainlens.analyzer.model.stream_graph import StreamGraph, StreamNode
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


def generate_deterministic_hash(
    node: StreamNode,
    hashes: dict[int, bytes],
    graph: StreamGraph,
    chained: Mapping[int, int] | None = None,
) -> bytes:
    """Return the hash of a node without uid; every input must be hashed already.

    Mirrors StreamGraphHasherV2.generateDeterministicHash (Flink 2.3): murmur3 of
    the little-endian int ``len(hashes)`` written once plus once per chainable
    out-edge, then mixed with each input's hash in in-edge order as
    ``h[j] = (byte) (h[j] * 37 ^ input[j])`` on signed Java bytes (the low
    byte of a product does not depend on the sign; the 16 bytes are mixed at
    once).  ``chained``: the counts of :func:`chained_outputs`, when known.
    """
    position = struct.pack("<i", len(hashes))
    count = (
        chained[node.id]
        if chained is not None
        else sum(1 for e in graph.out_edges(node.id) if is_chainable(e, graph))
    )
    digest = murmur3_128(position * (1 + count))
    for edge in graph.in_edges(node.id):
        other = hashes[edge.source_id]
        mixed = int.from_bytes(digest.translate(_TIMES_37), "little")
        digest = (mixed ^ int.from_bytes(other, "little")).to_bytes(16, "little")
    return digest


def _check_collision(
    node: StreamNode,
    digest: bytes,
    taken: set[bytes],
    symbolic: dict[int, Symbol],
) -> None:
    """Raise Flink's error when a uid's hash equals one computed before
    (``taken``: the hashes computed, but the placeholders of unknown uids)."""
    uid = node.uid
    if isinstance(uid, Symbol):
        # Only the same unknown value is known to collide.
        if uid in symbolic.values():
            raise JobGraphError(hash_collision_message(uid), node.id)
        return
    if digest in taken:
        raise JobGraphError(hash_collision_message(uid), node.id)


def generate_node_hash(
    node: StreamNode,
    hashes: dict[int, bytes],
    graph: StreamGraph,
    symbolic: dict[int, Symbol] | None = None,
    chained: Mapping[int, int] | None = None,
    *,
    taken: set[bytes],
) -> bool:
    """Hash ``node`` into ``hashes``; return False when an input is not hashed yet.

    Mirrors StreamGraphHasherV2.generateNodeHash (Flink 2.3).  A node with a uid
    does not wait for its inputs.  ``symbolic`` collects the nodes whose uid is a
    :class:`Symbol` (their hash is a placeholder).  ``taken`` holds the hashes
    in ``hashes`` but those placeholders (kept up to date here).
    """
    symbolic = {} if symbolic is None else symbolic
    uid = node.uid
    if uid is None:
        if any(e.source_id not in hashes for e in graph.in_edges(node.id)):
            return False
        digest = generate_deterministic_hash(node, hashes, graph, chained)
        hashes[node.id] = digest
        taken.add(digest)
        return True
    digest = generate_user_specified_hash(str(uid))
    _check_collision(node, digest, taken, symbolic)
    if isinstance(uid, Symbol):
        symbolic[node.id] = uid
    else:
        taken.add(digest)
    hashes[node.id] = digest
    return True


def traverse_stream_graph_and_generate_hashes(
    graph: StreamGraph,
    symbolic: dict[int, Symbol] | None = None,
    *,
    nodes: Mapping[int, StreamNode] | None = None,
    chained: Mapping[int, int] | None = None,
) -> dict[int, bytes]:
    """Return every node's 16-byte hash, in the order Flink computes them.

    Mirrors StreamGraphHasherV2.traverseStreamGraphAndGenerateHashes (Flink 2.3):
    a breadth-first walk from the sources (ascending id) along out-edges in order;
    a node whose inputs are not all hashed is dropped from the visited set and
    re-enqueued by a later input.  Raises :class:`JobGraphError` with Flink's
    message when two uids collide.  Nodes unreachable from a source get no hash.

    ``nodes`` replaces the graph's nodes by id (the same graph with other uids:
    the edges and settings are the graph's); ``chained`` is
    :func:`chained_outputs` of the graph, when known.
    """
    hashes: dict[int, bytes] = {}
    taken: set[bytes] = set()
    sources = graph.source_ids
    remaining: deque[int] = deque(sources)
    visited: set[int] = set(sources)
    while remaining:
        current = remaining.popleft()
        node = nodes[current] if nodes is not None else graph.node(current)
        if generate_node_hash(node, hashes, graph, symbolic, chained, taken=taken):
            for edge in graph.out_edges(current):
                if edge.target_id not in visited:
                    remaining.append(edge.target_id)
                    visited.add(edge.target_id)
        else:
            visited.discard(current)
    return hashes


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
