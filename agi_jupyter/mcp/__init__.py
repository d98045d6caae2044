"""MCP servers as tools: the client side (``.agi/mcp.json``, the servers' tools offered to
agents under the one tool policy). The project as an MCP server is ``agi_jupyter.mcp_server``."""
