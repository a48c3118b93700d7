"""LLM: vLLM's offline entry point over lmrun's C++ engine.

    from lmrun import LLM, SamplingParams
    llm = LLM("path/to/hf-checkpoint")
    outputs = llm.generate(["Hello, my name is"], SamplingParams(temperature=0.8, max_tokens=64))
    print(outputs[0].outputs[0].text)

The whole batch runs in C++ with the GIL released; Python is only involved between engine
steps (to check for Ctrl-C and to update the progress bar when requests finish).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _lmrun
from .engine import LLMEngine
from .outputs import RequestOutput, request_output_from_native
from .progress import ProgressBar
from .prompts import PromptType, parse_prompts
from .sampling_params import SamplingParams
from .tokenizer import Conversation, Tokenizer, render_chat
from .worker_executable import worker_executable

# vLLM options that mean nothing on a CPU engine; accepted so vLLM scripts run unchanged.
_IGNORED_OPTIONS = {"enforce_eager", "trust_remote_code", "gpu_memory_utilization", "disable_log_stats",
                    "tokenizer_mode", "swap_space"}


# vLLM's names and lmrun's aliases (--kv-cache-dtype, src/engine/kv_cache.h).
_KV_CACHE_DTYPES = ("auto", "bfloat16", "bf16", "float32", "f32", "int8", "fp8", "fp8_e4m3")
_QUANTIZATIONS = (None, "none", "int8")
_BACKENDS = (None, "uni", "mp")


def _choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    if value not in allowed:
        shown = ", ".join(repr(item) for item in allowed)
        raise ValueError(f"{name} must be one of {shown}, got {value!r}")
    return value


def _executor_backend(backend: Optional[str], tensor_parallel_size: int) -> str:
    if backend == "mpi":
        raise ValueError("distributed_executor_backend='mpi' is not available from Python (its ranks > 0 must run "
                         "the lmrun command): use 'mp', or `mpirun -np N lmrun serve ... "
                         "--distributed-executor-backend mpi`")
    _choice("distributed_executor_backend", backend, _BACKENDS)
    if backend == "uni" and tensor_parallel_size != 1:
        raise ValueError(f"distributed_executor_backend='uni' runs one rank; tensor_parallel_size={tensor_parallel_size} "
                         "needs 'mp'")
    return backend or ""


def _positive(name: str, value: Any, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        raise ValueError(f"{name} must be an integer >= {0 if allow_zero else 1}, got {value!r}")
    return value


class LLM:
    """A model loaded into lmrun's engine, with vLLM's offline API.

    Args:
        model: a Hugging Face checkpoint folder (config.json, *.safetensors).
        tokenizer: a folder with tokenizer.json (default: ``model``).
        dtype: "auto" (F32 checkpoints stay F32, others run in BF16), "float32" or "bfloat16".
        seed: seeds the requests that bring no seed of their own.
        max_model_len: longest prompt + output (default: the model's).
        max_num_seqs: most sequences in one step (default 64).
        max_num_batched_tokens: most tokens in one step (default 2048).
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        kv_cache_memory: KV cache size in GiB (default: ``kv_cache_fraction`` of free RAM).
        kv_cache_fraction: share of available RAM for the KV cache when kv_cache_memory is None.
        block_size: tokens per KV cache block.
        num_threads: compute threads (0 = one per core).
        enable_chunked_prefill: split long prompts over several steps.
        tensor_parallel_size: ranks the model is split over (vLLM's tensor parallelism: heads,
            MLP features and vocabulary split, one worker process per rank > 0 running the
            ``lmrun`` binary, see worker_executable.py).
        distributed_executor_backend: None or "mp" (worker processes; the default when
            tensor_parallel_size > 1) or "uni" (one process, tensor_parallel_size 1).
        quantization: None (the checkpoint decides: an int8 compressed-tensors checkpoint stays
            int8) or "int8" (float weights quantized to int8 at load, W8A8).
        unquantized_embeddings: with quantization="int8", keep the embedding and LM head in dtype.
        kv_cache_dtype: "auto" (the weight dtype), "bfloat16", "float32", "int8" or "fp8_e4m3"
            ("fp8"); int8 and fp8 keep a scale per token and KV head.
        packed_cache: True (lmrun's default directory, ~/.cache/lmrun/packed or under
            $LMRUN_CACHE_DIR), a directory, or False. A first start writes the packed weights
            there in the background; later starts map them instead of packing the checkpoint.
        enforce_eager, trust_remote_code, gpu_memory_utilization, ...: vLLM options with no
            meaning here, accepted and ignored.

    Raises:
        FileNotFoundError / OSError: the model or tokenizer files are missing or malformed
            (the message names the file).
        ValueError: a bad option.
        RuntimeError: a model lmrun cannot run (architecture, dtype).
    """

    def __init__(
        self,
        model: Union[str, os.PathLike],
        tokenizer: Optional[Union[str, os.PathLike]] = None,
        dtype: str = "auto",
        seed: int = 0,
        max_model_len: Optional[int] = None,
        max_num_seqs: int = 64,
        max_num_batched_tokens: int = 2048,
        enable_prefix_caching: bool = True,
        kv_cache_memory: Optional[float] = None,
        kv_cache_fraction: float = 0.4,
        block_size: int = 256,
        num_threads: int = 0,
        enable_chunked_prefill: bool = True,
        tensor_parallel_size: int = 1,
        quantization: Optional[str] = None,
        kv_cache_dtype: str = "auto",
        distributed_executor_backend: Optional[str] = None,
        unquantized_embeddings: bool = False,
        packed_cache: Union[bool, str, os.PathLike] = True,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - _IGNORED_OPTIONS)
        if unknown:
            raise TypeError(f"LLM() got unexpected keyword argument(s): {', '.join(unknown)}")
        tensor_parallel_size = _positive("tensor_parallel_size", tensor_parallel_size)
        backend = _executor_backend(distributed_executor_backend, tensor_parallel_size)
        _choice("quantization", quantization, _QUANTIZATIONS)
        _choice("kv_cache_dtype", kv_cache_dtype, _KV_CACHE_DTYPES)
        if not isinstance(unquantized_embeddings, bool):
            raise ValueError(f"unquantized_embeddings must be True or False, got {unquantized_embeddings!r}")
        if unquantized_embeddings and quantization != "int8":
            raise ValueError("unquantized_embeddings=True needs quantization='int8'")
        if packed_cache is True:
            packed_cache_option = ""  # the engine's default directory
        elif packed_cache is False:
            packed_cache_option = "none"
        elif isinstance(packed_cache, (str, os.PathLike)) and os.fspath(packed_cache):
            packed_cache_option = os.fspath(packed_cache)
        else:
            raise ValueError(f"packed_cache must be True, False or a directory, got {packed_cache!r}")
        if dtype not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"dtype must be 'auto', 'float32' or 'bfloat16', got {dtype!r}")
        kv_bytes = 0
        if kv_cache_memory is not None:
            if isinstance(kv_cache_memory, bool) or not isinstance(kv_cache_memory, (int, float)) \
                    or not kv_cache_memory > 0:
                raise ValueError(f"kv_cache_memory must be a number of GiB > 0, got {kv_cache_memory!r}")
            kv_bytes = int(kv_cache_memory * (1 << 30))
        if not isinstance(kv_cache_fraction, (int, float)) or not 0 < kv_cache_fraction <= 1:
            raise ValueError(f"kv_cache_fraction must be in (0, 1], got {kv_cache_fraction!r}")
        self._native = _lmrun.LLM(dict(
            model=os.fspath(model),
            tokenizer=os.fspath(tokenizer) if tokenizer is not None else "",
            dtype=dtype,
            seed=_positive("seed", seed, allow_zero=True),
            max_model_len=_positive("max_model_len", max_model_len) if max_model_len is not None else 0,
            max_num_seqs=_positive("max_num_seqs", max_num_seqs),
            max_num_batched_tokens=_positive("max_num_batched_tokens", max_num_batched_tokens),
            enable_prefix_caching=bool(enable_prefix_caching),
            enable_chunked_prefill=bool(enable_chunked_prefill),
            kv_cache_memory_bytes=kv_bytes,
            kv_cache_fraction=float(kv_cache_fraction),
            kv_cache_dtype=kv_cache_dtype,
            block_size=_positive("block_size", block_size),
            num_threads=_positive("num_threads", num_threads, allow_zero=True),
            quantization=quantization or "",
            unquantized_embeddings=unquantized_embeddings,
            packed_cache=packed_cache_option,
            tensor_parallel_size=tensor_parallel_size,
            distributed_executor_backend=backend,
            worker_executable=worker_executable() if tensor_parallel_size > 1 else "",
        ))
        self._engine: Optional[LLMEngine] = None
        self._tokenizer: Optional[Tokenizer] = None

    def _decode(self, ids: List[int]) -> str:
        return self._native.decode(ids, False)

    @staticmethod
    def _params_list(sampling_params, count: int) -> List[SamplingParams]:
        if sampling_params is None:
            return [SamplingParams()] * count
        if isinstance(sampling_params, SamplingParams):
            return [sampling_params] * count
        params = list(sampling_params)
        if len(params) != count:
            raise ValueError(f"sampling_params: got {len(params)} for {count} prompts (give one, or one per prompt)")
        for i, item in enumerate(params):
            if not isinstance(item, SamplingParams):
                raise ValueError(f"sampling_params[{i}] must be a SamplingParams, got {type(item).__name__}")
        return params

    def _run(self, prompts, sampling_params, use_tqdm: bool, add_special_tokens: bool) -> List[RequestOutput]:
        parsed = parse_prompts(prompts)
        params = self._params_list(sampling_params, len(parsed))
        if not parsed:
            return []
        bar = ProgressBar(len(parsed), use_tqdm=True) if use_tqdm else None
        try:
            native_outputs = self._native.generate([engine_prompt for _, engine_prompt in parsed], params,
                                                   add_special_tokens, bar.update if bar else None)
        finally:
            if bar is not None:
                bar.close()
        return [request_output_from_native(output, text, p, self._decode)
                for output, (text, _), p in zip(native_outputs, parsed, params)]

    def generate(
        self,
        prompts: Union[PromptType, Sequence[PromptType]],
        sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
        use_tqdm: bool = True,
    ) -> List[RequestOutput]:
        """Generates completions for every prompt; returns one RequestOutput per prompt, in order.

        Args:
            prompts: a string, ``{"prompt": str}``, ``{"prompt_token_ids": [...]}``, or a list
                of these (a list of token ids inside the list is one token prompt).
            sampling_params: one SamplingParams for all prompts or one per prompt
                (default: ``SamplingParams()``).
            use_tqdm: show a progress bar (tqdm if installed).

        Raises:
            ValueError: a bad prompt or SamplingParams (no request is left queued).
            KeyboardInterrupt: Ctrl-C; the batch is aborted and the LLM stays usable.
        """
        return self._run(prompts, sampling_params, use_tqdm, add_special_tokens=True)

    def chat(
        self,
        messages: Union[Conversation, Sequence[Conversation]],
        sampling_params: Optional[Union[SamplingParams, Sequence[SamplingParams]]] = None,
        use_tqdm: bool = True,
        chat_template: Optional[str] = None,
        add_generation_prompt: bool = True,
        chat_template_kwargs: Optional[Dict[str, Any]] = None,
        tools: Optional[List[Dict[str, Any]]] = None,
    ) -> List[RequestOutput]:
        """Generates replies to one conversation (a list of {"role", "content"} dicts) or to a
        list of them, rendered with the model's Jinja chat template (or ``chat_template``, the
        template's text). ``chat_template_kwargs`` (e.g. ``{"enable_thinking": False}``) and
        ``tools`` reach the template."""
        conversations = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        kwargs = dict(chat_template_kwargs or {})
        if tools is not None:
            kwargs["tools"] = tools
        rendered = [render_chat(self._native, conversation, add_generation_prompt, chat_template, kwargs)
                    for conversation in conversations]
        # The template already wrote any BOS.
        return self._run(rendered, sampling_params, use_tqdm, add_special_tokens=False)

    def get_tokenizer(self) -> Tokenizer:
        """The model's tokenizer: encode, decode, apply_chat_template."""
        if not self._native.has_tokenizer:
            raise ValueError("this model has no tokenizer.json; pass tokenizer=DIR to LLM()")
        if self._tokenizer is None:
            self._tokenizer = Tokenizer(self._native)
        return self._tokenizer

    @property
    def llm_engine(self) -> LLMEngine:
        """Step-by-step access: add_request / step / abort_request."""
        if self._engine is None:
            self._engine = LLMEngine(self._native)
        return self._engine

    @property
    def max_model_len(self) -> int:
        """Longest prompt + output this engine takes."""
        return self._native.max_model_len

    @property
    def vocab_size(self) -> int:
        """The model's vocabulary (rows of its embedding); token ids are below it."""
        return self._native.vocab_size
