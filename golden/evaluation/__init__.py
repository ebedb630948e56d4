"""Evaluation of retrieval methods: offline metrics on traces, the end-to-end loop with the LLM, plots, benchmarks."""
