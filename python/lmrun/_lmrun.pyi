# Type stubs of the native module lmrun._lmrun (python/src). Use the `lmrun` package, not this.
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

class TokenLogprob:
    token_id: int
    logprob: float
    top: List[Tuple[int, float]]

class CompletionOutput:
    index: int
    text: str
    token_ids: List[int]
    logprobs: List[TokenLogprob]
    finish_reason: Optional[str]
    stop_reason: Union[int, str, None]
    error_message: str

class RequestMetrics:
    arrival_time: float
    first_scheduled_time: float
    first_token_time: float
    last_token_time: float
    finished_time: float
    num_prompt_tokens: int
    num_cached_tokens: int
    num_generation_tokens: int

class RequestOutput:
    request_id: str
    prompt_token_ids: List[int]
    outputs: List[CompletionOutput]
    finished: bool
    metrics: RequestMetrics

class CompletionDelta:
    request_id: str
    index: int
    text: str
    token_ids: List[int]
    logprobs: List[TokenLogprob]
    finished: bool
    finish_reason: Optional[str]
    error_message: str

class StepUpdate:
    request_id: str
    deltas: List[CompletionDelta]
    finished: bool
    final_output: RequestOutput

def validate_sampling_params(params: object) -> None: ...

class LLM:
    # options: model, tokenizer, dtype, seed, max_model_len, max_num_seqs, max_num_batched_tokens,
    # enable_prefix_caching, enable_chunked_prefill, kv_cache_memory_bytes, kv_cache_fraction,
    # kv_cache_dtype, block_size, num_threads, quantization, unquantized_embeddings,
    # tensor_parallel_size, distributed_executor_backend, worker_executable (llm.py builds it).
    def __init__(self, options: Dict[str, object]) -> None: ...
    def generate(self, prompts: Sequence[Union[str, List[int]]], params: Sequence[object],
                 add_special_tokens: bool,
                 on_progress: Optional[Callable[[int, int, int], None]]) -> List[RequestOutput]: ...
    def encode(self, text: str, add_special_tokens: bool) -> List[int]: ...
    def decode(self, ids: List[int], skip_special_tokens: bool) -> str: ...
    def render_chat(self, messages_json: str, add_generation_prompt: bool, template_source: str,
                    extra_kwargs_json: str) -> str: ...
    def add_request(self, request_id: str, prompt: Union[str, List[int]], params: object,
                    add_special_tokens: bool) -> List[int]: ...
    def abort_request(self, request_id: str) -> bool: ...
    def step(self) -> List[StepUpdate]: ...
    def has_unfinished_requests(self) -> bool: ...
    def shutdown(self) -> None: ...
    @property
    def max_model_len(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def has_tokenizer(self) -> bool: ...
    @property
    def bos_token_id(self) -> Optional[int]: ...
    @property
    def eos_token_id(self) -> Optional[int]: ...
