"""Chat through the real Qwen3 template (qwen3-tokenizer's tokenizer_config.json): the rendered
prompts and ids equal the template goldens, and LLM.chat generates from exactly those ids."""

import pytest

from conftest import load_json

import lmrun


def golden_cases():
    return load_json("qwen3-tokenizer", "chat_template_golden.json")


def template_kwargs(case):
    kwargs = dict(case["kwargs"])
    add_generation_prompt = kwargs.pop("add_generation_prompt")
    return add_generation_prompt, kwargs


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: c["name"])
def test_apply_chat_template_matches_golden(qwen3, case):
    tokenizer = qwen3.get_tokenizer()
    add_generation_prompt, kwargs = template_kwargs(case)
    text = tokenizer.apply_chat_template(case["messages"], tokenize=False,
                                         add_generation_prompt=add_generation_prompt, **kwargs)
    assert text == case["rendered"]
    ids = tokenizer.apply_chat_template(case["messages"], add_generation_prompt=add_generation_prompt, **kwargs)
    assert ids == case["ids"]


def test_chat_generates_from_the_rendered_conversation(qwen3):
    cases = [c for c in golden_cases() if c["kwargs"].get("add_generation_prompt")][:3]
    params = lmrun.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    conversations, kwargs_list = [], []
    for case in cases:
        conversations.append(case["messages"])
        kwargs_list.append(template_kwargs(case)[1])
    # One call per kwargs set (chat_template_kwargs apply to the whole call).
    for case, kwargs in zip(cases, kwargs_list):
        [output] = qwen3.chat(case["messages"], params, use_tqdm=False, chat_template_kwargs=kwargs)
        assert output.prompt_token_ids == case["ids"], case["name"]
        [by_ids] = qwen3.generate({"prompt_token_ids": case["ids"]}, params, use_tqdm=False)
        assert output.outputs[0].token_ids == by_ids.outputs[0].token_ids
        assert len(output.outputs[0].token_ids) == 8


def test_chat_takes_a_list_of_conversations_and_a_custom_template(qwen3):
    first, second = golden_cases()[3], golden_cases()[0]  # user_only_gen, system_user_gen
    params = lmrun.SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)
    outputs = qwen3.chat([first["messages"], second["messages"]], params, use_tqdm=False)
    assert [o.prompt_token_ids for o in outputs] == [first["ids"], second["ids"]]
    template = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    [custom] = qwen3.chat(first["messages"], params, use_tqdm=False, chat_template=template)
    assert custom.prompt == "[user] " + first["messages"][0]["content"] + "\n"


def test_chat_template_errors_are_value_errors(qwen3):
    with pytest.raises(ValueError, match="messages"):
        qwen3.chat("not a conversation", use_tqdm=False)
    with pytest.raises(ValueError, match="chat_template"):
        qwen3.chat([{"role": "user", "content": "hi"}], use_tqdm=False, chat_template="{% for %}")
