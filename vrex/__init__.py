"""vrex: a hardware design generator for V-Rex, the streaming-video-LLM KV-cache retrieval accelerator."""

__version__ = "0.1.0"
