"""get_weather against wttr.in's real answer shapes, served by `responses` (no network)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
import responses
from responses import matchers

from tools import default_registry
from tools.registry import ToolFailure
from tools.weather import USER_AGENT, format_report, weather_report


def _hourly(time: str, temp: str) -> dict[str, Any]:
    return {
        "DewPointC": "4", "DewPointF": "39", "FeelsLikeC": temp, "FeelsLikeF": "46", "HeatIndexC": temp,
        "HeatIndexF": "48", "WindChillC": temp, "WindChillF": "46", "WindGustKmph": "14", "WindGustMiles": "9",
        "chanceoffog": "0", "chanceoffrost": "0", "chanceofhightemp": "0", "chanceofovercast": "88",
        "chanceofrain": "0", "chanceofremdry": "85", "chanceofsnow": "0", "chanceofsunshine": "10",
        "chanceofthunder": "0", "chanceofwindy": "0", "cloudcover": "100", "diffRad": "35.2", "humidity": "70",
        "precipInches": "0.0", "precipMM": "0.0", "pressure": "1021", "pressureInches": "30", "shortRad": "60.1",
        "tempC": temp, "tempF": "48", "time": time, "uvIndex": "1", "visibility": "10", "visibilityMiles": "6",
        "weatherCode": "122", "weatherDesc": [{"value": "Overcast "}], "weatherIconUrl": [{"value": ""}],
        "winddir16Point": "SW", "winddirDegree": "225", "windspeedKmph": "9", "windspeedMiles": "6",
    }  # fmt: skip


def j1(
    area: str = "Paris",
    region: str = "Ile-de-France",
    country: str = "France",
    desc: str = "Overcast",
    temp: str = "9",
    feels: str = "8",
    lo: str = "6",
    hi: str = "12",
) -> dict[str, Any]:
    """A wttr.in ``?format=j1`` document: every key the real service sends, every value a string."""
    day = {
        "astronomy": [
            {"moon_illumination": "5", "moon_phase": "Waxing Crescent", "moonrise": "10:21 AM",
             "moonset": "06:37 PM", "sunrise": "08:07 AM", "sunset": "05:00 PM"}
        ],
        "avgtempC": "9", "avgtempF": "48", "date": "2025-11-22",
        "hourly": [_hourly(str(h * 100), temp) for h in range(0, 24, 3)],
        "maxtempC": hi, "maxtempF": "54", "mintempC": lo, "mintempF": "43", "sunHour": "3.4",
        "totalSnow_cm": "0.0", "uvIndex": "1",
    }  # fmt: skip
    return {
        "current_condition": [
            {
                "FeelsLikeC": feels, "FeelsLikeF": "46", "cloudcover": "100", "humidity": "58",
                "localObsDateTime": "2025-11-22 10:15 AM", "observation_time": "09:15 AM", "precipInches": "0.0",
                "precipMM": "0.0", "pressure": "1021", "pressureInches": "30", "temp_C": temp, "temp_F": "48",
                "uvIndex": "1", "visibility": "10", "visibilityMiles": "6", "weatherCode": "122",
                "weatherDesc": [{"value": desc}], "weatherIconUrl": [{"value": ""}], "winddir16Point": "SW",
                "winddirDegree": "225", "windspeedKmph": "8", "windspeedMiles": "5",
            }
        ],
        "nearest_area": [
            {"areaName": [{"value": area}], "country": [{"value": country}], "latitude": "48.867",
             "longitude": "2.333", "population": "2138551", "region": [{"value": region}],
             "weatherUrl": [{"value": ""}]}
        ],
        "request": [{"query": "Lat 48.86 and Lon 2.34", "type": "LatLon"}],
        "weather": [day, dict(day, date="2025-11-23"), dict(day, date="2025-11-24")],
    }  # fmt: skip


J1 = [matchers.query_param_matcher({"format": "j1"})]


@pytest.fixture
def wttr() -> responses.RequestsMock:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def test_formats_the_issue_example(wttr: responses.RequestsMock) -> None:
    wttr.add(responses.GET, "https://wttr.in/Paris", json=j1(region="Île-de-France"), match=J1)
    assert weather_report("Paris") == (
        "Paris, Île-de-France, France: Overcast, 9 °C (feels 8 °C), humidity 58 %, wind 8 km/h SW; today 6–12 °C"
    )
    sent = wttr.calls[0].request
    assert sent.headers["User-Agent"] == USER_AGENT
    assert "format=j1" in sent.url


def test_location_is_url_encoded(wttr: responses.RequestsMock) -> None:
    wttr.add(responses.GET, "https://wttr.in/San+Francisco,+CA", json=j1("San Francisco", "California", "USA"))
    wttr.add(responses.GET, "https://wttr.in/S%C3%A3o+Paulo", json=j1("Sao Paulo", "Sao Paulo", "Brazil"))
    wttr.add(responses.GET, "https://wttr.in/a%2Fb%3Fc%23d", json=j1("Ab", "", "Nowhere"))
    assert weather_report("San Francisco, CA").startswith("San Francisco, California, USA: Overcast")
    assert weather_report("  São   Paulo ").startswith("Sao Paulo, Brazil:")  # region == area is not repeated
    assert "Ab, Nowhere" in weather_report("a/b?c#d")


def test_fuzzy_match_is_visible(wttr: responses.RequestsMock) -> None:
    wttr.add(responses.GET, "https://wttr.in/Xqzzyville", json=j1("Ksyzhevo", "Tver", "Russia"))
    out = weather_report("Xqzzyville")
    assert out.startswith("Ksyzhevo, Tver, Russia:")
    assert "nearest match wttr.in found for 'Xqzzyville'" in out


def test_coordinates_and_landmarks_are_not_flagged_as_fuzzy(wttr: responses.RequestsMock) -> None:
    wttr.add(responses.GET, "https://wttr.in/48.85,2.35", json=j1())
    wttr.add(responses.GET, "https://wttr.in/~Eiffel+tower", json=j1())
    assert "nearest match" not in weather_report("48.85,2.35")
    assert "nearest match" not in weather_report("~Eiffel tower")


@pytest.mark.parametrize("location", ["", "   ", None, '""'])
def test_empty_location_is_refused_without_a_request(wttr: responses.RequestsMock, location: object) -> None:
    with pytest.raises(ToolFailure, match="needs a location"):
        weather_report(location)  # type: ignore[arg-type]
    assert len(wttr.calls) == 0


def test_overlong_location_is_refused(wttr: responses.RequestsMock) -> None:
    with pytest.raises(ToolFailure, match="too long"):
        weather_report("x" * 500)


def test_unknown_location_served_as_plain_text_with_http_200(wttr: responses.RequestsMock) -> None:
    wttr.add(
        responses.GET,
        "https://wttr.in/Atlantis",
        body="Unknown location; please try ~48.8582602,2.29449905432441\n",
        status=200,
        content_type="text/plain; charset=utf-8",
    )
    with pytest.raises(ToolFailure, match="could not find a place called 'Atlantis'"):
        weather_report("Atlantis")


def test_location_not_found_with_http_500(wttr: responses.RequestsMock) -> None:
    wttr.add(responses.GET, "https://wttr.in/Nowhereville", body="location not found", status=500)
    with pytest.raises(ToolFailure, match="could not find a place called 'Nowhereville'"):
        weather_report("Nowhereville")


def test_other_http_errors(wttr: responses.RequestsMock) -> None:
    wttr.add(responses.GET, "https://wttr.in/Paris", body="<html><body>502 Bad Gateway</body></html>", status=502)
    with pytest.raises(ToolFailure, match="HTTP 502"):
        weather_report("Paris")


@pytest.mark.parametrize(
    "body",
    [
        "<html><head><title>wttr.in</title></head><body>Sorry, we are running out of queries</body></html>",
        "This query is already being processed",
        "",
        "{truncated json",
    ],
)
def test_non_json_bodies(wttr: responses.RequestsMock, body: str) -> None:
    wttr.add(responses.GET, "https://wttr.in/Paris", body=body, status=200, content_type="text/html")
    with pytest.raises(ToolFailure, match="non-JSON"):
        weather_report("Paris")


@pytest.mark.parametrize(
    "doc",
    [{}, {"current_condition": []}, {"current_condition": [{"temp_C": "1"}]}, [], {"current_condition": "x"}],
)
def test_json_in_an_unexpected_shape(wttr: responses.RequestsMock, doc: object) -> None:
    wttr.add(responses.GET, "https://wttr.in/Paris", body=json.dumps(doc), content_type="application/json")
    with pytest.raises(ToolFailure, match="unexpected shape"):
        weather_report("Paris")


def test_timeout_and_connection_errors(wttr: responses.RequestsMock) -> None:
    wttr.add(responses.GET, "https://wttr.in/Slow", body=requests.exceptions.ReadTimeout("read timed out"))
    wttr.add(responses.GET, "https://wttr.in/Down", body=requests.exceptions.ConnectionError("refused"))
    with pytest.raises(ToolFailure, match="did not answer within"):
        weather_report("Slow")
    with pytest.raises(ToolFailure, match="Could not reach wttr.in"):
        weather_report("Down")


def test_missing_optional_parts() -> None:
    doc = j1()
    del doc["nearest_area"]
    doc["weather"] = []
    doc["current_condition"][0]["weatherDesc"] = [{"value": "  "}]
    assert format_report("Paris", doc) == ("Paris: No description, 9 °C (feels 8 °C), humidity 58 %, wind 8 km/h SW")


def test_through_the_registry_cached_and_errors_not_cached(wttr: responses.RequestsMock) -> None:
    wttr.add(
        responses.GET, "https://wttr.in/Oslo", json=j1("Oslo", "Oslo", "Norway", "Light snow", "-3", "-8", "-5", "-1")
    )
    wttr.add(responses.GET, "https://wttr.in/Atlantis", body="Unknown location; please try ~1,2", status=200)
    reg = default_registry()
    first = reg.call("get_weather", "Oslo")
    again = reg.call("Get Weather", {"location": "  oslo "})
    assert first.output.startswith("Oslo, Norway: Light snow, -3 °C (feels -8 °C)")
    assert "today -5–-1 °C" in first.output
    assert not first.is_error and not first.cached and again.cached
    assert len([c for c in wttr.calls if "Oslo" in c.request.url]) == 1
    for _ in range(2):
        r = reg.call("get_weather", "Atlantis")
        assert r.is_error and not r.cached
    assert reg.call("get_weather", "").is_error
