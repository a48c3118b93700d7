"""The tokenizer of an LLM (``LLM.get_tokenizer()``): the engine's own tokenizer.json and
Jinja chat template, with the methods of Hugging Face's tokenizers that vLLM users call."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Union

Conversation = List[Dict[str, Any]]


def render_chat(native, conversation: Conversation, add_generation_prompt: bool,
                chat_template: Optional[str], chat_template_kwargs: Optional[Dict[str, Any]]) -> str:
    """The conversation rendered by the model's chat template (or ``chat_template``)."""
    if not isinstance(conversation, (list, tuple)) or not all(isinstance(m, dict) for m in conversation):
        raise ValueError(f"messages must be a list of {{'role': ..., 'content': ...}} dicts, got {conversation!r}")
    kwargs = dict(chat_template_kwargs or {})
    return native.render_chat(json.dumps(list(conversation), ensure_ascii=False), add_generation_prompt,
                              chat_template or "", json.dumps(kwargs, ensure_ascii=False))


class Tokenizer:
    """encode / decode / apply_chat_template with the engine's tokenizer (thread-safe; the
    GIL is released while it runs)."""

    def __init__(self, native) -> None:
        self._native = native

    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """Token ids of ``text``; ``add_special_tokens`` adds BOS where the tokenizer does."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a string, got {type(text).__name__}")
        return self._native.encode(text, add_special_tokens)

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of ``token_ids``."""
        return self._native.decode(list(token_ids), skip_special_tokens)

    def __call__(self, text: str, add_special_tokens: bool = True) -> Dict[str, List[int]]:
        return {"input_ids": self.encode(text, add_special_tokens)}

    def apply_chat_template(
        self,
        conversation: Conversation,
        tokenize: bool = True,
        add_generation_prompt: bool = False,
        chat_template: Optional[str] = None,
        tools: Optional[List[Dict[str, Any]]] = None,
        **kwargs: Any,
    ) -> Union[str, List[int]]:
        """Renders ``conversation`` with the chat template (Hugging Face's signature and
        defaults); extra keyword arguments (e.g. ``enable_thinking=False``) reach the template.
        Returns the token ids, or the text when ``tokenize`` is False."""
        if tools is not None:
            kwargs["tools"] = tools
        text = render_chat(self._native, conversation, add_generation_prompt, chat_template, kwargs)
        return self.encode(text, add_special_tokens=False) if tokenize else text

    @property
    def vocab_size(self) -> int:
        return self._native.vocab_size

    @property
    def bos_token_id(self) -> Optional[int]:
        return self._native.bos_token_id

    @property
    def eos_token_id(self) -> Optional[int]:
        return self._native.eos_token_id

    def __len__(self) -> int:
        return self._native.vocab_size
