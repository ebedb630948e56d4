"""The ReSV algorithm and its baselines: hashing, clustering (HC table), the streaming session, the retrieval policies."""
