"""An MCP server command that writes to stderr and exits before the handshake."""

import sys

print("crashing: cannot open the database /nonexistent/db", file=sys.stderr, flush=True)
print(f"crashing: token was {sys.argv[1] if len(sys.argv) > 1 else '-'}", file=sys.stderr)
sys.exit(2)
