"""Executable validation scenarios for 9plan's MCP server (see README.md here)."""
