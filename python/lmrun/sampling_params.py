"""SamplingParams: vLLM's per-request sampling options, checked when constructed.

Field names and defaults follow vLLM. Every field is checked in ``__init__``: a value of the
wrong type or out of range raises ``ValueError`` whose message starts with the field's name.
The ranges are the engine's own (the same check the C++ API and ``lmrun serve`` apply).
"""

from __future__ import annotations

import enum
import numbers
from typing import List, Optional, Sequence, Union

from . import _lmrun
from .structured_outputs import GuidedDecodingParams, StructuredOutputsParams

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class RequestOutputKind(enum.Enum):
    """What ``LLMEngine.step()`` reports for a running request (vLLM's names)."""

    CUMULATIVE = 0  #: everything generated so far
    DELTA = 1  #: only what this step added
    FINAL_ONLY = 2  #: nothing until the request finished


def _check_int(name: str, value, low: int, high: int, optional: bool = False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not low <= int(value) <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return int(value)


def _check_float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _check_bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def _string_list(name: str, value) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{name} must be a string or a list of strings, got {value!r}")
    return list(value)


def _int_list(name: str, value) -> List[int]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list of integers, got {value!r}")
    return [_check_int(f"{name}[{i}]", item, -_INT32_MAX - 1, _INT32_MAX) for i, item in enumerate(value)]


def _structured_outputs(structured_outputs, guided_decoding) -> Optional[StructuredOutputsParams]:
    if structured_outputs is not None and guided_decoding is not None:
        raise ValueError("structured_outputs and guided_decoding are the same option: give only one")
    value = structured_outputs if structured_outputs is not None else guided_decoding
    name = "structured_outputs" if structured_outputs is not None else "guided_decoding"
    if value is not None and not isinstance(value, StructuredOutputsParams):
        raise ValueError(f"{name} must be a StructuredOutputsParams, got {type(value).__name__}")
    return value


class SamplingParams:
    """Sampling options for one request, with vLLM's names and defaults.

    Args:
        n: completions to generate per prompt (1-128).
        presence_penalty: subtracted from the logit of every token already generated ([-2, 2]).
        frequency_penalty: subtracted once per occurrence of a generated token ([-2, 2]).
        repetition_penalty: divides positive logits (multiplies negative ones) of tokens in the
            prompt or output ((0, 100]; 1 = off).
        temperature: 0 is greedy; higher is more random ([0, 100]).
        top_p: nucleus sampling mass ((0, 1]; 1 = off).
        top_k: keep the k most likely tokens (0 or -1 = off).
        min_p: drop tokens below min_p times the most likely one's probability ([0, 1]).
        seed: makes the request's sampling reproducible (None = derived from the LLM's seed).
        stop: a string or strings that end the completion (not included in the text).
        stop_token_ids: token ids that end the completion.
        ignore_eos: keep generating after the end-of-sequence token.
        max_tokens: most tokens to generate (None = until the context is full).
        min_tokens: EOS and stop tokens cannot end the completion before this many tokens.
        logprobs: return the log-probability of each sampled token and of this many most
            likely alternatives (0-20; None = none).
        skip_special_tokens: leave special tokens out of the text.
        output_kind: what ``LLMEngine.step()`` reports for a running request.
        structured_outputs: a StructuredOutputsParams the output must match (JSON Schema,
            regex, choice, EBNF grammar, any JSON object).
        guided_decoding: the same under vLLM < 0.10's name (a GuidedDecodingParams); give one
            of the two.
        prompt_logprobs, best_of, detokenize, include_stop_str_in_output,
        spaces_between_special_tokens: accepted for compatibility at vLLM's defaults only.

    Raises:
        ValueError: a field has the wrong type or is out of range (the message names it).
    """

    def __init__(
        self,
        n: int = 1,
        best_of: Optional[int] = None,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repetition_penalty: float = 1.0,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
        seed: Optional[int] = None,
        stop: Optional[Union[str, Sequence[str]]] = None,
        stop_token_ids: Optional[Sequence[int]] = None,
        ignore_eos: bool = False,
        max_tokens: Optional[int] = 16,
        min_tokens: int = 0,
        logprobs: Optional[int] = None,
        prompt_logprobs: Optional[int] = None,
        detokenize: bool = True,
        skip_special_tokens: bool = True,
        spaces_between_special_tokens: bool = True,
        include_stop_str_in_output: bool = False,
        output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE,
        structured_outputs: Optional[StructuredOutputsParams] = None,
        guided_decoding: Optional[GuidedDecodingParams] = None,
    ) -> None:
        self.n = _check_int("n", n, -_INT32_MAX - 1, _INT32_MAX)
        if best_of is not None and best_of != n:
            raise ValueError(f"best_of is not supported (only None or equal to n={n}), got {best_of!r}")
        self.best_of = best_of
        self.presence_penalty = _check_float("presence_penalty", presence_penalty)
        self.frequency_penalty = _check_float("frequency_penalty", frequency_penalty)
        self.repetition_penalty = _check_float("repetition_penalty", repetition_penalty)
        self.temperature = _check_float("temperature", temperature)
        self.top_p = _check_float("top_p", top_p)
        self.top_k = _check_int("top_k", top_k, -_INT32_MAX - 1, _INT32_MAX)
        self.min_p = _check_float("min_p", min_p)
        self.seed = _check_int("seed", seed, 0, 2**64 - 1, optional=True)
        self.stop = _string_list("stop", stop)
        self.stop_token_ids = _int_list("stop_token_ids", stop_token_ids)
        self.ignore_eos = _check_bool("ignore_eos", ignore_eos)
        self.max_tokens = _check_int("max_tokens", max_tokens, -_INT64_MAX - 1, _INT64_MAX, optional=True)
        self.min_tokens = _check_int("min_tokens", min_tokens, -_INT64_MAX - 1, _INT64_MAX)
        self.logprobs = _check_int("logprobs", logprobs, -_INT32_MAX - 1, _INT32_MAX, optional=True)
        if prompt_logprobs is not None:
            raise ValueError(f"prompt_logprobs is not supported (only None), got {prompt_logprobs!r}")
        self.prompt_logprobs = None
        if detokenize is not True:
            raise ValueError(f"detokenize=False is not supported, got {detokenize!r}")
        self.detokenize = True
        self.skip_special_tokens = _check_bool("skip_special_tokens", skip_special_tokens)
        self.spaces_between_special_tokens = _check_bool(
            "spaces_between_special_tokens", spaces_between_special_tokens
        )
        if include_stop_str_in_output is not False:
            raise ValueError(
                f"include_stop_str_in_output=True is not supported, got {include_stop_str_in_output!r}"
            )
        self.include_stop_str_in_output = False
        if not isinstance(output_kind, RequestOutputKind):
            raise ValueError(f"output_kind must be a RequestOutputKind, got {output_kind!r}")
        self.output_kind = output_kind
        self.structured_outputs = _structured_outputs(structured_outputs, guided_decoding)
        # The ranges: the engine's own check, whose message starts with the field's name.
        _lmrun.validate_sampling_params(self)

    def clone(self) -> "SamplingParams":
        """A copy (SamplingParams are plain values)."""
        copy = SamplingParams.__new__(SamplingParams)
        copy.__dict__.update(self.__dict__)
        copy.stop = list(self.stop)
        copy.stop_token_ids = list(self.stop_token_ids)
        return copy

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SamplingParams) and self.__dict__ == other.__dict__

    @property
    def guided_decoding(self) -> Optional[StructuredOutputsParams]:
        """vLLM < 0.10's name for ``structured_outputs``."""
        return self.structured_outputs

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"SamplingParams({fields})"
