"""Think · Act · ReAct engine: events, parsing, LLM clients, modes, comparison, CLI."""
