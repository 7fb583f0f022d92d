"""Turnout as an MCP server: `server` (tools, resources, jobs), `http` (/mcp in the API), `stdio` (`turnout mcp`)."""
