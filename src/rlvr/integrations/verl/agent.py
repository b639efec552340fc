"""verl's agent loop ``rlvr_tool_agent``: ``ToolAgentLoop`` with each episode's causes recorded where they happen.

verl 0.9's ``ToolAgentLoop`` answers every tool failure with the text ``"Error executing tool ..."``
and goes on; its metrics are timings. This subclass (registered with verl's agent-loop registry
when rlvr's plugin loads; ``actor_rollout_ref.rollout.agent.default_agent_loop: rlvr_tool_agent``)
changes three handlers and nothing else:

* ``_call_tool``: a name the row does not offer is the policy's ``unknown_tool``, arguments that are
  not JSON its ``malformed_tool_call``, arguments outside the tool's schema its ``bad_arguments``
  (the error goes back to it, the episode goes on). A call runs under ``rlvr.env.tool_timeout_s``,
  counted as rlvr's guard counts it (the environment's time: the python tool's program, which the
  tool bounds itself, is the policy's and not counted; its result says so and the episode goes on);
  a tool that raises is ``tool_error`` (``env_crash`` for :class:`rlvr.episodes.tools.EnvCrash`),
  one past its limit ``env_timeout``: the environment's. Such a call is tried again with a fresh
  tool instance (``create`` again) up to ``rlvr.env.retries`` times inside the episode (recovered
  faults are kept in the record, out of the causes); still failing, the episode ends as ``fault``.
* ``_handle_generating_state``: an episode stopped by ``max_assistant_turns`` / ``max_user_turns``
  with a call in its last turn is ``turn_limit``; a last turn that holds ``<tool_call>`` markup the
  parser could not read is ``malformed_tool_call`` (verl took it for the answer).
* ``_handle_processing_tools_state``: a tool result that leaves no room in ``response_length`` is
  ``context_overflow``.

With ``rlvr.env.conversation`` (an environment that answers the policy's turns: ``respond``, a
``verifiers`` ``MultiTurnEnv``), a turn without a call goes to the episode's environment
(:func:`rlvr.integrations.verl.environments.conversation_environment`) under rlvr's guard: its reply
is appended as verl appends a tool's (the chat template's text, out of the loss) and the policy takes
another turn; its word that the episode is over ends it; a reply that raises or stalls is the
environment's fault; a reply past ``max_assistant_turns`` is the policy's ``turn_limit`` and one that
leaves no room its ``context_overflow``.

When the episode ends on the policy's answer and its tools are an environment's
(:mod:`rlvr.integrations.verl.environments`), that environment judges the answer (a ``verifiers``
rubric; a reward function that raises is ``tool_error``) and the episode's environments are closed.

What happened travels in the output's ``extra_fields["rlvr_episode"]`` (events with cause, turn,
detail, tool and latency; recovered faults; calls; turns; finish), which verl hands to the reward
manager with the trajectory (``tool_extra_fields``): rlvr's ``rlvr`` reward manager turns it into the
row's cause (:func:`rlvr.integrations.verl.rows.score_row`), and rlvr's replay buffer and estimator
keep environment-fault rows out of the baseline and every loss token and redraw their group.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from verl.experimental.agent_loop.agent_loop import register
from verl.experimental.agent_loop.tool_agent_loop import AgentState, ToolAgentLoop
from verl.tools.function_tool import FunctionTool, normalize_function_tool_return
from verl.tools.schemas import ToolResponse

from rlvr.diagnostics.causes import Cause
from rlvr.episodes.clock import CALL_CLOCK, TEARDOWN_S, CallClock
from rlvr.episodes.episode import ENVIRONMENT_FAULTS
from rlvr.episodes.guard import CALL_END, Faults, Guard, bad_arguments, find_call
from rlvr.episodes.tools import EnvCrash
from rlvr.errors import ConfigError
from rlvr.integrations.verl import environments
from rlvr.integrations.verl.rows import EPISODE_KEY
from rlvr.integrations.verl.settings import settings_of


def _state(agent_data: Any) -> dict[str, Any]:
    """The episode's record, kept on verl's ``AgentData`` (its ``extra_fields`` stay verl's until the end)."""
    st = agent_data.__dict__.get("_rlvr")
    if st is None:
        st = {"events": [], "recovered": [], "tool_calls": 0, "calls_run": 0, "finish": "eos", "fault": False}
        agent_data.__dict__["_rlvr"] = st
    return st


@register("rlvr_tool_agent")
class RlvrToolAgentLoop(ToolAgentLoop):
    """``ToolAgentLoop`` + rlvr's causes (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        env = settings_of(self.config).env
        self.timeout_s, self.retries = env.tool_timeout_s, env.retries
        rates = {str(k): v for k, v in env.faults.items()}
        self.faults = Faults(rates, env.fault_seed) if rates else None
        self.conversation = env.conversation

    # ------------------------------------------------------------------ a tool call
    def _event(
        self,
        st: dict[str, Any],
        cause: Cause,
        turn: int,
        detail: str,
        tool: str = "",
        latency_s: float = 0.0,
        into: str = "events",
    ) -> None:
        st[into].append(
            {"cause": cause.value, "turn": turn, "detail": detail[:300], "tool": tool, "latency_s": round(latency_s, 4)}
        )

    async def _call_tool(
        self, tool_call: Any, tools_kwargs: dict[str, Any], agent_data: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        st = _state(agent_data)
        st["tool_calls"] += 1
        turn = max(agent_data.assistant_turns - 1, 0)
        active: dict[str, Any] = getattr(agent_data, "_active_tools", self.tools) or {}
        name = tool_call.name
        if name not in active:
            why = f"no tool {name!r}; tools: {', '.join(active)}"
            self._event(st, Cause.UNKNOWN_TOOL, turn, why, name)
            return ToolResponse(text=f"error: {why}"), 0.0, {}
        try:
            args = json.loads(tool_call.arguments)
        except (json.JSONDecodeError, TypeError) as e:
            why = f"the arguments of {name} do not parse: {e}"
            self._event(st, Cause.MALFORMED_TOOL_CALL, turn, why, name)
            return ToolResponse(text=f"error: {why}"), 0.0, {}
        tool = active[name]
        schema = tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)
        params = schema.get("function", {}).get("parameters")
        if (bad := bad_arguments(name, args, params)) is not None:
            self._event(st, Cause.BAD_ARGUMENTS, turn, bad, name)
            return ToolResponse(text=f"error: {bad}"), 0.0, {}
        key = str(agent_data.request_id)
        last: tuple[Cause, str, float] = (Cause.TOOL_ERROR, "", 0.0)
        for attempt in range(self.retries + 1):
            st["calls_run"] += 1
            start = time.monotonic()
            injected = self.faults.draw(key, st["calls_run"]) if self.faults is not None else None
            if injected is not None:
                last = (injected, f"injected {injected.value}", 0.0)
            else:
                try:
                    response, reward, res = await self._timed(tool, args, tools_kwargs, agent_data)
                    return self._cut(response), reward, res
                except TimeoutError as e:
                    why = str(e) or f"{name} ran past {self.timeout_s:g}s"
                    last = (Cause.ENV_TIMEOUT, why, time.monotonic() - start)
                except ConfigError:  # a config this run cannot go on with: not the environment's fault
                    raise
                except EnvCrash as e:
                    last = (Cause.ENV_CRASH, f"EnvCrash: {e}", time.monotonic() - start)
                except Exception as e:  # the tool failed on a well-formed call: the environment's fault
                    last = (Cause.TOOL_ERROR, f"{type(e).__name__}: {e}", time.monotonic() - start)
            if attempt < self.retries:  # tried again with a fresh instance: kept, not a cause
                self._event(st, last[0], turn, last[1], name, last[2], into="recovered")
        self._event(st, last[0], turn, last[1], name, last[2])
        st["fault"] = True
        return ToolResponse(text=f"error: {last[1]}"), 0.0, {}

    async def _timed(
        self, tool: Any, args: dict[str, Any], tools_kwargs: dict[str, Any], agent_data: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """:meth:`_execute` under ``rlvr.env.tool_timeout_s`` counted as rlvr's guard counts it: the
        environment's own time; the policy's program that a tool bounds itself and marks
        (:func:`rlvr.episodes.clock.policy_time`, rlvr's python tool) is left out, up to its limit
        and the sandbox's teardown grace. Raises TimeoutError past the limit (the environment's)."""
        clock = CallClock()
        token = CALL_CLOCK.set(clock)  # copied into the task, and from it into the tool's thread
        try:
            task = asyncio.ensure_future(self._execute(tool, args, tools_kwargs, agent_data))
        finally:
            CALL_CLOCK.reset(token)
        while not task.done():
            left = self.timeout_s - clock.environment_s()
            if left <= 0 or clock.overdue():
                task.cancel()
                name = tool.name
                if clock.overdue():
                    raise TimeoutError(f"{name}'s sandbox did not come back within {TEARDOWN_S:g}s of its own limit")
                raise TimeoutError(f"{name} ran past {self.timeout_s:g}s")
            await asyncio.wait({task}, timeout=max(0.05, left))
        return task.result()

    async def _execute(
        self, tool: Any, args: dict[str, Any], tools_kwargs: dict[str, Any], agent_data: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """One run of the tool, as verl runs it (a function tool directly, a ``BaseTool`` through a
        fresh instance), its failures raised instead of turned into text."""
        if isinstance(tool, FunctionTool):
            return normalize_function_tool_return(await tool.call(args))
        kwargs = tools_kwargs.get(tool.name, {})
        instance_id, _ = await tool.create(create_kwargs=kwargs.get("create_kwargs", {}))
        try:
            return await tool.execute(instance_id, args, agent_data=agent_data)
        finally:
            await tool.release(instance_id)

    def _cut(self, response: ToolResponse) -> ToolResponse:
        """verl's own cut of a long tool result (``max_tool_response_length`` from the chosen side)."""
        text, n = response.text, self.max_tool_response_length
        if text and len(text) > n:
            side = self.tool_response_truncate_side
            if side == "left":
                text = "(truncated)..." + text[-n:]
            elif side == "right":
                text = text[:n] + "...(truncated)"
            else:
                text = text[: n // 2] + "...(truncated)..." + text[-(n // 2) :]
            response = response.model_copy(update={"text": text})
        return response

    # ------------------------------------------------------------------ how the episode ends
    async def _handle_generating_state(
        self, agent_data: Any, sampling_params: dict[str, Any], ignore_termination: bool = False
    ) -> AgentState:
        state = await super()._handle_generating_state(agent_data, sampling_params, ignore_termination)
        if state == AgentState.TERMINATED:
            st = _state(agent_data)
            text = self.tokenizer.decode(agent_data.response_ids)
            turn = max(agent_data.assistant_turns - 1, 0)
            if len(agent_data.response_mask) >= self.response_length:
                st["finish"] = "length"
            elif self.conversation is not None:  # the environment answers the turn, or ends the episode
                if (going := await self._reply(agent_data, st, turn)) is not None:
                    return going
            elif (
                (self.max_assistant_turns and agent_data.assistant_turns >= self.max_assistant_turns)
                or (self.max_user_turns and agent_data.user_turns >= self.max_user_turns)
            ) and CALL_END in text:
                self._event(st, Cause.TURN_LIMIT, turn, f"{agent_data.assistant_turns} turns without a final answer")
                st["finish"] = "turn_limit"
            elif find_call(text) is not None:  # markup the parser could not read: verl took it for the answer
                self._event(st, Cause.MALFORMED_TOOL_CALL, turn, f"the tool call does not parse: {text[-200:]!r}")
            await self._finish(agent_data)
        return state

    async def _reply(self, agent_data: Any, st: dict[str, Any], turn: int) -> AgentState | None:
        """The conversation's environment on the policy's last turn: GENERATING once its reply is
        appended (out of the loss), None when the episode ends here (over, faulted, out of turns or
        room: recorded in ``st``)."""
        assert self.conversation is not None
        text = self.tokenizer.decode(agent_data.response_ids, skip_special_tokens=True)
        try:
            env = await asyncio.to_thread(environments.conversation_environment, agent_data, self.conversation)
        except EnvCrash as e:  # its reset failed: the environment could not start
            self._event(st, Cause.ENV_CRASH, turn, str(e), "respond")
            st["finish"] = "fault"
            return None
        guard = agent_data.__dict__.setdefault(
            "_rlvr_guard", Guard(env, key=str(agent_data.request_id), timeout_s=self.timeout_s, faults=self.faults)
        )
        out = await asyncio.to_thread(guard.respond, text, turn)
        if (ev := out.event) is not None:  # raised, stalled, or answered with something that is no message
            self._event(st, ev.cause, turn, ev.detail, ev.tool, ev.latency_s)
            if ev.cause in ENVIRONMENT_FAULTS:
                st["finish"] = "fault"
            return None
        st["replies"] = st.get("replies", 0) + 1
        if out.reply is None:  # the environment says the episode is over: this turn is the answer
            return None
        if (self.max_assistant_turns and agent_data.assistant_turns >= self.max_assistant_turns) or (
            self.max_user_turns and agent_data.user_turns >= self.max_user_turns
        ):
            why = f"{agent_data.assistant_turns} turns and the environment still answers"
            self._event(st, Cause.TURN_LIMIT, turn, why)
            st["finish"] = "turn_limit"
            return None
        previous = list(agent_data.messages)
        agent_data.messages.extend(out.reply)
        merged, mask, logprobs = await self.ct_merge_context_msg(
            previous,
            agent_data.messages,
            agent_data.prompt_ids,
            agent_data.response_mask,
            agent_data.response_logprobs or None,
            tools=getattr(agent_data, "_active_tool_schemas", self.tool_schemas),
        )
        if len(mask) >= self.response_length:
            why = f"the environment's reply leaves no room in the {self.response_length}-token response"
            self._event(st, Cause.CONTEXT_OVERFLOW, turn, why)
            st["finish"] = "context_overflow"
            return None
        agent_data.prompt_ids, agent_data.response_mask = merged.token_ids, mask
        if agent_data.response_logprobs:
            agent_data.response_logprobs = logprobs or []
        agent_data.user_turns += 1
        return AgentState.GENERATING

    async def _handle_processing_tools_state(self, agent_data: Any) -> AgentState:
        state = await super()._handle_processing_tools_state(agent_data)
        st = _state(agent_data)
        turn = max(agent_data.assistant_turns - 1, 0)
        if st["fault"]:  # the environment failed past its retries: the episode stops, to be redrawn
            st["finish"] = "fault"
            await self._finish(agent_data)
            return AgentState.TERMINATED
        if state == AgentState.TERMINATED:
            self._event(
                st,
                Cause.CONTEXT_OVERFLOW,
                turn,
                f"the tool result leaves no room in the {self.response_length}-token response",
            )
            st["finish"] = "context_overflow"
            await self._finish(agent_data)
        return state

    async def _finish(self, agent_data: Any) -> None:
        st = _state(agent_data)
        # the final answer is the last turn's text, when the episode ended on a turn of the policy's
        answer = (
            ""
            if st["finish"] in ("fault", "context_overflow")
            else self.tokenizer.decode(agent_data.response_ids, skip_special_tokens=True)
        )
        judged: dict[str, Any] = {}
        if st["finish"] != "fault":  # an environment among the tools judges the answer (its rubric)
            tools = getattr(agent_data, "_active_tools", self.tools) or {}
            turn = max(agent_data.assistant_turns - 1, 0)
            judged = await asyncio.to_thread(environments.judge, agent_data, tools, answer, turn, self.conversation)
            st["events"].extend(judged.pop("events", []))
            if any(Cause(e["cause"]) in ENVIRONMENT_FAULTS for e in st["events"]):
                st["finish"] = "fault"
        await asyncio.to_thread(environments.close, agent_data)
        agent_data.extra_fields[EPISODE_KEY] = {
            "events": list(st["events"]),
            "recovered": list(st["recovered"]),
            "tool_calls": st["tool_calls"],
            "turns": agent_data.assistant_turns,
            "replies": st.get("replies", 0),
            "finish": st["finish"],
            "answer": answer,
            **judged,
        }
