"""Tool metrics from a step's episodes (the same names on every engine)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rlvr.episodes.episode import Episode


def tool_metrics(episodes: Sequence[Episode]) -> dict[str, Any]:
    """``tools/calls_per_episode``, ``episodes/turns`` (assistant turns per episode) and, per tool,
    ``tools/<name>/calls``, ``/failures`` (calls that recorded an event, whoever's fault) and
    ``/latency_s`` (mean over the calls that ran)."""
    if not episodes:
        return {}
    calls: dict[str, int] = defaultdict(int)
    failures: dict[str, int] = defaultdict(int)
    latency: dict[str, list[float]] = defaultdict(list)
    for ep in episodes:
        for call in ep.calls():
            calls[call.name] += 1
        for e in ep.events:
            if e.tool:
                failures[e.tool] += 1
        for before, t in zip(ep.turns, ep.turns[1:]):  # a tool turn follows the call it answers
            if t.role == "tool" and before.call is not None and t.latency_s:
                latency[before.call.name].append(t.latency_s)
    turns = sum(t.role == "assistant" for ep in episodes for t in ep.turns)
    m: dict[str, Any] = {
        "tools/calls_per_episode": sum(calls.values()) / len(episodes),
        "episodes/turns": turns / len(episodes),
    }
    for name in sorted(calls):
        m[f"tools/{name}/calls"] = calls[name]
        m[f"tools/{name}/failures"] = failures[name]
        m[f"tools/{name}/latency_s"] = sum(latency[name]) / len(latency[name]) if latency[name] else None
    return m
