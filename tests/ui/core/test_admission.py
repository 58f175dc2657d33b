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
