"""A tiny random causal LM with a byte-level tokenizer and a chat template, saved as a HuggingFace folder.

Its shapes are the tiny config's (2 layers, hidden 64, 4 query / 2 KV heads of dim 16); it loads through
``--model PATH`` like any local model. Weights are random (seeded): fine for layout, caching, loader and e2e-loop
equivalences, meaningless for accuracy.
"""

from pathlib import Path

import torch

TEMPLATE = ("{% for m in messages %}{% if loop.first %}{{ '<|im_start|>system\nBe brief.<|im_end|>\n' }}{% endif %}"
            "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}"
            "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def tiny_cfg(**overrides):
    from vrex.config import load_config

    return load_config("tiny").with_overrides({"model.answer_tokens": 5, "resv.recent_window_tokens": 48,
                                               **overrides})


def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=TEMPLATE)
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    fast.eos_token = "<|im_end|>"
    return fast


def save_tiny_llm(folder: Path, *, layers: int = 2, context: int = 512, seed: int = 0,
                  sliding_window: int | None = None) -> Path:
    """Write the tiny model and tokenizer to ``folder`` (once) and return it. With ``sliding_window`` the model is
    a Gemma 3 whose first layer attends that many tokens (the others the whole context), as Gemma 3 270M's."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    if (folder / "config.json").is_file():
        return folder
    tok = tokenizer()
    shape = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=context,
                 eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id, tie_word_embeddings=True)
    torch.manual_seed(seed)
    if sliding_window is None:
        model = LlamaForCausalLM(LlamaConfig(**shape))
    else:
        types = ["sliding_attention"] + ["full_attention"] * (layers - 1)
        model = Gemma3ForCausalLM(Gemma3TextConfig(**shape, sliding_window=sliding_window, layer_types=types))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder
