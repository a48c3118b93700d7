"""LLM.generate's behaviour beyond greedy goldens: seeded sampling, n > 1, stop strings and
tokens, logprobs equal to the C++ API's (through `lmrun generate --json`), prompt forms and
errors."""

import json
import math
import subprocess

import pytest

from conftest import LMRUN_BIN, data_path

import lmrun


def sampled(temperature=1.0, **kwargs):
    return lmrun.SamplingParams(temperature=temperature, max_tokens=kwargs.pop("max_tokens", 40), **kwargs)


def test_seeded_sampling_is_reproducible_across_calls(stories):
    prompts = ["Once upon a time", "The cat sat on the mat."]
    first = stories.generate(prompts, sampled(seed=1234), use_tqdm=False)
    again = stories.generate(prompts, sampled(seed=1234), use_tqdm=False)
    other = stories.generate(prompts, sampled(seed=99), use_tqdm=False)
    assert [o.outputs[0].token_ids for o in first] == [o.outputs[0].token_ids for o in again]
    assert [o.outputs[0].text for o in first] == [o.outputs[0].text for o in again]
    assert [o.outputs[0].token_ids for o in first] != [o.outputs[0].token_ids for o in other]


def test_n_completions_per_prompt(stories):
    [output] = stories.generate("Once upon a time", sampled(n=4, seed=5), use_tqdm=False)
    assert [c.index for c in output.outputs] == [0, 1, 2, 3]
    token_lists = [tuple(c.token_ids) for c in output.outputs]
    assert len(set(token_lists)) > 1, "sampled completions should differ"
    assert all(len(ids) == 40 or c.finish_reason == "stop" for ids, c in zip(token_lists, output.outputs))
    [again] = stories.generate("Once upon a time", sampled(n=4, seed=5), use_tqdm=False)
    assert [tuple(c.token_ids) for c in again.outputs] == token_lists


def test_stop_string_ends_the_text_before_it(stories):
    greedy = lmrun.SamplingParams(temperature=0, max_tokens=100)
    [full] = stories.generate("Once upon a time", greedy, use_tqdm=False)
    text = full.outputs[0].text
    assert "Lily" in text
    [stopped] = stories.generate("Once upon a time", lmrun.SamplingParams(temperature=0, max_tokens=100,
                                                                         stop=["Lily", "zzz"]), use_tqdm=False)
    completion = stopped.outputs[0]
    assert completion.text == text[: text.index("Lily")]
    assert completion.finish_reason == "stop"
    assert completion.stop_reason == "Lily"


def test_stop_token_id_is_the_stop_reason(stories):
    [full] = stories.generate("Once upon a time", lmrun.SamplingParams(temperature=0, max_tokens=20),
                              use_tqdm=False)
    ids = full.outputs[0].token_ids
    stop_id = ids[5]
    [stopped] = stories.generate("Once upon a time",
                                 lmrun.SamplingParams(temperature=0, max_tokens=20, stop_token_ids=[stop_id]),
                                 use_tqdm=False)
    completion = stopped.outputs[0]
    assert completion.finish_reason == "stop"
    assert completion.stop_reason == stop_id
    assert completion.token_ids[-1] == stop_id
    assert completion.token_ids == ids[: ids.index(stop_id) + 1]


