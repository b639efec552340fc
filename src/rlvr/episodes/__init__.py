"""Episodes with tools: environments (with tools, or answering the policy's turns), the guard around
them, the turn loop, and the causes they record (engine-neutral; the failure step reads them like single-turn rollouts).

An environment's fault (``tool_error``, ``env_timeout``, ``env_crash``) leaves the baseline and the
loss and is redrawn; the policy's own (``malformed_tool_call``, ``unknown_tool``, ``bad_arguments``,
``turn_limit``, ``context_overflow``) stays in the gradient with its reward.
"""

from rlvr.episodes.clock import policy_time
from rlvr.episodes.env import (
    Environment,
    check_environment,
    environment_class,
    load_environment,
    responds,
    tool_schema,
    tools_of,
)
from rlvr.episodes.episode import ENVIRONMENT_FAULTS, POLICY_FAULTS, Episode, Event, ToolCall, Turn
from rlvr.episodes.guard import Faults, Guard, call_markup, find_call, result_markup
from rlvr.episodes.loop import Policy, run_episode
from rlvr.episodes.metrics import tool_metrics
from rlvr.episodes.tools import TOOLS, Calculator, EnvCrash, PythonTool, evaluate, toolbox
from rlvr.episodes.traces import calculator_trace, trace_of

__all__ = [
    "ENVIRONMENT_FAULTS",
    "POLICY_FAULTS",
    "TOOLS",
    "Calculator",
    "EnvCrash",
    "Environment",
    "Episode",
    "Event",
    "Faults",
    "Guard",
    "Policy",
    "PythonTool",
    "ToolCall",
    "Turn",
    "calculator_trace",
    "call_markup",
    "check_environment",
    "environment_class",
    "evaluate",
    "find_call",
    "load_environment",
    "policy_time",
    "responds",
    "result_markup",
    "run_episode",
    "tool_metrics",
    "tool_schema",
    "toolbox",
    "tools_of",
    "trace_of",
]
