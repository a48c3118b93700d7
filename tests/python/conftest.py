"""Shared fixtures of the Python package's tests: the test data folder (../shared/testdata,
or $LMRUN_TESTDATA), the lmrun binary ($LMRUN_BIN, default build/lmrun) and models loaded
once per module."""

import json
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = pathlib.Path(os.environ.get("LMRUN_TESTDATA", REPO.parent / "shared" / "testdata"))
LMRUN_BIN = pathlib.Path(os.environ.get("LMRUN_BIN", REPO / "build" / "lmrun"))


def data_path(*parts) -> str:
    path = TESTDATA.joinpath(*parts)
    assert path.exists(), f"missing test data {path} (set LMRUN_TESTDATA)"
    return str(path)


def load_json(*parts):
    with open(data_path(*parts), encoding="utf-8") as f:
        return json.load(f)


def stories_llm(**overrides):
    import lmrun

    options = dict(dtype="float32", max_model_len=512, block_size=16, kv_cache_memory=0.03, max_num_seqs=8,
                   max_num_batched_tokens=512)
    options.update(overrides)
    return lmrun.LLM(data_path("stories260k"), **options)


@pytest.fixture(scope="module")
def stories():
    return stories_llm()


@pytest.fixture(scope="module")
def qwen3():
    import lmrun

    return lmrun.LLM(data_path("qwen3-tiny"), tokenizer=data_path("qwen3-tokenizer"), dtype="float32",
                     max_model_len=1024, block_size=16, kv_cache_memory=0.1)
