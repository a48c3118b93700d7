"""lmrun's counterpart of nano-vLLM's example.py: two chat prompts through the model's chat
template, sampled at temperature 0.6.

    python examples/example.py --model ~/huggingface/Qwen3-0.6B/
    python examples/example.py --model ../shared/testdata/qwen3-tiny --tokenizer ../shared/testdata/qwen3-tokenizer
"""

import argparse
import os

from lmrun import LLM, SamplingParams


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=os.path.expanduser("~/huggingface/Qwen3-0.6B/"))
    parser.add_argument("--tokenizer", default=None, help="folder with tokenizer.json (default: --model)")
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()

    llm = LLM(args.model, tokenizer=args.tokenizer)
    tokenizer = llm.get_tokenizer()
    sampling_params = SamplingParams(temperature=0.6, max_tokens=args.max_tokens)
    prompts = ["introduce yourself", "list all prime numbers within 100"]
    prompts = [
        tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                      add_generation_prompt=True)
        for prompt in prompts
    ]
    outputs = llm.generate(prompts, sampling_params)
    for prompt, output in zip(prompts, outputs):
        print("\n")
        print(f"Prompt: {prompt!r}")
        print(f"Completion: {output.outputs[0].text!r}")


if __name__ == "__main__":
    main()
