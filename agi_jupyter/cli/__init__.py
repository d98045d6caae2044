"""The ``agi`` command line: ``agi "<prompt>"``, ``agi serve``, ``agi setup`` and inspection.

Each command parses its arguments and delegates to ``agi_jupyter.Agi`` (or, with ``--server``,
to a running server's REST API); modules stay small, one concern each:

    main.py      the click group (a bare prompt is the default command) and exit codes
    ask.py       ``agi "<prompt>"``: stream a run in-process or through ``remote.py``
    stream.py    printing a run's events (text to stdout, tool calls to stderr, NDJSON)
    remote.py    the REST + NDJSON client of ``--server``
    serve.py     ``agi serve``: a jupyter server with the agi extension
    setup.py     ``agi setup``: providers, keys (global credentials file) and project defaults
    inspect.py   sessions, show, runs, run, events, cancel, tick
    catalog.py   artifacts, artifact, tools, agents, models, tasks, stats
    export.py    ``agi export``: a session as a plain notebook
    budget.py    ``agi budget``: a session's or notebook's budget (``budget_remote.py``: REST)
    render.py    tables, JSON and one-line summaries shared by the commands
"""

from agi_jupyter.cli.main import cli, main

__all__ = ["cli", "main"]
