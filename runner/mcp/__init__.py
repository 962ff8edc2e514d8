"""MCP (Model Context Protocol) servers as tools: configuration, a synchronous client over the official SDK,
and the mapping from a server's tools and results to what a model sees.

Self-contained: nothing here knows about sessions, the recorder or the CLI; the runner wires it in.
"""
