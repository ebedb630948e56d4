"""Trace sources: synthetic tokens, real video, trained LLMs reading video (llm/), captures and trace files."""
