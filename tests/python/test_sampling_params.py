"""SamplingParams: vLLM's defaults, and every bad field refused on construction with a
ValueError that names it."""

import math

import pytest

import lmrun


def test_defaults_are_vllms():
    params = lmrun.SamplingParams()
    assert (params.n, params.temperature, params.top_p, params.top_k, params.min_p) == (1, 1.0, 1.0, 0, 0.0)
    assert (params.max_tokens, params.min_tokens, params.seed, params.logprobs) == (16, 0, None, None)
    assert (params.stop, params.stop_token_ids, params.ignore_eos) == ([], [], False)
    assert (params.presence_penalty, params.frequency_penalty, params.repetition_penalty) == (0.0, 0.0, 1.0)
    assert params.skip_special_tokens is True
    assert lmrun.SamplingParams(stop="x").stop == ["x"]
    assert lmrun.SamplingParams(max_tokens=None).max_tokens is None


BAD_FIELDS = [
    ("n", 0), ("n", 129), ("n", "2"),
    ("temperature", -1.0), ("temperature", math.nan), ("temperature", "hot"),
    ("top_p", 0.0), ("top_p", 1.5),
    ("top_k", -2), ("top_k", 1.5),
    ("min_p", -0.1), ("min_p", 1.1),
    ("seed", -1), ("seed", "x"),
    ("stop", [""]), ("stop", [1]),
    ("stop_token_ids", [-1]), ("stop_token_ids", ["a"]),
    ("ignore_eos", "yes"),
    ("max_tokens", 0), ("max_tokens", -5),
    ("min_tokens", -1),
    ("logprobs", 21), ("logprobs", -1),
    ("presence_penalty", 2.5), ("frequency_penalty", -3.0),
    ("repetition_penalty", 0.0), ("repetition_penalty", math.inf),
    ("skip_special_tokens", 1),
    ("prompt_logprobs", 1), ("best_of", 4), ("include_stop_str_in_output", True), ("detokenize", False),
    ("output_kind", "delta"),
]


@pytest.mark.parametrize("field,value", BAD_FIELDS, ids=[f"{f}={v!r}" for f, v in BAD_FIELDS])
def test_bad_field_raises_value_error_naming_it(field, value):
    with pytest.raises(ValueError) as error:
        lmrun.SamplingParams(**{field: value})
    assert str(error.value).startswith(field), str(error.value)


def test_min_tokens_above_max_tokens_names_min_tokens():
    with pytest.raises(ValueError, match="^min_tokens"):
        lmrun.SamplingParams(max_tokens=4, min_tokens=5)


def test_unknown_field_is_a_type_error():
    with pytest.raises(TypeError):
        lmrun.SamplingParams(temprature=0.5)
