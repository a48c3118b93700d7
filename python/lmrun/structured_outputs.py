"""StructuredOutputsParams: vLLM's constraint on what a completion may be (vLLM >= 0.10), and
GuidedDecodingParams, its older name.

    from lmrun import LLM, SamplingParams, StructuredOutputsParams
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    params = SamplingParams(temperature=0, max_tokens=64, structured_outputs=StructuredOutputsParams(json=schema))

Exactly one of ``json`` (a JSON Schema: a dict, or its JSON text), ``regex``, ``choice`` (a list
of strings), ``grammar`` (EBNF) or ``json_object=True`` (any JSON object). The engine compiles it
for the model's vocabulary (src/structured) and masks, at every step, the tokens that would leave
the constraint; a schema or grammar it cannot compile is a ``ValueError`` from ``generate``.
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, List, Optional, Sequence, Union

# vLLM options that only tune whitespace or choose a backend: accepted, no effect here (the
# output is never less constrained for them).
_TUNING_OPTIONS = ("backend", "disable_fallback", "disable_any_whitespace", "disable_additional_properties",
                   "whitespace_pattern")


class StructuredOutputsParams:
    """One structured-output constraint, with vLLM's field names.

    Args:
        json: a JSON Schema (dict, or JSON text) the output must match.
        regex: a regular expression the whole output must match.
        choice: the output is exactly one of these strings.
        grammar: an EBNF grammar (its ``root`` rule) the output must match.
        json_object: True: the output is any JSON object.
        backend, disable_fallback, disable_any_whitespace, disable_additional_properties,
        whitespace_pattern: vLLM tuning options, accepted and ignored.

    Raises:
        ValueError: no constraint, more than one, or one of the wrong type.
    """

    def __init__(
        self,
        json: Optional[Union[str, Dict[str, Any], bool]] = None,
        regex: Optional[str] = None,
        choice: Optional[Sequence[str]] = None,
        grammar: Optional[str] = None,
        json_object: Optional[bool] = None,
        backend: Optional[str] = None,
        disable_fallback: bool = False,
        disable_any_whitespace: bool = False,
        disable_additional_properties: bool = False,
        whitespace_pattern: Optional[str] = None,
        structural_tag: Optional[str] = None,
    ) -> None:
        if structural_tag is not None:
            raise ValueError("structured_outputs.structural_tag is not supported (json, regex, choice, grammar, "
                             "json_object)")
        given = [name for name, value in (("json", json), ("regex", regex), ("choice", choice),
                                          ("grammar", grammar), ("json_object", json_object or None))
                 if value is not None]
        if len(given) != 1:
            raise ValueError("structured_outputs must set exactly one of json, regex, choice, grammar, json_object"
                             f"{' (got ' + ', '.join(given) + ')' if given else ''}")
        self.json = _schema_text(json) if json is not None else None
        self.regex = _non_empty_string("regex", regex) if regex is not None else None
        self.choice = _choices(choice) if choice is not None else None
        self.grammar = _non_empty_string("grammar", grammar) if grammar is not None else None
        if json_object is not None and not isinstance(json_object, bool):
            raise ValueError(f"structured_outputs.json_object must be True or False, got {json_object!r}")
        self.json_object = bool(json_object)
        self.backend = backend
        self.disable_fallback = disable_fallback
        self.disable_any_whitespace = disable_any_whitespace
        self.disable_additional_properties = disable_additional_properties
        self.whitespace_pattern = whitespace_pattern

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructuredOutputsParams) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items()
                           if value not in (None, False) and name not in _TUNING_OPTIONS)
        return f"{type(self).__name__}({fields})"


class GuidedDecodingParams(StructuredOutputsParams):
    """vLLM < 0.10's name for StructuredOutputsParams (``SamplingParams(guided_decoding=...)``)."""


def _schema_text(schema: Union[str, Dict[str, Any], bool]) -> str:
    if isinstance(schema, (dict, bool)):
        return _json.dumps(schema)
    if isinstance(schema, str):
        try:
            parsed = _json.loads(schema)
        except ValueError as error:
            raise ValueError(f"structured_outputs.json is not valid JSON: {error}") from None
        if isinstance(parsed, (dict, bool)):
            return schema
    raise ValueError(f"structured_outputs.json must be a JSON Schema (a dict or its JSON text), got {schema!r}")


def _non_empty_string(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"structured_outputs.{name} must be a non-empty string, got {value!r}")
    return value


def _choices(value: Any) -> List[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value \
            or not all(isinstance(item, str) for item in value):
        raise ValueError(f"structured_outputs.choice must be a non-empty list of strings, got {value!r}")
    return list(value)
