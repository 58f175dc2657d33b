"""The admission line (ui/core/admission.py): free slots admit at once, the rest wait in order, a full line refuses
with one line, and a visitor who leaves gives its place back."""

from __future__ import annotations

import asyncio

import pytest

from ui.core.admission import Admission, Full


def test_free_slots_admit_at_once_and_the_rest_wait_in_order():
    async def scenario():
        line = Admission(slots=2, max_waiting=2)
        a, b = line.ticket(), line.ticket()
        c, d = line.ticket(), line.ticket()
        assert a.admitted.is_set() and b.admitted.is_set()
        assert (c.place, d.place) == (1, 2) and line.waiting == 2
        with pytest.raises(Full, match="try again"):
            line.ticket()
        a.release()
        assert c.admitted.is_set() and d.place == 1
        c.release()
        c.release()  # twice is harmless: the slot is given back once
        assert d.admitted.is_set() and line.running == 2 and line.waiting == 0

    asyncio.run(scenario())


def test_a_visitor_who_leaves_the_line_frees_its_place():
    async def scenario():
        line = Admission(slots=1, max_waiting=5)
        first, second, third = line.ticket(), line.ticket(), line.ticket()
        places = []

        async def wait(ticket):
            async for place in ticket.wait(refresh_s=0.01):
                places.append(place)

        waiter = asyncio.create_task(wait(third))
        await asyncio.sleep(0.05)
        second.release()  # e.g. the tab was closed while waiting
        await asyncio.sleep(0.1)
        assert third.place == 1 and places == [2, 1]
        first.release()
        await asyncio.wait_for(waiter, 1)
        assert third.admitted.is_set() and line.running == 1

    asyncio.run(scenario())


def test_a_visitor_s_runs_are_counted_per_browser_and_per_address_and_a_refusal_holds_nothing():
    from ui.core.admission import OverQuota, RunQuota
    from ui.core.visitors import Visitor

    async def scenario():
        line = Admission(slots=2, max_waiting=100, quota=RunQuota(per_browser=3, per_address=5))
        one, two = Visitor("browser:a", "10.0.0.1"), Visitor("browser:b", "10.0.0.1")
        cookieless = Visitor(None, "10.0.0.1")
        mine = [line.ticket(one) for _ in range(3)]
        with pytest.raises(OverQuota, match="You already have 3 runs going") as refused:
            line.ticket(one)
        assert "\n" not in str(refused.value) and refused.value.short.startswith("⏳")
        theirs = [line.ticket(two), line.ticket(cookieless)]
        with pytest.raises(OverQuota, match="from your network"):  # the address's ceiling: 5
            line.ticket(cookieless)
        with pytest.raises(OverQuota, match="from your network"):
            line.ticket(Visitor("browser:c", "10.0.0.1"))
        assert line.ticket(Visitor(None, "10.0.0.2")).place > 0  # another address is not held up by them
        assert line.running + line.waiting == 6  # the refused asked for nothing
        mine[0].release()
        mine[0].release()  # twice gives back once
        line.ticket(one)
        with pytest.raises(OverQuota):
            line.ticket(one)
        for ticket in [*mine[1:], *theirs]:
            ticket.release()
        assert line.quota.held("browser:a") == 1 and line.quota.held("10.0.0.1") == 1

    asyncio.run(scenario())


def test_a_full_line_gives_the_visitor_s_count_back():
    from ui.core.admission import RunQuota
    from ui.core.visitors import Visitor

    async def scenario():
        quota = RunQuota(per_browser=3, per_address=40)
        line = Admission(slots=1, max_waiting=0, quota=quota)
        who = Visitor("browser:a", "10.0.0.1")
        line.ticket(who)
        with pytest.raises(Full, match="try again"):
            line.ticket(who)
        assert quota.held("browser:a") == 1 and quota.held("10.0.0.1") == 1

    asyncio.run(scenario())
