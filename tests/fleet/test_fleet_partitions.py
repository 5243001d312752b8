"""How the fleet scan splits files into Spark tasks (no Spark needed)."""

from __future__ import annotations

from pathlib import Path

from chainlens.fleet.engine import balanced
from chainlens.fleet.inputs import Source


def _files(root: Path, sizes: list[int]) -> list[Source]:
    root.mkdir(parents=True, exist_ok=True)
    sources = []
    for number, size in enumerate(sizes):
        path = root / f"m{number}.py"
        path.write_bytes(b"#" * size)
        sources.append(Source("repo", str(path)))
    return sources


def _bytes(chunk: list[tuple[str, str]]) -> int:
    return sum(Path(path).stat().st_size + 512 for _, path in chunk)


def test_one_wave_gives_tasks_of_equal_bytes(tmp_path: Path) -> None:
    sources = _files(tmp_path, [3000 + 37 * n % 900 for n in range(200)])
    chunks = balanced(sources, 4)
    assert len(chunks) == 4
    loads = [_bytes(chunk) for chunk in chunks]
    assert max(loads) - min(loads) <= 3900  # at most about one file apart


def test_waves_shrink_so_the_last_tasks_are_small(tmp_path: Path) -> None:
    sources = _files(tmp_path, [2000 + 53 * n % 1500 for n in range(400)])
    chunks = balanced(sources, 2, 4)
    assert len(chunks) == 8
    loads = [_bytes(chunk) for chunk in chunks]
    total = sum(loads)
    # weights 4,4,3,3,2,2,1,1 (of 20), in the order Spark starts them
    for index, load in enumerate(loads):
        share = (4 - index // 2) / 20
        assert abs(load / total - share) < 0.01, (index, load / total)
    # two cores taking tasks in order as they free up end at about the same time
    cores = [0, 0]
    for load in loads:
        cores[cores.index(min(cores))] += load
    assert abs(cores[0] - cores[1]) <= 0.02 * total


def test_every_file_lands_in_exactly_one_task(tmp_path: Path) -> None:
    sources = _files(tmp_path, [1, 10, 100, 1000, 10000, 5, 50])
    missing = Source("repo", str(tmp_path / "gone.py"))  # unreadable: still placed
    chunks = balanced([*sources, missing], 3, 4)
    placed = [path for chunk in chunks for _, path in chunk]
    assert sorted(placed) == sorted(s.path for s in [*sources, missing])
    assert all(chunks)  # no empty task


def test_no_files_no_tasks() -> None:
    assert balanced([], 2, 4) == []
