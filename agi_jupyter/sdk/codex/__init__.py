"""The ``codex`` agent SDK: OpenAI's Codex CLI driven as ``codex exec --json``.

binary    finding the ``codex`` executable (``AGI_CODEX_BIN``, ``PATH``, our venv)
home      the project's private ``CODEX_HOME`` and its ``config.toml``
mapping   ``codex exec --json`` events -> canonical history events (pure, stateful)
adapter   ``CodexAdapter``: one run = one ``codex exec`` process

Nothing here imports anything heavy; the CLI is a separate process.
"""
