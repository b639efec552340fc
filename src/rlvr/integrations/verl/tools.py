"""rlvr's built-in tools as verl tools (``BaseTool`` subclasses for a tool YAML).

``examples/verl/rlvr_tools.yaml`` lists both::

    tools:
      - class_name: rlvr.integrations.verl.tools.CalculatorTool
        config: {type: native}
      - class_name: rlvr.integrations.verl.tools.PythonTool
        config: {type: native, timeout_s: 5}

The schema of each is taken from rlvr's tool (its type hints and docstring), so a YAML needs no
``tool_schema``. Their failures are owned as rlvr's episode model says: an expression the
calculator cannot read, and the policy's code that raises or loops, come back to the policy as
text; a sandbox that cannot start raises :class:`rlvr.episodes.tools.EnvCrash` (``env_crash``
under ``rlvr_tool_agent``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from rlvr.episodes.clock import timed
from rlvr.episodes.env import tool_schema
from rlvr.episodes.tools import Calculator
from rlvr.episodes.tools import PythonTool as _Python


class _RlvrTool(BaseTool):
    """One of rlvr's tools (``fn``: the bound method that is the tool) under verl's tool lifecycle."""

    def __init__(self, config: dict[str, Any], tool_schema_: OpenAIFunctionToolSchema | None, fn: Any) -> None:
        self.fn = fn
        schema = tool_schema_ or OpenAIFunctionToolSchema.model_validate(tool_schema(fn))
        super().__init__(config, schema)

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        # timed by the agent loop's call clock: the python tool's program (its policy_time) is not counted
        text = await asyncio.to_thread(lambda: timed(self.fn, **parameters))
        return ToolResponse(text=str(text)), 0.0, {}


class CalculatorTool(_RlvrTool):
    """rlvr's ``calculator`` (exact arithmetic; nothing evaluated but numbers)."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        super().__init__(config, tool_schema, Calculator().calculator)


class PythonTool(_RlvrTool):
    """rlvr's ``python`` (the policy's code in rlvr's code sandbox; ``config.timeout_s``)."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        tool = _Python()
        tool.timeout_s = float(config.get("timeout_s", tool.timeout_s))
        super().__init__(config, tool_schema, tool.python)
