"""The package behaves like a native Python library: the GIL is released while the engine runs,
Ctrl-C interrupts generate() and leaves the LLM usable, `del llm` gives the memory back,
and the step-by-step engine streams deltas that add up to generate()'s result."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from conftest import load_json, stories_llm, data_path

import lmrun


def long_batch():
    prompts = [{"prompt_token_ids": [1, 403 + i]} for i in range(32)]
    return prompts, lmrun.SamplingParams(temperature=0.7, seed=3, max_tokens=480, ignore_eos=True)


def test_a_python_thread_progresses_while_generate_runs(stories):
    counter = [0]
    stop = threading.Event()
    started = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1
            started.set()

    thread = threading.Thread(target=count)
    thread.start()
    started.wait()
    # 48 tokens each, 192 engine steps: every step takes the GIL back to check for Ctrl-C and
    # waits out the counting thread's switch interval (5 ms), so 480 tokens took 15 s here.
    prompts, _ = long_batch()
    params = lmrun.SamplingParams(temperature=0.7, seed=3, max_tokens=48, ignore_eos=True)
    before = counter[0]
    outputs = stories.generate(prompts, params, use_tqdm=False)
    during = counter[0] - before
    stop.set()
    thread.join()
    assert sum(len(o.outputs[0].token_ids) for o in outputs) == 32 * 48
    # Without the GIL released, the counting thread would be frozen for the whole call.
    assert during > 10000, during


def test_ctrl_c_raises_keyboard_interrupt_and_the_llm_stays_usable():
    llm = stories_llm()
    prompts, params = long_batch()
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.perf_counter()
    interrupted = False
    try:
        llm.generate(prompts * 8, params, use_tqdm=False)
    except KeyboardInterrupt:
        interrupted = True
    elapsed = time.perf_counter() - start
    timer.join()
    assert interrupted, f"generate ran to completion in {elapsed:.1f} s without seeing Ctrl-C"
    assert not llm.llm_engine.has_unfinished_requests()
    case = load_json("stories260k", "expected.json")["cases"][2]
    [output] = llm.generate(case["prompt_text"], lmrun.SamplingParams(temperature=0, max_tokens=case["max_new_tokens"]),
                            use_tqdm=False)
    assert output.outputs[0].token_ids == case["output_ids"]


RSS_SCRIPT = textwrap.dedent("""
    import gc, sys
    import lmrun

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    before = rss_mb()
    llm = lmrun.LLM(sys.argv[1], tokenizer=sys.argv[2], dtype="float32", kv_cache_memory=0.25,
                    max_model_len=1024)
    llm.generate([{"prompt_token_ids": list(range(100, 400))}] * 4,
                 lmrun.SamplingParams(temperature=0, max_tokens=64, ignore_eos=True), use_tqdm=False)
    loaded = rss_mb()
    del llm
    gc.collect()
    print(before, loaded, rss_mb())
""")


def test_del_llm_returns_the_memory():
    result = subprocess.run([sys.executable, "-c", RSS_SCRIPT, data_path("qwen3-tiny"), data_path("qwen3-tokenizer")],
                            capture_output=True, text=True, check=True)
    before, loaded, after = map(float, result.stdout.split())
    assert loaded - before > 100, f"the model should take memory: {before:.0f} -> {loaded:.0f} MB"
    assert after - before < 50, f"RSS {before:.0f} MB before, {loaded:.0f} loaded, {after:.0f} after del"


def test_step_api_streams_deltas_that_add_up_to_generate(stories):
    engine = stories.llm_engine
    greedy = dict(temperature=0, max_tokens=30)
    engine.add_request("cumulative", "Once upon a time", lmrun.SamplingParams(**greedy))
    engine.add_request("delta", "Once upon a time",
                       lmrun.SamplingParams(output_kind=lmrun.RequestOutputKind.DELTA, **greedy))
    engine.add_request("final", {"prompt_token_ids": [1, 403]},
                       lmrun.SamplingParams(output_kind=lmrun.RequestOutputKind.FINAL_ONLY, **greedy))
    seen = {"cumulative": [], "delta": [], "final": []}
    steps = 0
    while engine.has_unfinished_requests():
        for output in engine.step():
            seen[output.request_id].append(output)
        steps += 1
        assert steps < 1000
    [expected] = stories.generate("Once upon a time", lmrun.SamplingParams(**greedy), use_tqdm=False)
    ids, text = expected.outputs[0].token_ids, expected.outputs[0].text
    assert len(seen["cumulative"]) > 3 and seen["cumulative"][-1].finished
    assert seen["cumulative"][-1].outputs[0].token_ids == ids
    assert seen["cumulative"][-1].outputs[0].text == text
    assert seen["cumulative"][1].outputs[0].token_ids == ids[: len(seen["cumulative"][1].outputs[0].token_ids)]
    deltas = seen["delta"]
    assert len(deltas) > 3 and deltas[-1].finished and not deltas[0].finished
    assert sum((d.outputs[0].token_ids for d in deltas), []) == ids
    assert "".join(d.outputs[0].text for d in deltas) == text
    assert all(d.prompt_token_ids == expected.prompt_token_ids for d in deltas)
    assert len(seen["final"]) == 1 and seen["final"][0].finished
    assert seen["final"][0].outputs[0].finish_reason == "length"


def test_step_api_abort_frees_the_request(stories):
    engine = stories.llm_engine
    engine.add_request("to-abort", "Once upon a time", lmrun.SamplingParams(max_tokens=200))
    engine.step()
    assert engine.has_unfinished_requests()
    engine.abort_request("to-abort")
    assert not engine.has_unfinished_requests()
    assert all(o.request_id != "to-abort" for o in engine.step())
    try:
        engine.add_request("dup", "a", lmrun.SamplingParams())
        import pytest

        with pytest.raises(ValueError, match="dup"):
            engine.add_request("dup", "a", lmrun.SamplingParams())
    finally:
        engine.abort_request("dup")


def test_help_shows_docstrings():
    assert "vLLM" in lmrun.LLM.__doc__
    assert "Raises" in lmrun.LLM.generate.__doc__
    assert "temperature" in lmrun.SamplingParams.__doc__