def test_logprobs_equal_the_cpp_apis():
    prompt, seed, top = "Once upon a time", 7, 3
    command = [str(LMRUN_BIN), "generate", "--model", data_path("stories260k"), "--prompt", prompt,
               "--max-tokens", "24", "--temperature", "0.8", "--seed", str(seed), "--logprobs", str(top),
               "--json", "--no-progress", "--threads", "1", "--kv-cache-memory", "0.03"]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    record = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))

    llm = lmrun.LLM(data_path("stories260k"), num_threads=1, kv_cache_memory=0.03)
    [output] = llm.generate(prompt, lmrun.SamplingParams(temperature=0.8, max_tokens=24, seed=seed, logprobs=top),
                            use_tqdm=False)
    completion = output.outputs[0]
    assert completion.token_ids == record["token_ids"]
    assert completion.text == record["text"]
    assert len(completion.logprobs) == len(record["logprobs"]) == 24
    total = 0.0
    for entry, expected in zip(completion.logprobs, record["logprobs"]):
        sampled_id = expected["token_id"]
        assert math.isclose(entry[sampled_id].logprob, expected["logprob"], abs_tol=1e-6)
        total += expected["logprob"]
        for rank, (token_id, logprob) in enumerate(expected["top"], start=1):
            assert entry[token_id].rank == rank
            assert math.isclose(entry[token_id].logprob, logprob, abs_tol=1e-6)
        assert entry[sampled_id].decoded_token == llm.get_tokenizer().decode([sampled_id], skip_special_tokens=False)
    assert math.isclose(completion.cumulative_logprob, total, abs_tol=1e-4)


def test_without_logprobs_there_are_none(stories):
    [output] = stories.generate("Once", lmrun.SamplingParams(temperature=0, max_tokens=3), use_tqdm=False)
    assert output.outputs[0].logprobs is None and output.outputs[0].cumulative_logprob is None


def test_prompt_forms_and_one_params_per_prompt(stories):
    greedy = lmrun.SamplingParams(temperature=0, max_tokens=6)
    ids = stories.get_tokenizer().encode("Once upon a time")
    outputs = stories.generate(["Once upon a time", {"prompt": "Once upon a time"}, {"prompt_token_ids": ids}, ids],
                               [greedy, greedy, greedy, lmrun.SamplingParams(temperature=0, max_tokens=3)],
                               use_tqdm=False)
    assert [o.prompt for o in outputs] == ["Once upon a time", "Once upon a time", None, None]
    assert len({tuple(o.outputs[0].token_ids) for o in outputs[:3]}) == 1
    assert outputs[3].outputs[0].token_ids == outputs[0].outputs[0].token_ids[:3]
    assert stories.generate([], greedy, use_tqdm=False) == []
    [one] = stories.generate("Once upon a time", greedy)  # with the progress bar
    assert one.outputs[0].token_ids == outputs[0].outputs[0].token_ids


def test_bad_input_raises_value_error_and_queues_nothing(stories):
    greedy = lmrun.SamplingParams(temperature=0, max_tokens=4)
    with pytest.raises(ValueError, match="9999"):
        stories.generate([{"prompt_token_ids": [1, 2]}, {"prompt_token_ids": [1, 9999]}], greedy, use_tqdm=False)
    with pytest.raises(ValueError, match="maximum context length"):
        stories.generate({"prompt_token_ids": [1] * 600}, greedy, use_tqdm=False)
    with pytest.raises(ValueError, match="sampling_params"):
        stories.generate(["a", "b"], [greedy], use_tqdm=False)
    with pytest.raises(ValueError, match="prompt_token_ids"):
        stories.generate({"prompt_token_ids": []}, greedy, use_tqdm=False)
    with pytest.raises(ValueError):
        stories.generate([1, 2, 3], greedy, use_tqdm=False)
    assert not stories.llm_engine.has_unfinished_requests()
    [ok] = stories.generate("Once", greedy, use_tqdm=False)
    assert len(ok.outputs[0].token_ids) == 4


def test_model_loading_errors_name_the_file(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        lmrun.LLM(str(missing))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(OSError, match="config.json"):
        lmrun.LLM(str(broken))
    with pytest.raises(ValueError, match="dtype"):
        lmrun.LLM(data_path("stories260k"), dtype="float8")
    with pytest.raises(TypeError, match="no_such_option"):
        lmrun.LLM(data_path("stories260k"), no_such_option=1)


def test_max_tokens_none_runs_to_the_context_end(stories):
    [output] = stories.generate({"prompt_token_ids": [1]},
                                lmrun.SamplingParams(temperature=0, max_tokens=None, ignore_eos=True),
                                use_tqdm=False)
    assert len(output.outputs[0].token_ids) == 511
    assert output.outputs[0].finish_reason == "length"
