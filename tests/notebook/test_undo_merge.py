"""Undo by merge, pure: hundreds of seeded sequences of agent changes, user edits, undos and
redos on a notebook dict, with the same derivation (``notebook.changes``), merge
(``notebook.merge``) and operations (``notebook.ops.apply_op``, what the file backend applies)
as the real undo. After every undo: no user edit is lost, every change undone is gone, and
nothing the undo did not revert moved or changed."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from agi_jupyter.notebook.changes import ChangeRecord, cell_changes, outputs_of
from agi_jupyter.notebook.merge import blocked_by, revert
from agi_jupyter.notebook.model import find_cell
from agi_jupyter.notebook.ops import Delete, Edit, Insert, SetOutputs, apply_op
from agi_jupyter.records import Change

SEQUENCES = 400


def cell(cell_id: str, cell_type: str, source: str, outputs: int = 0) -> dict[str, Any]:
    made: dict[str, Any] = {"id": cell_id, "cell_type": cell_type, "metadata": {}, "source": source}
    if cell_type == "code":
        made["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"{outputs}\n"}]
        made["execution_count"] = outputs or None
    return made


def state(c: dict[str, Any] | None, action: str) -> Any:
    """What a record of ``action`` changes in a cell."""
    if c is None:
        return None
    if action == "outputs":
        return outputs_of(c)
    if action == "moved":  # (its place: checked by the cells around it staying in order)
        return True
    return (c["cell_type"], c["source"])


@dataclass
class World:
    rng: random.Random
    notebook: dict[str, Any]
    records: list[ChangeRecord] = field(default_factory=list)
    user: dict[str, str] = field(default_factory=dict)  # cells whose source the user wrote last
    user_deleted: set[str] = field(default_factory=set)
    counter: int = 0
    moves: bool = True  # (the notebook tools never move a cell; an RTC client may)

    def ids(self) -> list[str]:
        return [str(c["id"]) for c in self.notebook["cells"]]

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def agent(self) -> None:
        before = copy.deepcopy(self.notebook)
        kinds = ["insert", "edit", "edit", "delete", "run", *(["move"] if self.moves else [])]
        ids, kind = self.ids(), self.rng.choice(kinds)
        if not ids:
            kind = "insert"
        target = self.rng.choice(ids) if ids else None
        if kind == "insert":
            cell_type = self.rng.choice(["code", "markdown"])
            anchor = self.rng.choice([None, *ids])
            op = Insert(
                cell_type=cell_type,
                source=self.fresh("agent "),
                cell_id=self.fresh("a"),
                after_cell_id=anchor,
                index=0 if anchor is None else None,
            )
            apply_op(self.notebook, op)
        elif kind == "move" and len(ids) > 1:
            cells = self.notebook["cells"]
            moving = cells.pop(ids.index(str(target)))
            cells.insert(self.rng.randrange(len(cells) + 1), moving)
        else:
            found = find_cell(self.notebook, str(target))
            assert found is not None
            current = found[1]
            if kind == "edit":
                apply_op(
                    self.notebook,
                    Edit(
                        cell_id=str(target),
                        expected_source=current["source"],
                        source=self.fresh("agent "),
                    ),
                )
            elif kind == "delete":
                apply_op(
                    self.notebook, Delete(cell_id=str(target), expected_source=current["source"])
                )
            elif current["cell_type"] == "code":
                count = self.counter + 1000
                apply_op(
                    self.notebook,
                    SetOutputs(
                        cell_id=str(target),
                        outputs=cell("x", "code", "", count)["outputs"],
                        execution_count=count,
                    ),
                )
        self.user.pop(str(target), None)
        row = Change(id=self.fresh("chg"), run_id="run", turn=1, kind="notebook", path="nb.ipynb")
        self.records += cell_changes(row, before, copy.deepcopy(self.notebook))

    def person(self) -> None:
        ids = self.ids()
        kind = self.rng.choice(["edit", "edit", "insert", "delete", "run"]) if ids else "insert"
        if kind == "insert":
            new = self.fresh("u")
            source = self.fresh("user ")
            apply_op(
                self.notebook,
                Insert(
                    cell_type="code",
                    source=source,
                    cell_id=new,
                    index=self.rng.randrange(len(ids) + 1),
                ),
            )
            self.user[new] = source
            return
        target = self.rng.choice(ids)
        found = find_cell(self.notebook, target)
        assert found is not None
        current = found[1]
        if kind == "edit":
            source = self.fresh("user ")
            apply_op(
                self.notebook,
                Edit(cell_id=target, expected_source=current["source"], source=source),
            )
            self.user[target] = source
        elif kind == "delete":
            apply_op(self.notebook, Delete(cell_id=target, expected_source=current["source"]))
            self.user.pop(target, None)
            self.user_deleted.add(target)
        elif current["cell_type"] == "code":
            count = self.counter + 5000
            apply_op(
                self.notebook,
                SetOutputs(
                    cell_id=target,
                    outputs=cell("x", "code", "", count)["outputs"],
                    execution_count=count,
                ),
            )
            self.fresh("")

    def undo(self, chosen: list[ChangeRecord], *, redo: bool = False) -> list[ChangeRecord]:
        before_pass = copy.deepcopy(self.notebook)
        done: list[ChangeRecord] = []
        for record in chosen if redo else reversed(chosen):
            if record.undone != redo:
                continue
            if blocked_by(record, self.records, redo=redo) is not None:
                continue
            decision = revert(self.notebook, record, redo=redo)
            for op in decision.ops:
                apply_op(self.notebook, op)
            if decision.status == "conflict":
                continue
            assert not decision.forced
            found = find_cell(self.notebook, str(record.cell_id))
            wanted = record.cell_after if redo else record.cell_before
            assert state(found and found[1], record.action) == state(wanted, record.action)
            record.undone = not redo
            done.append(record)
            if any(isinstance(op, Insert) for op in decision.ops):
                # Undoing the run's deletion of a cell the user deleted too, or redoing its
                # insertion the user had deleted, puts it back: what was asked.
                self.user_deleted.discard(str(record.cell_id))
        self.check_untouched(before_pass, {str(r.cell_id) for r in done})
        self.check_user_kept()
        return done

    def check_untouched(self, before: dict[str, Any], touched: set[str]) -> None:
        """Cells no reverted record touched are as they were, in the same order."""
        old = [c for c in before["cells"] if c["id"] not in touched]
        new = [c for c in self.notebook["cells"] if c["id"] not in touched]
        assert old == new

    def check_user_kept(self) -> None:
        for cell_id, source in self.user.items():
            found = find_cell(self.notebook, cell_id)
            assert found is not None, f"the user's cell {cell_id} is gone"
            assert found[1]["source"] == source, f"the user's edit of {cell_id} is lost"
        for cell_id in self.user_deleted - set(self.user):
            if find_cell(self.notebook, cell_id) is not None:
                # Only an agent's own insertion of that id could bring it back: never.
                raise AssertionError(f"the cell {cell_id} the user deleted came back")


def by_id(notebook: dict[str, Any]) -> dict[str, Any]:
    return {c["id"]: c for c in notebook["cells"]}


def start(rng: random.Random) -> dict[str, Any]:
    cells = [
        cell(f"c{i}", rng.choice(["code", "markdown"]), f"original {i}", outputs=i)
        for i in range(rng.randrange(0, 6))
    ]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.mark.parametrize("chunk", range(4))
def test_random_agent_changes_user_edits_and_undos_never_lose_a_user_edit(chunk: int) -> None:
    for seed in range(chunk * SEQUENCES // 4, (chunk + 1) * SEQUENCES // 4):
        rng = random.Random(seed)
        original = start(rng)
        # Without user edits (nor moves) undoing everything gives back the start exactly.
        quiet = seed % 3 == 0
        world = World(rng, copy.deepcopy(original), moves=not quiet)
        in_order = True
        for _ in range(rng.randrange(1, 25)):
            roll = rng.random()
            if roll < 0.5 or (quiet and roll < 0.85):
                world.agent()
            elif roll < 0.8 and not quiet:
                world.person()
            elif roll < 0.93 and world.records:
                live = [r for r in world.records if not r.undone]
                if rng.random() < 0.5:  # the last changes (a turn, the whole run)
                    chosen = live[rng.randrange(0, len(live) + 1) :]
                else:  # any of them
                    chosen = rng.sample(live, rng.randrange(0, len(live) + 1)) if live else []
                    chosen.sort(key=world.records.index)
                    in_order &= chosen == live[len(live) - len(chosen) :]
                done = world.undo(chosen)
                assert world.undo(chosen) == [], "undoing again does nothing"
                assert all(r.undone for r in done)
            elif world.records:
                undone = [r for r in world.records if r.undone]
                world.undo(undone, redo=True)
        world.undo(world.records)
        if quiet:  # everything is back; in place too unless undone out of order
            assert by_id(world.notebook) == by_id(original), f"seed {seed}"
            assert world.notebook == original or not in_order, f"seed {seed}"
