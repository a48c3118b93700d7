"""vLLM's output classes: RequestOutput, CompletionOutput and Logprob.

They are built once per finished request (or per step in the step-by-step API) from the
engine's records; no Python runs per generated token unless logprobs were requested.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Union

from .sampling_params import SamplingParams


@dataclass
class Logprob:
    """The log-probability of one token, its rank among the alternatives (1 = most likely;
    None when it was not among the returned alternatives) and its text."""

    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


# One dict per generated token: the sampled token and the top alternatives, by token id.
SampleLogprobs = List[Dict[int, Logprob]]


@dataclass
class CompletionOutput:
    """One of the n completions of a request.

    Attributes:
        index: which of the n completions this is.
        text: the generated text (without the stop string that ended it).
        token_ids: the generated token ids.
        cumulative_logprob: the sum of the sampled tokens' log-probabilities (None unless
            logprobs were requested).
        logprobs: per generated token, {token_id: Logprob} for the sampled token and the
            top ``SamplingParams.logprobs`` alternatives (None unless requested).
        finish_reason: "stop", "length", "abort", "error", or None while running.
        stop_reason: the stop string (str) or stop token id (int) that ended it; None when it
            ended on EOS, on length, or is still running.
    """

    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float]
    logprobs: Optional[SampleLogprobs]
    finish_reason: Optional[str] = None
    stop_reason: Union[int, str, None] = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestMetrics:
    """Timings (seconds since the epoch) and token counts of a request."""

    arrival_time: float
    first_scheduled_time: float
    first_token_time: float
    last_token_time: float
    finished_time: Optional[float]
    num_prompt_tokens: int
    num_cached_tokens: int
    num_generation_tokens: int


@dataclass
class RequestOutput:
    """What a request produced: its prompt and its completions (``outputs``).

    Attributes:
        request_id: the engine's id of the request.
        prompt: the prompt text (None when the prompt was given as token ids).
        prompt_token_ids: the prompt's token ids.
        prompt_logprobs: always None (prompt logprobs are not computed).
        outputs: the completions, by index.
        finished: whether every completion has finished.
        metrics: timings and token counts (None for step-by-step updates of running requests).
        num_cached_tokens: prompt tokens that were served from the prefix cache.
    """

    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    prompt_logprobs: Optional[list]
    outputs: List[CompletionOutput]
    finished: bool
    metrics: Optional[RequestMetrics] = None
    num_cached_tokens: Optional[int] = None


def stop_reason_of(native_completion, params: SamplingParams) -> Union[int, str, None]:
    """vLLM's stop_reason: the stop string, the stop token id, or None (EOS or length)."""
    reason = native_completion.stop_reason
    if reason is None or native_completion.finish_reason != "stop":
        return None
    if isinstance(reason, int):
        return reason if reason in params.stop_token_ids else None
    if reason in params.stop:
        return reason
    if reason.lstrip("-").isdigit() and int(reason) in params.stop_token_ids:
        return int(reason)
    return None


def logprobs_of(native_logprobs, decode: Callable[[List[int]], str]) -> SampleLogprobs:
    """The engine's per-token logprobs in vLLM's form."""
    result: SampleLogprobs = []
    for token in native_logprobs:
        top = token.top
        ranks = {token_id: rank for rank, (token_id, _) in enumerate(top, start=1)}
        entry = {token.token_id: Logprob(token.logprob, ranks.get(token.token_id), decode([token.token_id]))}
        for token_id, logprob in top:
            if token_id not in entry:
                entry[token_id] = Logprob(logprob, ranks[token_id], decode([token_id]))
        result.append(entry)
    return result


def completion_from_native(
    native_completion, params: SamplingParams, decode: Callable[[List[int]], str]
) -> CompletionOutput:
    logprobs = None
    cumulative = None
    if params.logprobs is not None:
        logprobs = logprobs_of(native_completion.logprobs, decode)
        cumulative = float(sum(token.logprob for token in native_completion.logprobs))
    return CompletionOutput(
        index=native_completion.index,
        text=native_completion.text,
        token_ids=native_completion.token_ids,
        cumulative_logprob=cumulative,
        logprobs=logprobs,
        finish_reason=native_completion.finish_reason,
        stop_reason=stop_reason_of(native_completion, params),
    )


def metrics_from_native(native_metrics) -> RequestMetrics:
    return RequestMetrics(
        arrival_time=native_metrics.arrival_time,
        first_scheduled_time=native_metrics.first_scheduled_time,
        first_token_time=native_metrics.first_token_time,
        last_token_time=native_metrics.last_token_time,
        finished_time=native_metrics.finished_time,
        num_prompt_tokens=native_metrics.num_prompt_tokens,
        num_cached_tokens=native_metrics.num_cached_tokens,
        num_generation_tokens=native_metrics.num_generation_tokens,
    )


def request_output_from_native(
    native_output, prompt: Optional[str], params: SamplingParams, decode: Callable[[List[int]], str]
) -> RequestOutput:
    metrics = metrics_from_native(native_output.metrics)
    return RequestOutput(
        request_id=native_output.request_id,
        prompt=prompt,
        prompt_token_ids=native_output.prompt_token_ids,
        prompt_logprobs=None,
        outputs=[completion_from_native(c, params, decode) for c in native_output.outputs],
        finished=native_output.finished,
        metrics=metrics,
        num_cached_tokens=metrics.num_cached_tokens,
    )
