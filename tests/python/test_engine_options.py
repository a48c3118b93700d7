"""LLM()'s engine options beyond one process in float: tensor_parallel_size (worker processes
running the packaged lmrun binary), quantization="int8" and kv_cache_dtype="int8"/"fp8_e4m3",
each reaching the C++ engine; bad values are ValueErrors naming the option."""

import math

import pytest
from conftest import data_path, load_json, stories_llm

import lmrun
from lmrun import worker_executable

GREEDY = dict(temperature=0, ignore_eos=True)


def qwen3_llm(**overrides):
    options = dict(tokenizer=data_path("qwen3-tokenizer"), dtype="float32", max_model_len=1024, block_size=16,
                   kv_cache_memory=0.1)
    options.update(overrides)
    return lmrun.LLM(data_path("qwen3-tiny"), **options)


def greedy_ids(llm, cases, max_tokens):
    params = lmrun.SamplingParams(max_tokens=max_tokens, **GREEDY)
    outputs = llm.generate([{"prompt_token_ids": c["prompt_ids"]} for c in cases], params, use_tqdm=False)
    return [o.outputs[0].token_ids for o in outputs]


@pytest.fixture
def packaged_worker_binary(monkeypatch):
    """Tensor parallelism as an installed package runs it: the lmrun binary inside the package
    (CTest sets LMRUN_BIN to build/lmrun; the package's own copy must work without it)."""
    monkeypatch.delenv("LMRUN_BIN", raising=False)
    assert worker_executable.PACKAGED_BINARY.is_file(), "the build did not copy lmrun into the package"
    return str(worker_executable.PACKAGED_BINARY)


def test_tensor_parallel_2_greedy_equals_one_process_stories260k(stories, packaged_worker_binary):
    assert worker_executable.worker_executable() == packaged_worker_binary
    cases = load_json("stories260k", "expected.json")["cases"]
    llm = stories_llm(tensor_parallel_size=2, num_threads=1)
    assert greedy_ids(llm, cases, 48) == greedy_ids(stories, cases, 48)
    # And it is the golden (the one-process goldens test checks the same for tp=1).
    case = cases[2]
    [ids] = greedy_ids(llm, [case], case["max_new_tokens"])
    assert ids[:len(case["output_ids"])] == case["output_ids"]
    del llm


def test_tensor_parallel_2_greedy_equals_one_process_qwen3_tiny(qwen3, packaged_worker_binary):
    cases = load_json("qwen3-tiny", "expected.json")["cases"]
    llm = qwen3_llm(tensor_parallel_size=2, num_threads=1, distributed_executor_backend="mp")
    tp2 = greedy_ids(llm, cases, 64)
    assert tp2 == greedy_ids(qwen3, cases, 64)
    assert tp2 == [c["output_ids"] for c in cases]


def test_a_missing_worker_binary_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("LMRUN_BIN", str(tmp_path / "no-lmrun"))
    with pytest.raises(FileNotFoundError, match="LMRUN_BIN"):
        stories_llm(tensor_parallel_size=2)


def test_tensor_parallel_shape_errors_are_value_errors(packaged_worker_binary):
    # stories260k has 8 attention heads: 3 ranks do not divide them.
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        stories_llm(tensor_parallel_size=3)


def first_step_logprobs(llm, prompts):
    """Each prompt's greedy first token and its top-5 log-probabilities."""
    params = lmrun.SamplingParams(max_tokens=1, logprobs=5, **GREEDY)
    outputs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
    return [o.outputs[0].logprobs[0] for o in outputs]


@pytest.mark.parametrize("options", [dict(quantization="int8"), dict(kv_cache_dtype="int8"),
                                     dict(kv_cache_dtype="fp8_e4m3"),
                                     dict(quantization="int8", kv_cache_dtype="int8", unquantized_embeddings=True)])
def test_quantized_stories260k_stays_close_to_float(stories, options):
    cases = load_json("stories260k", "expected.json")["cases"]
    # Prompts with some context, so that the KV cache dtype matters: each case's prompt and the
    # first 16 golden tokens.
    prompts = [c["prompt_ids"] + c["output_ids"][:16] for c in cases]
    llm = stories_llm(**options)
    reference = first_step_logprobs(stories, prompts)
    quantized = first_step_logprobs(llm, prompts)
    differences = []
    for want, got in zip(reference, quantized):
        [(token, want_logprob)] = [(t, lp.logprob) for t, lp in want.items() if lp.rank == 1]
        # The float model's choice stays among the quantized model's 5 most likely, with a
        # log-probability within 0.25 (measured on this data: at most 0.08 apart, and still
        # the most likely token).
        assert token in got, (options, token, got)
        differences.append(got[token].logprob - want_logprob)
        assert math.isclose(got[token].logprob, want_logprob, abs_tol=0.25), (options, want_logprob, got[token])
    # The option reached the engine: rounding weights or cached keys moves the numbers.
    assert any(abs(d) > 1e-4 for d in differences), (options, differences)
    # Greedy continuations agree for their first tokens on most prompts (a near tie may flip).
    ours = greedy_ids(llm, cases, 8)
    theirs = greedy_ids(stories, cases, 8)
    assert sum(a[:4] == b[:4] for a, b in zip(ours, theirs)) >= len(cases) - 1, (ours, theirs)


@pytest.mark.parametrize("option, value, message", [
    ("tensor_parallel_size", 0, "tensor_parallel_size"),
    ("tensor_parallel_size", 1.5, "tensor_parallel_size"),
    ("quantization", "awq", "quantization"),
    ("quantization", "fp8", "quantization"),
    ("kv_cache_dtype", "fp8_e5m2", "kv_cache_dtype"),
    ("kv_cache_dtype", "int4", "kv_cache_dtype"),
    ("distributed_executor_backend", "ray", "distributed_executor_backend"),
    ("distributed_executor_backend", "mpi", "mpirun"),
    ("unquantized_embeddings", True, "quantization='int8'"),
    ("packed_cache", 1, "packed_cache"),
    ("packed_cache", "", "packed_cache"),
])
def test_bad_engine_option_raises_value_error_naming_it(option, value, message):
    with pytest.raises(ValueError, match=message):
        stories_llm(**{option: value})


def packed_files(directory):
    return sorted(p.name for p in directory.glob("*.lmpack"))


def test_packed_cache_defaults_to_lmruns_directory_and_false_turns_it_off(stories, tmp_path, monkeypatch):
    cases = load_json("stories260k", "expected.json")["cases"]
    monkeypatch.setenv("LMRUN_CACHE_DIR", str(tmp_path / "default"))
    llm = stories_llm()
    assert greedy_ids(llm, cases, 16) == greedy_ids(stories, cases, 16)
    del llm  # the file is complete once the engine is gone
    assert len(packed_files(tmp_path / "default" / "packed")) == 1
    again = stories_llm()  # maps the file: the same tokens
    assert greedy_ids(again, cases, 16) == greedy_ids(stories, cases, 16)
    del again

    monkeypatch.setenv("LMRUN_CACHE_DIR", str(tmp_path / "off"))
    off = stories_llm(packed_cache=False)
    assert greedy_ids(off, cases, 4) == greedy_ids(stories, cases, 4)
    del off
    assert not (tmp_path / "off").exists()

    own = stories_llm(packed_cache=tmp_path / "own")
    del own
    assert len(packed_files(tmp_path / "own")) == 1


def test_uni_backend_with_several_ranks_is_a_value_error():
    with pytest.raises(ValueError, match="'uni'"):
        stories_llm(tensor_parallel_size=2, distributed_executor_backend="uni")
