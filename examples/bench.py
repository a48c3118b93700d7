"""lmrun's counterpart of nano-vLLM's bench.py: N random prompts of 100-1024 token ids, each
generating 100-1024 tokens with ignore_eos at temperature 0.6, all submitted at once; prints
the output throughput.

    build/make_random_model --out /tmp/qwen3-0.6b --preset qwen3-0.6b   # or lmrun bench --random
    python examples/bench.py --model /tmp/qwen3-0.6b --num-seqs 256

--workload lmrun-bench draws the same requests as `lmrun bench --offline N` (its mt19937_64
stream, lengths, token ids and per-request seeds) and uses its engine settings, so the two
throughputs can be compared: the difference is what the Python binding costs.
"""

import argparse
import random
import time

from lmrun import LLM, SamplingParams

_MASK64 = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64, so that Python draws the numbers the C++ benchmark draws."""

    def __init__(self, seed: int) -> None:
        self.state = [seed & _MASK64]
        for i in range(1, 312):
            previous = self.state[-1]
            self.state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i) & _MASK64)
        self.index = 312

    def _twist(self) -> None:
        state = self.state
        for i in range(312):
            x = (state[i] & 0xFFFFFFFF80000000) | (state[(i + 1) % 312] & 0x7FFFFFFF)
            state[i] = state[(i + 156) % 312] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
        self.index = 0

    def __call__(self) -> int:
        if self.index >= 312:
            self._twist()
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & _MASK64


def nano_vllm_workload(args):
    random.seed(0)
    prompts = [[random.randint(0, 10000) for _ in range(random.randint(args.min_input_len, args.max_input_len))]
               for _ in range(args.num_seqs)]
    params = [SamplingParams(temperature=0.6, ignore_eos=True,
                             max_tokens=random.randint(args.min_output_len, args.max_output_len))
              for _ in range(args.num_seqs)]
    return prompts, params


def lmrun_bench_workload(args, vocab_size):
    """The requests of src/cli/bench_offline.cpp (seed 0)."""
    rng = MT19937_64(0)

    def uniform(low, high):
        return low + rng() % (high - low + 1)

    prompts, params = [], []
    for i in range(args.num_seqs):
        length = uniform(args.min_input_len, args.max_input_len)
        prompts.append([rng() % vocab_size for _ in range(length)])
        params.append(SamplingParams(temperature=0.6, ignore_eos=True,
                                     max_tokens=uniform(args.min_output_len, args.max_output_len), seed=i))
    return prompts, params


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--num-seqs", type=int, default=256)
    parser.add_argument("--min-input-len", type=int, default=100)
    parser.add_argument("--max-input-len", type=int, default=1024)
    parser.add_argument("--min-output-len", type=int, default=100)
    parser.add_argument("--max-output-len", type=int, default=1024)
    parser.add_argument("--max-num-seqs", type=int, default=64)
    parser.add_argument("--kv-cache-memory", type=float, default=2.0, help="GiB")
    parser.add_argument("--workload", choices=["nano-vllm", "lmrun-bench"], default="nano-vllm")
    args = parser.parse_args()

    llm = LLM(args.model, dtype="bfloat16", max_num_seqs=args.max_num_seqs, max_num_batched_tokens=2048,
              max_model_len=args.max_input_len + args.max_output_len + 16, kv_cache_memory=args.kv_cache_memory)
    if args.workload == "lmrun-bench":
        prompts, params = lmrun_bench_workload(args, llm.vocab_size)
    else:
        prompts, params = nano_vllm_workload(args)
    prompts = [{"prompt_token_ids": ids} for ids in prompts]

    llm.generate([{"prompt_token_ids": [1, 2, 3]}], SamplingParams(), use_tqdm=False)  # warm-up
    start = time.time()
    llm.generate(prompts, params, use_tqdm=False)
    seconds = time.time() - start
    total_tokens = sum(p.max_tokens for p in params)
    print(f"Total: {total_tokens}tok, Time: {seconds:.2f}s, Throughput: {total_tokens / seconds:.2f}tok/s")


if __name__ == "__main__":
    main()
