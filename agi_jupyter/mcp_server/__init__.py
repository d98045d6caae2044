"""The project as an MCP server for external agents (Claude Desktop, Cursor, VS Code, ...).

server    ProjectServer: the SDK's low-level Server with our tools and the project's sessions
project   agi_sessions, agi_history, agi_runs, agi_start_run, agi_follow, agi_cancel
calls     ExternalCalls: each call of one of our tools recorded as a run of the client's session
stdio     serve_stdio: ``agi mcp``
The streamable-HTTP endpoint ``/agi/mcp`` is in ``server/mcp_http.py`` (the Jupyter server).

Importing this package imports the ``mcp`` SDK: front doors import it when they serve.
"""
