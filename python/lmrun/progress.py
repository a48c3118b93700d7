"""The progress bar of LLM.generate(), like vLLM's: prompts done, input and output tokens/s.

tqdm draws it when it is importable; otherwise a plain one-line bar is written to stderr.
It is updated only when requests finish (from the engine's loop, between steps).
"""

from __future__ import annotations

import sys
import time

try:
    from tqdm.auto import tqdm as _tqdm
except ImportError:  # tqdm is optional
    _tqdm = None


class ProgressBar:
    """Counts finished prompts; ``update(done, prompt_tokens, generation_tokens)`` takes totals."""

    def __init__(self, total: int, description: str = "Processed prompts", use_tqdm: bool = True) -> None:
        self._total = total
        self._description = description
        self._start = time.perf_counter()
        self._done = 0
        self._prompt_tokens = 0
        self._generation_tokens = 0
        self._bar = None
        self._last_draw = 0.0
        self.uses_tqdm = use_tqdm and _tqdm is not None
        if self.uses_tqdm:
            self._bar = _tqdm(total=total, desc=description, dynamic_ncols=True,
                              postfix="est. speed input: 0.00 toks/s, output: 0.00 toks/s")

    def _speeds(self) -> str:
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        return (f"est. speed input: {self._prompt_tokens / elapsed:.2f} toks/s, "
                f"output: {self._generation_tokens / elapsed:.2f} toks/s")

    def update(self, done: int, prompt_tokens: int, generation_tokens: int) -> None:
        advanced = done - self._done
        self._done, self._prompt_tokens, self._generation_tokens = done, prompt_tokens, generation_tokens
        if self._bar is not None:
            self._bar.set_postfix_str(self._speeds(), refresh=False)
            self._bar.update(advanced)
            return
        now = time.perf_counter()
        if sys.stderr.isatty() and now - self._last_draw > 0.1:
            self._last_draw = now
            self._draw(final=False)

    def _draw(self, final: bool) -> None:
        fraction = self._done / self._total if self._total else 1.0
        width = 30
        filled = int(fraction * width)
        line = (f"{self._description}: {fraction * 100:3.0f}%|{'#' * filled}{' ' * (width - filled)}| "
                f"{self._done}/{self._total} [{time.perf_counter() - self._start:.1f}s, {self._speeds()}]")
        prefix = "\r" if sys.stderr.isatty() else ""
        sys.stderr.write(prefix + line + ("\n" if final else ""))
        sys.stderr.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            self._draw(final=True)
