"""FairGate: a crowd's backlog does not delay a newcomer; places are shared round-robin; cancellations give back."""

from __future__ import annotations

import asyncio

import pytest

from ui.core.fair import FairGate, GateFull


async def visit(gate: FairGate, visitor: str, order: list[str], hold_s: float = 0.01) -> None:
    async with gate.hold(visitor):
        order.append(visitor)
        await asyncio.sleep(hold_s)


def test_a_newcomer_goes_ahead_of_a_crowds_backlog():
    async def main() -> tuple[list[str], int]:
        gate, order = FairGate(at_once=2, per_visitor=100), []
        crowd = [asyncio.create_task(visit(gate, f"crowd-{k % 5}", order)) for k in range(100)]
        while len(order) < 5:  # every crowd visitor has been served; most of the 100 still wait
            await asyncio.sleep(0.005)
        arrived = []

        async def newcomer() -> None:
            arrived.append(len(order))  # what was served when it joined its line (the next statement)
            await visit(gate, "newcomer", order)

        await asyncio.gather(*crowd, newcomer())
        return order, arrived[0]

    order, arrived = asyncio.run(main())
    assert 5 <= arrived <= 50
    assert order.index("newcomer") <= arrived + 2  # one of the next two places to free (first come: ~100th)


def test_visitors_not_yet_served_go_in_the_order_they_came():
    async def main() -> list[str]:
        gate, order = FairGate(at_once=1, per_visitor=100), []
        tasks = [asyncio.create_task(visit(gate, name, order, 0.001)) for name in ("a", "a", "b", "c", "a")]
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(main()) == ["a", "b", "c", "a", "a"]


def test_places_go_round_robin_among_waiting_visitors():
    async def main() -> list[str]:
        gate, order = FairGate(at_once=1, per_visitor=100), []
        tasks = [asyncio.create_task(visit(gate, "a", order, 0.001)) for _ in range(6)]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(visit(gate, "b", order, 0.001)) for _ in range(3)]
        await asyncio.gather(*tasks)
        return order

    order = asyncio.run(main())
    assert order[:7] == ["a", "b", "a", "b", "a", "b", "a"]


def test_a_visitor_past_its_limit_is_refused_at_once_and_given_room_again():
    async def main() -> None:
        gate, order = FairGate(at_once=1, per_visitor=2), []
        first = [asyncio.create_task(visit(gate, "a", order, 0.3)) for _ in range(2)]
        await asyncio.sleep(0.01)
        with pytest.raises(GateFull):
            async with gate.hold("a"):
                pass
        async with asyncio.timeout(5):
            await asyncio.gather(*first)
            await visit(gate, "a", order, 0)
        assert order == ["a", "a", "a"] and gate.waiting() == 0

    asyncio.run(main())


def test_a_cancelled_wait_gives_its_turn_to_the_next():
    async def main() -> list[str]:
        gate, order = FairGate(at_once=1, per_visitor=10), []
        holder = asyncio.create_task(visit(gate, "a", order, 0.5))
        await asyncio.sleep(0.01)
        gone = asyncio.create_task(visit(gate, "b", order))
        after = asyncio.create_task(visit(gate, "c", order))
        await asyncio.sleep(0.01)
        gone.cancel()
        async with asyncio.timeout(5):
            await asyncio.gather(holder, after)
        assert gate.waiting() == 0 and gate._held == 0 and not gate._pending_by and not gate._served
        return order

    assert asyncio.run(main()) == ["a", "c"]
