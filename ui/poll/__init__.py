"""The class poll (issue 32): the teacher opens a room, phones predict which mode gets it right, the run reveals.

``rooms.py`` is the store, ``routes.py`` the phones' JSON routes and page, ``qr.py`` the join link's QR code,
``controls.py`` the teacher's controls on the Compare tab, ``teacher.py`` their handlers and events.
"""

from ui.poll import routes, teacher  # what app.py uses: routes.install and teacher.wire_poll

__all__ = ["routes", "teacher"]
