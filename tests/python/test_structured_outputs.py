"""Structured outputs the vLLM way: SamplingParams(structured_outputs=StructuredOutputsParams(...))
and the older guided_decoding=GuidedDecodingParams(...), constraining a random-weight model
(qwen3-tiny, whose free output is noise) to a JSON Schema, a regex, a choice or a grammar."""

import json
import re

import pytest

import lmrun
from lmrun import GuidedDecodingParams, SamplingParams, StructuredOutputsParams

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
    "additionalProperties": False,
}


def constrained(llm, constraint, seeds=range(4), **kwargs):
    params = [SamplingParams(temperature=1.0, seed=seed, max_tokens=200, **{**{"structured_outputs": constraint},
                                                                            **kwargs}) for seed in seeds]
    outputs = llm.generate(["Answer in JSON:"] * len(params), params, use_tqdm=False)
    return [o.outputs[0] for o in outputs]


def test_json_schema_output_is_valid_json_matching_it(qwen3):
    for completion in constrained(qwen3, StructuredOutputsParams(json=SCHEMA)):
        assert completion.finish_reason == "stop", completion.text
        value = json.loads(completion.text)
        assert set(value) == {"answer", "sure"}
        assert value["answer"] in ("yes", "no") and isinstance(value["sure"], bool)


def test_unconstrained_output_of_this_model_is_not_json(qwen3):
    # What makes the test above meaningful: without the constraint the same requests are noise.
    params = [SamplingParams(temperature=1.0, seed=seed, max_tokens=30) for seed in range(4)]
    for output in qwen3.generate(["Answer in JSON:"] * 4, params, use_tqdm=False):
        with pytest.raises(ValueError):
            json.loads(output.outputs[0].text)


def test_guided_decoding_is_the_same_option(qwen3):
    completion, = constrained(qwen3, None, seeds=[1], guided_decoding=GuidedDecodingParams(json=json.dumps(SCHEMA)))
    assert json.loads(completion.text)["answer"] in ("yes", "no")


def test_regex_choice_grammar_and_json_object(qwen3):
    for completion in constrained(qwen3, StructuredOutputsParams(regex=r"[0-9]{3}-[a-c]{2}")):
        assert re.fullmatch(r"[0-9]{3}-[a-c]{2}", completion.text), completion.text
    for completion in constrained(qwen3, StructuredOutputsParams(choice=["red", "green", "blue"])):
        assert completion.text in ("red", "green", "blue")
    grammar = 'root ::= "(" digit ("+" digit)* ")"\ndigit ::= [0-9]'
    for completion in constrained(qwen3, StructuredOutputsParams(grammar=grammar), seeds=[0, 1]):
        assert re.fullmatch(r"\(\d(\+\d)*\)", completion.text) or completion.finish_reason == "length", completion.text
    for completion in constrained(qwen3, StructuredOutputsParams(json_object=True), seeds=[0, 1]):
        if completion.finish_reason == "stop":
            assert isinstance(json.loads(completion.text), dict)
        else:  # an object still open at max_tokens: its prefix is an object's
            assert completion.text.lstrip().startswith("{")


@pytest.mark.parametrize("kwargs, message", [
    (dict(), "exactly one"),
    (dict(json=SCHEMA, regex="a"), "exactly one"),
    (dict(json="{not json"), "not valid JSON"),
    (dict(json=[1]), "JSON Schema"),
    (dict(regex=""), "regex"),
    (dict(choice="red"), "choice"),
    (dict(choice=[]), "exactly one|choice"),
    (dict(grammar=3), "grammar"),
    (dict(structural_tag="x"), "structural_tag"),
])
def test_bad_constraint_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StructuredOutputsParams(**kwargs)


def test_sampling_params_checks_the_constraint_type():
    with pytest.raises(ValueError, match="structured_outputs"):
        SamplingParams(structured_outputs={"json": SCHEMA})
    with pytest.raises(ValueError, match="only one"):
        SamplingParams(structured_outputs=StructuredOutputsParams(regex="a"),
                       guided_decoding=GuidedDecodingParams(regex="b"))


def test_a_schema_the_engine_cannot_compile_is_a_value_error_at_generate(qwen3):
    params = SamplingParams(structured_outputs=StructuredOutputsParams(regex="(unclosed"))
    with pytest.raises(ValueError, match="prompt 0"):
        qwen3.generate(["x"], params, use_tqdm=False)
    assert not qwen3.llm_engine.has_unfinished_requests()


def test_structured_outputs_is_kept_by_clone_and_shown():
    params = SamplingParams(structured_outputs=StructuredOutputsParams(choice=["a", "b"]))
    assert params.clone().structured_outputs == params.structured_outputs
    assert params.guided_decoding is params.structured_outputs
    assert "choice=['a', 'b']" in repr(params)
    assert lmrun.StructuredOutputsParams is StructuredOutputsParams
