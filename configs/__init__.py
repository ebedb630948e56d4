"""Built-in configurations (edge = the paper's V-Rex8, server = V-Rex48, tiny = fast tests)."""
