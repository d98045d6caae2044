"""The schema declared once (``store.schema``) is what a fresh database of each backend has,
and the migrations written once render on both backends."""

from __future__ import annotations

from agi_jupyter.store import MIGRATIONS, Store, schema
from agi_jupyter.store.migrations import MIGRATIONS_TABLE

# What each backend reports as a column's type, as the declaration's types.
_REPORTED = {
    "sqlite": {
        "TEXT": schema.TEXT,
        "INTEGER": schema.INTEGER,
        "REAL": schema.REAL,
        "BLOB": schema.BLOB,
    },
    "postgresql": {
        "text": schema.TEXT,
        "bigint": schema.INTEGER,
        "double precision": schema.REAL,
        "bytea": schema.BLOB,
    },
}


def _actual(store: Store) -> dict[str, dict[str, str]]:
    if store.dialect == "sqlite":
        sql = (
            "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p"
            " WHERE m.type = 'table'"
        )
    else:
        sql = (
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        )
    out: dict[str, dict[str, str]] = {}
    for table, column, kind in store.query(sql, max_rows=10_000).rows:
        if table != MIGRATIONS_TABLE:
            out.setdefault(str(table), {})[str(column)] = _REPORTED[store.dialect][str(kind)]
    return out


def _declared(backend: schema.Backend) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for table in schema.tables().values():
        types = {c.name: c.type for c in table.columns}
        out[table.name] = {
            name: types.get(name, schema.INTEGER)  # ``pos``
            for name in table.column_names(backend)
        }
    return out


def test_a_fresh_database_has_the_declared_tables_and_columns(store: Store) -> None:
    store.create_session()  # the first write creates (and migrates) the database
    backend: schema.Backend = "sqlite" if store.dialect == "sqlite" else "postgresql"
    assert _actual(store) == _declared(backend)


def test_every_migration_has_one_name_on_both_backends() -> None:
    assert [fn.__name__ for fn in MIGRATIONS] == [m.name for m in schema.MIGRATIONS]


def test_steps_render_idempotent_statements_for_both_backends() -> None:
    step = schema.AddColumn(
        "runs", schema.Column("priority", schema.INTEGER, not_null=True, default=0)
    )
    assert schema.statements(step, "sqlite", lambda table: set()) == [
        "ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0"
    ]
    assert schema.statements(step, "sqlite", lambda table: {"priority"}) == []
    assert schema.statements(step, "postgresql", lambda table: set()) == [
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS priority bigint NOT NULL DEFAULT 0"
    ]
    table = schema.Table(
        "notes",
        (schema.Column("id", primary_key=True), schema.Column("run_id", references="runs")),
    )
    assert schema.statements(schema.CreateTable(table), "postgresql", lambda t: set()) == [
        'CREATE TABLE IF NOT EXISTS notes (id text COLLATE "C" PRIMARY KEY,'
        ' pos bigint GENERATED ALWAYS AS IDENTITY, run_id text COLLATE "C")'
    ]
    index = schema.CreateIndex("notes", ("pos",), only="postgresql")
    assert schema.statements(index, "sqlite", lambda t: set()) == []
    assert schema.statements(index, "postgresql", lambda t: set()) == [
        "CREATE INDEX IF NOT EXISTS idx_notes_pos ON notes (pos)"
    ]
