"""Prompts as vLLM accepts them: a string, {"prompt": str}, {"prompt_token_ids": [...]}, or
(as nano-vLLM's generate takes them) a list of token ids inside a list of prompts."""

from __future__ import annotations

import numbers
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

PromptType = Union[str, Dict[str, Any], List[int]]

_INT32_MAX = 2**31 - 1


def _token_ids(value: Any, where: str) -> List[int]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"{where}: prompt_token_ids must be a non-empty list of token ids")
    for i, token in enumerate(value):
        if isinstance(token, bool) or not isinstance(token, numbers.Integral) or not 0 <= token <= _INT32_MAX:
            raise ValueError(f"{where}: prompt_token_ids[{i}] must be a token id (int >= 0), got {token!r}")
    return [int(token) for token in value]


def parse_prompt(prompt: Any, where: str = "prompt") -> Tuple[Optional[str], Union[str, List[int]]]:
    """(the prompt's text or None, what the engine takes: text or token ids)."""
    if isinstance(prompt, str):
        return prompt, prompt
    if isinstance(prompt, dict):
        if "prompt_token_ids" in prompt:
            return prompt.get("prompt"), _token_ids(prompt["prompt_token_ids"], where)
        if "prompt" in prompt and isinstance(prompt["prompt"], str):
            return prompt["prompt"], prompt["prompt"]
        raise ValueError(f"{where}: a dict prompt needs 'prompt' (str) or 'prompt_token_ids' (list of int)")
    if isinstance(prompt, (list, tuple)):
        return None, _token_ids(prompt, where)
    raise ValueError(f"{where}: expected a string, a list of token ids or a dict, got {type(prompt).__name__}")


def parse_prompts(prompts: Any) -> List[Tuple[Optional[str], Union[str, List[int]]]]:
    """One prompt or a list of them (a flat list of ints is refused: wrap it in
    {"prompt_token_ids": ...})."""
    if isinstance(prompts, (str, dict)):
        return [parse_prompt(prompts)]
    if not isinstance(prompts, Sequence):
        raise ValueError(f"prompts must be a string, a dict or a list of them, got {type(prompts).__name__}")
    if prompts and all(isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in prompts):
        raise ValueError("prompts is a list of ints: pass token ids as {'prompt_token_ids': [...]} "
                         "(or a list of such lists)")
    return [parse_prompt(p, f"prompts[{i}]") for i, p in enumerate(prompts)]
