"""A maze as a NumPy grid: the four moves, checks of a grid and its cells, and breadth-first
search (the shortest path every Maze chapter measures agents against).

A grid is a bool array ``(rows, cols)``, True for a wall; a cell is ``(row, col)``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

#: (row, col) change of each of the Maze's actions: 0 up, 1 right, 2 down, 3 left.
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))


def _legal_moves(walls: np.ndarray, cell: tuple) -> list:
    rows, cols = walls.shape
    r, c = cell
    moves = []
    for dr, dc in MOVES:
        nr, nc = r + dr, c + dc
        if 0 <= nr < rows and 0 <= nc < cols and not walls[nr, nc]:
            moves.append((nr, nc))
    return moves


def check_cell(cell: Any, name: str, walls: np.ndarray) -> tuple:
    """``cell`` as ``(row, col)`` if it is a free cell inside the maze ``walls``.

    Raises:
        ValueError: naming ``name``, for a cell that is not a pair of ints, lies outside
            the grid (negative indices included) or on a wall.
    """
    arr = np.asarray(cell)
    if arr.shape != (2,) or not (
        np.issubdtype(arr.dtype, np.integer) and not np.issubdtype(arr.dtype, np.bool_)
    ):
        raise ValueError(f"{name}: expected a (row, col) pair of ints, got {cell!r}")
    r, c = int(arr[0]), int(arr[1])
    rows, cols = walls.shape
    if not (0 <= r < rows and 0 <= c < cols):
        raise ValueError(
            f"{name}: cell {(r, c)} is outside the {rows}x{cols} maze "
            f"(rows 0..{rows - 1}, cols 0..{cols - 1})"
        )
    if walls[r, c]:
        raise ValueError(f"{name}: cell {(r, c)} is a wall")
    return r, c


def check_walls(walls: Any, name: str = "walls") -> np.ndarray:
    """``walls`` as a bool NumPy array ``(rows, cols)``, True for a wall.

    Raises:
        ValueError: naming ``name``, for an array that is not 2-D with at least 2 cells, or
            holds values other than booleans or 0 and 1.
    """
    arr = np.asarray(walls)
    if arr.ndim != 2 or arr.size < 2:
        raise ValueError(
            f"{name}: expected a 2-D array (rows, cols) with at least 2 cells, "
            f"got shape {arr.shape}"
        )
    if arr.dtype != bool:
        if not (np.issubdtype(arr.dtype, np.number) and np.isin(arr, (0, 1)).all()):
            raise ValueError(f"{name}: expected booleans (or 0 and 1), got dtype {arr.dtype}")
        arr = arr.astype(bool)
    return arr


def _cells(cells: Sequence[Sequence[int]], name: str, walls: np.ndarray) -> list:
    arr = np.asarray(cells)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] == 0:
        raise ValueError(f"{name}: expected a non-empty list of (row, col) pairs, got {cells!r}")
    return [check_cell(c, name, walls) for c in arr]


def shortest_path(walls: Any, start: Any, target: Any) -> list | None:
    """A shortest path by breadth-first search, neighbours tried in :data:`MOVES` order.

    ``walls``: bool array-like ``(rows, cols)``; ``start``, ``target``: free ``(row, col)`` cells.

    Returns:
        list of ``(row, col)`` from ``start`` to ``target`` inclusive, or ``None`` if unreachable.

    Raises:
        ValueError: for ``walls`` not a 2-D 0/1 grid, or a cell not an int pair of a free cell.
    """
    walls = check_walls(walls)
    start, target = check_cell(start, "start", walls), check_cell(target, "target", walls)
    rows, cols = walls.shape
    previous = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == target:
            path = [cell]
            while previous[path[-1]] is not None:
                path.append(previous[path[-1]])
            return path[::-1]
        for dr, dc in MOVES:
            nxt = (cell[0] + dr, cell[1] + dc)
            if 0 <= nxt[0] < rows and 0 <= nxt[1] < cols and not walls[nxt] and nxt not in previous:
                previous[nxt] = cell
                queue.append(nxt)
    return None


def shortest_path_length(walls: Any, start: Sequence[int], target: Sequence[int]) -> int:
    """Fewest moves from ``start`` to ``target``: :func:`shortest_path`'s length minus one,
    0 when ``start == target``, -1 when the target cannot be reached.

    Raises:
        ValueError: as :func:`shortest_path`.
    """
    path = shortest_path(walls, start, target)
    return -1 if path is None else len(path) - 1
