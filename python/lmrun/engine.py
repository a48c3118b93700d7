"""LLMEngine: vLLM's step-by-step loop (``LLM.llm_engine``) for custom serving loops.

``add_request`` queues a prompt, each ``step()`` runs one engine step (GIL released) and
returns a RequestOutput for every request that made progress in it: cumulative, the
delta of this step, or nothing until the end, as the request's
``SamplingParams.output_kind`` says. The engine is shared with LLM.generate() of the same
LLM: requests of both may be in flight together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Union

from .outputs import CompletionOutput, RequestOutput, completion_from_native, logprobs_of, \
    request_output_from_native, stop_reason_of
from .prompts import PromptType, parse_prompt
from .sampling_params import RequestOutputKind, SamplingParams


@dataclass
class _Completion:
    text: str = ""
    token_ids: List[int] = field(default_factory=list)
    logprobs: list = field(default_factory=list)
    cumulative_logprob: float = 0.0
    finish_reason: Optional[str] = None


@dataclass
class _Request:
    prompt: Optional[str]
    prompt_token_ids: List[int]
    params: SamplingParams
    completions: Dict[int, _Completion] = field(default_factory=dict)


class LLMEngine:
    """Step-by-step access to an LLM's engine (vLLM's ``LLMEngine`` methods)."""

    def __init__(self, native) -> None:
        self._native = native
        self._requests: Dict[str, _Request] = {}

    def _decode(self, ids: List[int]) -> str:
        return self._native.decode(ids, False)

    def add_request(self, request_id: str, prompt: PromptType, params: Optional[SamplingParams] = None) -> None:
        """Queues a request. Raises ValueError for a bad prompt or an id already in use."""
        if not isinstance(request_id, str):
            raise ValueError(f"request_id must be a string, got {request_id!r}")
        params = params if params is not None else SamplingParams()
        if not isinstance(params, SamplingParams):
            raise ValueError(f"params must be a SamplingParams, got {type(params).__name__}")
        text, engine_prompt = parse_prompt(prompt)
        prompt_ids = self._native.add_request(request_id, engine_prompt, params, True)
        self._requests[request_id] = _Request(text, prompt_ids, params.clone())

    def abort_request(self, request_id: Union[str, Iterable[str]]) -> None:
        """Ends one request (or several) now; their KV cache blocks are freed at once."""
        ids = [request_id] if isinstance(request_id, str) else list(request_id)
        for rid in ids:
            self._native.abort_request(rid)
            self._requests.pop(rid, None)

    def has_unfinished_requests(self) -> bool:
        return self._native.has_unfinished_requests()

    def get_num_unfinished_requests(self) -> int:
        return len(self._requests)

    def step(self) -> List[RequestOutput]:
        """Runs one engine step; returns the outputs of the requests that progressed."""
        outputs = []
        for update in self._native.step():
            request = self._requests.get(update.request_id)
            if request is None:
                continue
            output = self._output_of(update, request)
            if update.finished:
                del self._requests[update.request_id]
            if output is not None:
                outputs.append(output)
        return outputs

    def _output_of(self, update, request: _Request) -> Optional[RequestOutput]:
        kind = request.params.output_kind
        if update.finished and kind != RequestOutputKind.DELTA:
            output = request_output_from_native(update.final_output, request.prompt, request.params, self._decode)
            return output
        if kind == RequestOutputKind.FINAL_ONLY:
            return None
        deltas: Dict[int, CompletionOutput] = {}
        want_logprobs = request.params.logprobs is not None
        for delta in update.deltas:
            state = request.completions.setdefault(delta.index, _Completion())
            new_logprobs = logprobs_of(delta.logprobs, self._decode) if want_logprobs else None
            state.text += delta.text
            state.token_ids.extend(delta.token_ids)
            if want_logprobs:
                state.logprobs.extend(new_logprobs)
                state.cumulative_logprob += sum(t.logprob for t in delta.logprobs)
            state.finish_reason = delta.finish_reason
            if kind == RequestOutputKind.DELTA:
                previous = deltas.get(delta.index)
                if previous is None:
                    deltas[delta.index] = CompletionOutput(
                        delta.index, delta.text, list(delta.token_ids),
                        state.cumulative_logprob if want_logprobs else None, new_logprobs, delta.finish_reason)
                else:
                    previous.text += delta.text
                    previous.token_ids.extend(delta.token_ids)
                    if want_logprobs:
                        previous.logprobs.extend(new_logprobs)
                        previous.cumulative_logprob = state.cumulative_logprob
                    previous.finish_reason = delta.finish_reason
        if kind == RequestOutputKind.DELTA:
            completions = [deltas[i] for i in sorted(deltas)]
            if update.finished:
                final = {c.index: c for c in update.final_output.outputs}
                for completion in completions:
                    if completion.index in final:
                        completion.stop_reason = stop_reason_of(final[completion.index], request.params)
        else:
            completions = [
                CompletionOutput(i, state.text, list(state.token_ids),
                                 state.cumulative_logprob if want_logprobs else None,
                                 list(state.logprobs) if want_logprobs else None, state.finish_reason)
                for i, state in sorted(request.completions.items())
            ]
        if not completions and not update.finished:
            return None
        return RequestOutput(update.request_id, request.prompt, request.prompt_token_ids, None, completions,
                             update.finished)
