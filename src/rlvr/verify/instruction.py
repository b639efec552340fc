"""``verify_instruction``: does the answer meet its format constraints (JSON, schema, regex, length)?

The gold is a constraint set, a dict or the same as a JSON string::

    {"json": true, "schema": {"type": "object", "required": ["name"]},
     "regex": "^\\\\{", "max_words": 50, "contains": ["name"]}

=============== ================================================================
constraint      holds when
=============== ================================================================
``json``        a JSON value can be taken from the answer (fenced, bare, or embedded)
``schema``      that value validates against the JSON Schema (implies ``json``)
``regex``       each pattern is found in the answer (``re.search``; anchor for whole)
``not_regex``   no pattern is found
``contains``    each string occurs (case-insensitive)
``not_contains`` no string occurs (case-insensitive)
``min_words`` / ``max_words``  word count bounds (CJK characters count as words)
``min_chars`` / ``max_chars``  character count bounds
``max_lines``   at most this many non-empty lines
``lowercase`` / ``uppercase``  every cased letter is lower / upper case
=============== ================================================================

The answer is the ``<answer>`` block when there is one, else the completion minus
any ``<think>`` block. Statuses: ``no_answer`` (a format death) when the answer is
empty or JSON is required and none parses; ``correct`` when every constraint holds;
``wrong`` otherwise; ``bad_gold`` for an unknown constraint, a bad regex or an
invalid schema. Every constraint's outcome is in ``details["constraints"]``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema

from rlvr.types import Method, Status, Verdict
from rlvr.verify.tags import last_answer_block

#: Longest answer checked (regexes from the gold run on model text: keep them bounded).
MAX_ANSWER_CHARS = 20_000
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S)
_JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.S | re.I)
_WORD = re.compile(r"[\u4e00-\u9fff\u3040-\u30ff]|[^\s\u4e00-\u9fff\u3040-\u30ff]+")
_KNOWN = {
    "json",
    "schema",
    "regex",
    "not_regex",
    "contains",
    "not_contains",
    "min_words",
    "max_words",
    "min_chars",
    "max_chars",
    "max_lines",
    "lowercase",
    "uppercase",
}


def answer_text(completion: str) -> str:
    """The part of the completion the constraints apply to."""
    if (block := last_answer_block(completion)) is not None:
        return block.strip()
    return _THINK.sub("", completion).strip()


def extract_json(text: str) -> tuple[bool, Any]:
    """``(found, value)``: the last fenced JSON block, else the whole text, else the last embedded value."""
    for block in reversed(_JSON_FENCE.findall(text)):
        try:
            return True, json.loads(block)
        except json.JSONDecodeError:
            continue
    try:
        return True, json.loads(text)
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    found: tuple[bool, Any] = (False, None)
    i = 0
    while (i := _next_open(text, i)) >= 0:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        found, i = (True, value), end  # keep the last complete value
    return found


def _next_open(text: str, start: int) -> int:
    hits = [j for j in (text.find("{", start), text.find("[", start)) if j >= 0]
    return min(hits) if hits else -1


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def parse_constraints(gold: Any) -> dict[str, Any]:
    """The constraint set, checked (raises ``ValueError`` for anything the verifier cannot apply)."""
    if isinstance(gold, str):
        try:
            gold = json.loads(gold)
        except json.JSONDecodeError as e:
            raise ValueError(f"constraints are not valid JSON: {e}") from None
    if not isinstance(gold, dict) or not gold:
        raise ValueError("constraints must be a non-empty dict")
    if unknown := set(gold) - _KNOWN:
        raise ValueError(f"unknown constraint(s) {sorted(unknown)}; known: {sorted(_KNOWN)}")
    for key in ("regex", "not_regex"):
        for pat in _as_list(gold.get(key, [])):
            try:
                re.compile(pat)
            except (re.error, TypeError) as e:
                raise ValueError(f"{key} {pat!r}: {e}") from None
    if "schema" in gold:
        try:
            jsonschema.validators.validator_for(gold["schema"]).check_schema(gold["schema"])
        except jsonschema.SchemaError as e:
            raise ValueError(f"invalid JSON Schema: {e.message}") from None
    for key in ("min_words", "max_words", "min_chars", "max_chars", "max_lines"):
        if key in gold and not (isinstance(gold[key], int) and gold[key] >= 0):
            raise ValueError(f"{key} must be a non-negative integer, got {gold[key]!r}")
    return gold


def verify_instruction(completion: str, gold: Any, **_: Any) -> Verdict:
    """Check the completion's answer against every constraint in ``gold`` (see the module docstring)."""
    try:
        spec = parse_constraints(gold)
    except ValueError as e:
        return Verdict(Status.BAD_GOLD, method=Method.CONSTRAINT, reason=f"bad constraints: {e}")
    answer = answer_text(completion)[:MAX_ANSWER_CHARS]
    if not answer:
        return Verdict(Status.NO_ANSWER, method=Method.CONSTRAINT, reason="empty answer")
    results: list[dict[str, Any]] = []

    def check(name: str, ok: bool, why: str = "") -> None:
        results.append({"name": name, "ok": bool(ok), "reason": "" if ok else why})

    if spec.get("json") or "schema" in spec:
        found, value = extract_json(answer)
        if not found:
            return Verdict(
                Status.NO_ANSWER,
                extracted=answer[:500],
                method=Method.CONSTRAINT,
                reason="JSON required but none parses",
                details={"constraints": [], "passed": 0, "total": 0, "pass_fraction": 0.0},
            )
        check("json", True)
        if "schema" in spec:
            errors = sorted(
                jsonschema.validators.validator_for(spec["schema"])(spec["schema"]).iter_errors(value),
                key=lambda e: list(e.path),
            )
            path = "/".join(map(str, errors[0].path)) if errors else ""
            check("schema", not errors, f"{errors[0].message}" + (f" at /{path}" if path else "") if errors else "")
    for pat in _as_list(spec.get("regex", [])):
        check(f"regex {pat}", re.search(pat, answer) is not None, "pattern not found")
    for pat in _as_list(spec.get("not_regex", [])):
        check(f"not_regex {pat}", re.search(pat, answer) is None, "forbidden pattern found")
    low = answer.lower()
    for s in _as_list(spec.get("contains", [])):
        check(f"contains {s}", str(s).lower() in low, "missing")
    for s in _as_list(spec.get("not_contains", [])):
        check(f"not_contains {s}", str(s).lower() not in low, "present")
    words, chars = len(_WORD.findall(answer)), len(answer)
    lines = sum(1 for ln in answer.splitlines() if ln.strip())
    for key, n, cmp in (
        ("min_words", words, 1),
        ("max_words", words, -1),
        ("min_chars", chars, 1),
        ("max_chars", chars, -1),
        ("max_lines", lines, -1),
    ):
        if key in spec:
            bound = spec[key]
            check(key, n >= bound if cmp > 0 else n <= bound, f"{n} vs {key}={bound}")
    if spec.get("lowercase"):
        check("lowercase", answer == answer.lower(), "has upper-case letters")
    if spec.get("uppercase"):
        check("uppercase", answer == answer.upper(), "has lower-case letters")
    passed = sum(r["ok"] for r in results)
    failed = [r for r in results if not r["ok"]]
    details = {
        "constraints": results,
        "passed": passed,
        "total": len(results),
        "pass_fraction": passed / len(results) if results else 0.0,
    }
    if failed:
        reason = f"{len(failed)}/{len(results)} constraints failed: " + "; ".join(
            f"{r['name']}: {r['reason']}" for r in failed[:3]
        )
        return Verdict(Status.WRONG, extracted=answer[:500], method=Method.CONSTRAINT, reason=reason, details=details)
    return Verdict(
        Status.CORRECT,
        extracted=answer[:500],
        method=Method.CONSTRAINT,
        reason=f"all {len(results)} constraints hold",
        details=details,
    )
