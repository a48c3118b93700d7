"""lmrun: vLLM's offline Python API over lmrun's C++ inference engine.

    from lmrun import LLM, SamplingParams
    llm = LLM(model="path/to/hf-checkpoint")
    for output in llm.generate(["Once upon a time"], SamplingParams(temperature=0, max_tokens=32)):
        print(output.outputs[0].text)

Names and shapes follow vLLM (``LLM``, ``SamplingParams``, ``RequestOutput``,
``CompletionOutput``), so a vLLM script usually needs only its import changed.
"""

from .engine import LLMEngine
from .llm import LLM
from .outputs import CompletionOutput, Logprob, RequestMetrics, RequestOutput
from .sampling_params import RequestOutputKind, SamplingParams
from .structured_outputs import GuidedDecodingParams, StructuredOutputsParams
from .tokenizer import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "LLMEngine",
    "SamplingParams",
    "RequestOutputKind",
    "StructuredOutputsParams",
    "GuidedDecodingParams",
    "RequestOutput",
    "CompletionOutput",
    "RequestMetrics",
    "Logprob",
    "Tokenizer",
    "__version__",
]
