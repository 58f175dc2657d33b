"""``APP_MCP_SERVERS`` read strictly: a good value, and one clear line for each bad one (never a secret in it)."""

from __future__ import annotations

import json

import pytest

from tools.mcp_config import ENV, McpConfigError, McpServer, servers_from_env

SECRET = "s3cr3t-value-do-not-show"


def env(value: object, **extra: str) -> dict[str, str]:
    return {ENV: value if isinstance(value, str) else json.dumps(value), "FACTS_TOKEN": SECRET, **extra}


def test_unset_or_blank_names_no_server():
    assert servers_from_env({}) == [] and servers_from_env({ENV: "  "}) == []


def test_a_good_value_gives_the_servers_with_header_templates_only():
    servers = servers_from_env(env([
        {"name": "facts", "url": "https://facts.example.org/mcp", "headers": {"Authorization": "Bearer ${FACTS_TOKEN}"},
         "timeout": 5},
        {"name": "units2", "url": "http://127.0.0.1:8000/mcp"},
    ]))
    auth = (("Authorization", "Bearer ${FACTS_TOKEN}"),)
    assert servers == [McpServer("facts", "https://facts.example.org/mcp", auth, 5.0),
                       McpServer("units2", "http://127.0.0.1:8000/mcp")]
    assert SECRET not in repr(servers)
    assert servers[0].resolved_headers({"FACTS_TOKEN": SECRET}) == {"Authorization": f"Bearer {SECRET}"}
    assert servers[1].timeout_s == 15.0 and servers[1].resolved_headers() == {}


GOOD = {"name": "facts", "url": "https://facts.example.org/mcp"}


@pytest.mark.parametrize(("value", "line"), [
    ("facts=https://x", "APP_MCP_SERVERS must be a JSON list of servers, not valid JSON here (Expecting value at "
                        "line 1 column 1); see docs/configuration.md"),
    ({"name": "facts"}, 'APP_MCP_SERVERS must be a JSON list of servers like [{"name": "facts", "url": '
                        '"https://…/mcp"}], got a JSON object'),
    (["facts"], 'APP_MCP_SERVERS, server 1: must be a JSON object with "name" and "url", got a JSON string'),
    ([{**GOOD, "token": "x"}], "APP_MCP_SERVERS, server 1: unknown key(s) 'token'; expected headers, name, timeout, "
                               "url"),
    ([{"url": GOOD["url"]}], 'APP_MCP_SERVERS, server 1: "name" must be 1 to 20 lowercase letters and digits, '
                             'starting with a letter (it prefixes its tools\' names: name_tool)'),
    ([{**GOOD, "name": "class_facts"}], 'APP_MCP_SERVERS, server 1: "name" must be 1 to 20 lowercase letters and '
                                        'digits, starting with a letter (it prefixes its tools\' names: name_tool)'),
    ([GOOD, GOOD], "APP_MCP_SERVERS: two servers are named 'facts'; names must differ"),
    ([{"name": "facts"}], "APP_MCP_SERVERS, server 'facts': \"url\" must be the server's streamable-HTTP endpoint, "
                          "e.g. https://example.org/mcp"),
    ([{**GOOD, "url": "file:///etc/passwd"}], "APP_MCP_SERVERS, server 'facts': \"url\" must be an http:// or "
                                              "https:// URL with a host"),
    ([{**GOOD, "url": "https://user:hunter2@x.org/mcp"}],
     "APP_MCP_SERVERS, server 'facts': \"url\" must not carry a user or password; send credentials in a header taken "
     "from a secret, e.g. {\"Authorization\": \"Bearer ${MY_SERVER_TOKEN}\"}"),
    ([{**GOOD, "timeout": 0}], "APP_MCP_SERVERS, server 'facts': \"timeout\" must be a number of seconds from 1 to "
                               "120"),
    ([{**GOOD, "timeout": "5"}], "APP_MCP_SERVERS, server 'facts': \"timeout\" must be a number of seconds from 1 to "
                                 "120"),
    ([{**GOOD, "headers": ["Authorization"]}], "APP_MCP_SERVERS, server 'facts': \"headers\" must be a JSON object of "
                                               "header name to value"),
    ([{**GOOD, "headers": {"Authorization": f"Bearer {SECRET}"}}],
     "APP_MCP_SERVERS, server 'facts', header 'Authorization': the value must take a secret, as \"Bearer ${NAME}\" "
     "with NAME an environment secret; a value written here is not kept secret"),
    ([{**GOOD, "headers": {"Authorization": "Bearer ${CLASS_NAME}"}}],
     "APP_MCP_SERVERS, server 'facts', header 'Authorization': ${CLASS_NAME} must name a secret: a name ending in "
     "_TOKEN, _KEY, _SECRET or _PASSWORD (e.g. CLASS_NAME_TOKEN), which the app keeps out of its other processes"),
    ([{**GOOD, "headers": {"Authorization": "Bearer ${MISSING_TOKEN}"}}],
     "APP_MCP_SERVERS, server 'facts', header 'Authorization': ${MISSING_TOKEN} is not set (add it as a secret of "
     "the Space, or export it)"),
    ([{**GOOD, "headers": {"Authorization": "Bearer $FACTS_TOKEN"}}],
     "APP_MCP_SERVERS, server 'facts', header 'Authorization': the value must take a secret, as \"Bearer ${NAME}\" "
     "with NAME an environment secret; a value written here is not kept secret"),
    ([{**GOOD, "headers": {"Authorization": "${FACTS_TOKEN} $x"}}],
     "APP_MCP_SERVERS, server 'facts', header 'Authorization': write each secret as ${NAME}, with no other '$' and "
     "no line break"),
    ([{**GOOD, "headers": {"Content-Type": "${FACTS_TOKEN}"}}],
     "APP_MCP_SERVERS, server 'facts': 'Content-Type' is not a header the app may set (letters, digits and hyphens; "
     "not one the MCP transport sets itself)"),
    ([{**GOOD, "headers": {"X-Key": "${1BAD}"}}],
     "APP_MCP_SERVERS, server 'facts', header 'X-Key': ${1BAD} is not an environment variable's name"),
    ([GOOD] * 9, "APP_MCP_SERVERS names 9 servers; at most 8"),
])
def test_a_bad_value_is_one_clear_line(value, line):
    with pytest.raises(McpConfigError) as caught:
        servers_from_env(env(value))
    assert str(caught.value) == line
    assert "\n" not in line and SECRET not in line and "hunter2" not in line


def test_a_secret_with_a_line_break_is_refused_without_showing_it():
    value = [{**GOOD, "headers": {"Authorization": "Bearer ${FACTS_TOKEN}"}}]
    with pytest.raises(McpConfigError, match="contains a line break") as caught:
        servers_from_env(env(value, FACTS_TOKEN="abc\r\nX-Evil: 1"))
    assert "Evil" not in str(caught.value)
