"""What a fork and a follow-up replay: the recorded replies and observations of a run, fed back through the mode's
own loop so it rebuilds the run's conversation byte for byte before anything runs live.

``agents.fork`` continues live from an edited step; ``agents.conversation`` rebuilds a run's messages for the
turn after it. Both use this module, which imports neither.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from agents.events import Action, Event, Observation, Usage
from agents.llm.base import ChatModel, Chunk, Message, ToolCallDelta
from agents.modes.base import RunConfig, ToolRunner
from tools.registry import ToolRegistry

# A mode can be forked when its run function takes one of these options (ModeSpec.forkable says so):
REASONING = "reasoning"  # one chain of thought, no observations (Think-only): the edited text is its reply
RUNNER = "runner"  # a tool loop: the recorded observations are replayed through the mode's own loop


class ForkMismatch(ValueError):
    """Replaying the trace took another path than the recorded run (other tools or settings)."""


def answered_action(events: list[Event], index: int) -> Action | None:
    """The Action an Observation answers: the last one before it at its level (a program's, or its call's)."""
    nested = events[index].nested
    return next((e for e in reversed(events[:index]) if isinstance(e, Action) and e.nested == nested), None)


class ReplayModel:
    """Streams recorded replies back for the first calls, then hands every call to the live model."""

    def __init__(self, replies: list[Usage], live: ChatModel) -> None:
        self._replies = deque(replies)
        self._live = live
        self.model_id = getattr(live, "model_id", "")
        self.earlier = getattr(live, "earlier", ())  # a follow-up's earlier turns (CodeAct restores their variables)
        self.live = False

    def stream(self, messages: list[Message], **kwargs: Any) -> Iterator[Chunk]:
        if not self._replies:
            self.live = True
            return self._live.stream(messages, **kwargs)
        return self._play(self._replies.popleft())

    @staticmethod
    def _play(reply: Usage) -> Iterator[Chunk]:
        if reply.reply:
            yield Chunk(text=reply.reply)
        deltas = tuple(ToolCallDelta(index=i, id=cid, name=name, arguments=args)
                       for i, (cid, name, args) in enumerate(reply.tool_calls))
        yield Chunk(tool_calls=deltas, prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                    finish_reason="tool_calls" if deltas else "stop")

    def close(self) -> None:
        self._live.close()


class ReplayRunner(ToolRunner):
    """Returns the recorded observations (one of them edited) before running tools for real.

    It remembers them as :class:`ToolRunner` would have, so a repeated call after the fork is
    answered from memory just as in the original run. The calls of one native reply ran at once and were
    recorded in the order they finished: each is matched to its own recorded call (the Action before it).
    """

    def __init__(self, registry: ToolRegistry, config: RunConfig, recorded: list[Observation],
                 actions: list[Action | None] | None = None) -> None:
        super().__init__(registry, config)
        self._recorded = deque(zip(actions or [None] * len(recorded), recorded, strict=True))

    def replayed(self, action: Any) -> Observation | None:
        """The next recorded observation for a CodeAct program (run again only for its variables); None once the
        recording is used up: the run is live from there."""
        if not self._recorded:
            return None
        _, observation = self._recorded.popleft()
        if observation.tool != action.tool:
            raise ForkMismatch(f"the recorded run ran {observation.tool!r} where the replay runs {action.tool!r}")
        return observation

    def start(self, action: Any) -> Callable[[], Observation]:
        if not self._recorded:
            return super().start(action)
        key = self.key(action)
        at = next((i for i, (made, _) in enumerate(self._recorded) if made is not None and self.key(made) == key), 0)
        _, observation = self._recorded[at]
        del self._recorded[at]
        tool = self.registry.resolve(action.tool)
        if (tool.name if tool else action.tool) != observation.tool:
            raise ForkMismatch(f"the recorded run called {observation.tool!r} where the replay calls {action.tool!r}")
        self.seen[key] += 1
        if self.seen[key] == 1:
            self.results[key] = observation.output
        return lambda: observation
