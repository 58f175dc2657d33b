"""``get_weather``: current conditions and today's range from wttr.in (``?format=j1``) via ``requests``.

wttr.in's failure modes are odd and all handled here: during capacity outages it serves the
plain text ``Unknown location; please try ~lat,lon`` with HTTP 200 (even for ``format=j1``),
unknown places come back as HTTP 500 ``location not found``, gibberish may resolve to some
fuzzy match (so the answer always starts with the place wttr.in actually resolved), and an
empty location would report the weather at the *server's* IP, so it is refused.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import requests

from tools.registry import ToolFailure, tool

WTTR_URL = "https://wttr.in/{location}"
USER_AGENT = "ThinkActReAct/0.1 (https://huggingface.co/spaces; educational demo)"
HTTP_TIMEOUT_S = 8.0
MAX_LOCATION_CHARS = 100


def weather_report(location: str, *, session: requests.Session | None = None, timeout: float = HTTP_TIMEOUT_S) -> str:
    """Fetch and format the weather for ``location``; raise :class:`ToolFailure` with a readable reason."""
    place = " ".join(str(location or "").split()).strip(" \"'")
    if not place:
        raise ToolFailure(
            "get_weather needs a location, e.g. 'Paris' or 'Tokyo, Japan' "
            "(an empty one would report the server's own town)."
        )
    if len(place) > MAX_LOCATION_CHARS:
        raise ToolFailure(
            f"Location too long ({len(place)} characters): give a city name, optionally with its country."
        )
    # wttr.in's own examples write spaces as "+" (wttr.in/San+Francisco).
    url = WTTR_URL.format(location=quote(place.replace("+", " ").replace(" ", "+"), safe=",~@+"))
    http = session or requests
    try:
        resp = http.get(
            url,
            params={"format": "j1"},
            timeout=timeout,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )
    except requests.Timeout:
        raise ToolFailure(f"wttr.in did not answer within {timeout:g} s; try again later.") from None
    except requests.RequestException as exc:
        raise ToolFailure(
            f"Could not reach wttr.in ({type(exc).__name__}); the weather service is unavailable right now."
        ) from None
    body = resp.text.strip()
    first_line = body.splitlines()[0][:120] if body else ""
    if "unknown location" in body[:200].lower() or "location not found" in body[:200].lower():
        raise ToolFailure(
            f"wttr.in could not find a place called '{place}'. Try a city name with its country "
            f"(e.g. 'Springfield, Illinois') or coordinates like '48.85,2.35'."
        )
    if resp.status_code != 200:
        raise ToolFailure(
            f"wttr.in answered HTTP {resp.status_code} for '{place}'" + (f": {first_line}" if first_line else "") + "."
        )
    try:
        data = json.loads(body)
    except ValueError:
        raise ToolFailure(
            f"wttr.in sent an unexpected non-JSON answer for '{place}': {first_line or '(empty)'}"
        ) from None
    try:
        return format_report(place, data)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise ToolFailure(f"wttr.in sent weather data in an unexpected shape for '{place}'.") from None


def format_report(query: str, data: dict[str, Any]) -> str:
    """``Paris, Ile-de-France, France: Overcast, 9 °C (feels 8 °C), humidity 58 %, wind 8 km/h SW; today 6–12 °C``."""
    cur = data["current_condition"][0]
    desc = (
        ", ".join(d["value"].strip() for d in cur.get("weatherDesc", []) if d.get("value", "").strip())
        or "No description"
    )
    resolved = _resolved_place(data)
    text = (
        f"{resolved or query}: {desc}, {cur['temp_C']} °C (feels {cur['FeelsLikeC']} °C), "
        f"humidity {cur['humidity']} %, wind {cur['windspeedKmph']} km/h {cur.get('winddir16Point', '')}".rstrip()
    )
    days = data.get("weather") or []
    if days:
        text += f"; today {days[0]['mintempC']}–{days[0]['maxtempC']} °C"
    if resolved and not _matches(query, resolved):
        text += f" (nearest match wttr.in found for '{query}')"
    return text


def _resolved_place(data: dict[str, Any]) -> str:
    areas = data.get("nearest_area") or []
    if not areas:
        return ""
    area = areas[0]
    parts: list[str] = []
    for key in ("areaName", "region", "country"):
        value = ((area.get(key) or [{}])[0].get("value") or "").strip()
        if value and value not in parts:
            parts.append(value)
    return ", ".join(parts)


def _matches(query: str, resolved: str) -> bool:
    """Does the place wttr.in resolved plausibly correspond to what was asked?"""
    if query.startswith("~") or any(ch.isdigit() for ch in query):  # landmark search or coordinates
        return True
    words = [w for w in _fold(query).replace(",", " ").split() if len(w) > 2]
    target = _fold(resolved)
    return not words or any(w in target for w in words)


def _fold(text: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))


@tool(timeout_s=12, cache_ttl_s=600, web=True, verb="asked for the weather")
def get_weather(location: str) -> str:
    """Get the current weather and today's temperature range for a place.
    Input: a city name, optionally with its country (e.g. "Paris, France").

    Uses wttr.in. The answer starts with the place that was actually resolved, so check it matches.
    """
    return weather_report(location)
