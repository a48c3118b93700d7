#!/usr/bin/env python3
"""Reference rendering of a chat template with jinja2, set up as Hugging Face
transformers' apply_chat_template does (the same set-up that produced
../shared/testdata/qwen3-tokenizer/chat_template_golden.json): a sandboxed
environment with trim_blocks and lstrip_blocks, tojson = json.dumps with
ensure_ascii=False, raise_exception.

Input: a JSON file {"template": str, "messages": [...], "kwargs": {...}} named on
the command line. Output: the rendered prompt on stdout, nothing else.
"""
import json
import sys

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def tojson(value, indent=None):
    return json.dumps(value, ensure_ascii=False, indent=indent)


def main():
    with open(sys.argv[1], encoding="utf-8") as file:
        request = json.load(file)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(request["template"])
    sys.stdout.write(template.render(messages=request["messages"], **request["kwargs"]))


if __name__ == "__main__":
    main()
