"""The model goldens of ../shared/testdata through LLM.generate: stories260k from text and
from token ids (ids and text), qwen3-tiny from token ids."""

from conftest import load_json

import lmrun


def stories_params(case):
    # llama2.c's convention: BOS (1) ends a story; the other cases end at their golden length.
    return lmrun.SamplingParams(temperature=0, max_tokens=case["max_new_tokens"], stop_token_ids=[1],
                                ignore_eos=True)


def generated_ids(case, completion):
    """The completion's ids without the BOS that ended a story (a stop token is part of token_ids,
    as in vLLM; the goldens leave it out)."""
    if case["stopped_on_token"] is not None:
        assert completion.token_ids[-1] == case["stopped_on_token"]
        return completion.token_ids[:-1]
    return completion.token_ids


def test_stories260k_goldens_from_text(stories):
    cases = load_json("stories260k", "expected.json")["cases"]
    assert len(cases) == 7
    outputs = stories.generate([c["prompt_text"] for c in cases], [stories_params(c) for c in cases],
                               use_tqdm=False)
    assert [o.prompt for o in outputs] == [c["prompt_text"] for c in cases]
    for case, output in zip(cases, outputs):
        completion = output.outputs[0]
        assert output.prompt_token_ids == case["prompt_ids"], case["name"]
        assert generated_ids(case, completion) == case["output_ids"], case["name"]
        # Decoded in the context of the prompt, the continuation joins it as llama2.c printed it.
        assert case["prompt_text"] + completion.text == case["decoded_text_prompt_plus_output"], case["name"]
        expected_reason = "stop" if case["stopped_on_token"] is not None else "length"
        assert completion.finish_reason == expected_reason, case["name"]
        assert completion.stop_reason == (1 if expected_reason == "stop" else None), case["name"]


def test_stories260k_goldens_from_token_ids(stories):
    cases = load_json("stories260k", "expected.json")["cases"]
    outputs = stories.generate([{"prompt_token_ids": c["prompt_ids"]} for c in cases],
                               [stories_params(c) for c in cases], use_tqdm=False)
    for case, output in zip(cases, outputs):
        assert output.prompt is None
        assert output.prompt_token_ids == case["prompt_ids"]
        assert generated_ids(case, output.outputs[0]) == case["output_ids"], case["name"]


def test_stories260k_one_by_one_equals_batched(stories):
    cases = load_json("stories260k", "expected.json")["cases"]
    for case in cases[2:4]:
        [output] = stories.generate(case["prompt_text"], stories_params(case), use_tqdm=False)
        assert output.outputs[0].token_ids == case["output_ids"], case["name"]


def test_qwen3_tiny_goldens_from_token_ids(qwen3):
    cases = load_json("qwen3-tiny", "expected.json")["cases"]
    assert len(cases) == 7
    params = lmrun.SamplingParams(temperature=0, max_tokens=64, ignore_eos=True, skip_special_tokens=False)
    outputs = qwen3.generate([{"prompt_token_ids": c["prompt_ids"]} for c in cases], params, use_tqdm=False)
    for case, output in zip(cases, outputs):
        assert output.outputs[0].token_ids == case["output_ids"], case["name"]
        assert output.outputs[0].finish_reason == "length"


def test_qwen3_tiny_text_prompts_encode_as_the_goldens(qwen3):
    cases = load_json("qwen3-tiny", "expected.json")["cases"]
    tokenizer = qwen3.get_tokenizer()
    for case in cases:
        assert tokenizer.encode(case["prompt_text"], add_special_tokens=False) == case["prompt_ids"], case["name"]
    case = cases[1]  # short_en
    params = lmrun.SamplingParams(temperature=0, max_tokens=64, ignore_eos=True, skip_special_tokens=False)
    [output] = qwen3.generate(case["prompt_text"], params, use_tqdm=False)
    assert output.prompt_token_ids == case["prompt_ids"]
    assert output.outputs[0].token_ids == case["output_ids"]
    assert output.outputs[0].text == case["decoded_text_output_only"]
    assert tokenizer.decode(case["output_ids"], skip_special_tokens=False) == case["decoded_text_output_only"]
