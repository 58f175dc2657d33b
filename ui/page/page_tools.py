"""Settings → "Add a tool": the visitor's own tools, written on the page (``tools/page_tools.py``).

A tool is a name, a one-line description and the body of ``def tool(text: str) -> str``; every call runs it inside
the sandbox, never in the app. They belong to the visitor's session (a ``gr.State``: at most
:data:`~tools.page_tools.MAX_TOOLS`, each at most 4 KB), join the Enabled tools picker of that visitor only, and
reach a run as ``/compare``'s last input (``ui/core/inputs.PAGE_TOOLS``): the page's own, never a REST caller's. A
replay puts the tools of the recording back here, so its source shows and Run uses it again.
"""

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from tools.page_tools import MAX_TOOLS, PageToolError, page_tool, page_tools_of
from tools.registry import ToolRegistry, normalize_name
from ui.core import render
from ui.recordings.reader import RecordingError, open_recording

CLASS_FACTS = '''facts = {
    "teacher": "Ms Okafor",
    "room": "B12",
    "exam": "Thursday 3 June, 9:00",
    "textbook": "Think Python, 3rd edition",
}
key = text.strip().lower()
return facts.get(key, "I know about: " + ", ".join(sorted(facts)))'''
UNIT_CONVERTER = '''# "10 km to miles", "3 kg in lb", "100 f to c"
factors = {("km", "miles"): 0.621371, ("miles", "km"): 1.609344, ("kg", "lb"): 2.204623,
           ("lb", "kg"): 0.453592, ("m", "ft"): 3.28084, ("ft", "m"): 0.3048}
words = text.lower().replace(" in ", " to ").split()
value, unit, target = float(words[0]), words[1], words[-1]
if (unit, target) == ("c", "f"):
    return f"{value * 9 / 5 + 32:g} f"
if (unit, target) == ("f", "c"):
    return f"{(value - 32) * 5 / 9:g} c"
if (unit, target) not in factors:
    return "I convert " + ", ".join(f"{a} to {b}" for a, b in factors) + ", c to f and f to c."
return f"{value * factors[(unit, target)]:g} {target}"'''
EXAMPLES = {  # label → (name, description, body)
    "Class facts": ("class_facts", "Facts about our class. Input: teacher, room, exam or textbook.", CLASS_FACTS),
    "Unit converter": ("convert_units", "Convert units. Input like '10 km to miles' (km, miles, kg, lb, m, ft, c, f).",
                       UNIT_CONVERTER),
}
INTRO = ("A tool is a function from text to text, with a description the model reads. Write its body: it runs in the "
         "sandbox of the Python tool (no files, network or environment; ~5 s), once per call, for your runs only. "
         f"At most {MAX_TOOLS} tools, 4 KB each; a name of yours replaces your tool of that name.")


@dataclass(frozen=True)
class PageToolControls:
    """The Add a tool accordion's components; ``own`` is the visitor's tools (a list of name/description/source)."""

    own: gr.State
    name: gr.Textbox
    description: gr.Textbox
    body: gr.Code
    example: gr.Dropdown
    add_btn: gr.Button
    remove_btn: gr.Button
    status: gr.Markdown


def layout(own: gr.State) -> PageToolControls:
    """In Settings, under the picker: the form, two examples, Add and Remove, and one line saying what happened;
    ``own`` holds the visitor's tools."""
    with gr.Accordion("Add a tool", open=False, elem_id="page-tools"):
        gr.Markdown(INTRO)
        with gr.Row():
            name = gr.Textbox(label="Name", placeholder="class_facts", max_lines=1, elem_id="page-tool-name")
            description = gr.Textbox(label="Description (one line)", max_lines=1, scale=3,
                                     elem_id="page-tool-description")
            example = gr.Dropdown(list(EXAMPLES), value=None, label="Start from an example",
                                  elem_id="page-tool-example")
        body = gr.Code("return text", language="python", label="Body of def tool(text: str) -> str", lines=8,
                       elem_id="page-tool-body")
        with gr.Row():
            add_btn = gr.Button("Add the tool", variant="primary", size="sm", elem_id="page-tool-add")
            remove_btn = gr.Button("Remove the tool of this name", size="sm", elem_id="page-tool-remove")
        status = gr.Markdown("", elem_id="page-tool-status")
    return PageToolControls(own, name, description, body, example, add_btn, remove_btn, status)


class PageTools:
    """The form's handlers, over the app's registry (a tool's name may not be one of its tools')."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry

    def add(self, name: Any, description: Any, body: Any, own: Any, enabled: Any) -> tuple:
        """Add (or replace, by name) a tool: the new list, the picker (the tool enabled), one line."""
        own = list(own or [])
        try:
            tool = page_tool(name, description, body, self.registry.names)
        except PageToolError as exc:
            return gr.skip(), gr.skip(), f"⚠ {render.safe_markdown(str(exc))}"
        kept = [t for t in own if normalize_name(t["name"]) != normalize_name(tool.name)]
        if len(kept) >= MAX_TOOLS:
            return gr.skip(), gr.skip(), (f"⚠ You have {MAX_TOOLS} tools already: remove one first "
                                          f"({', '.join(t['name'] for t in kept)}).")
        replaced = len(kept) < len(own)
        own = [*kept, tool.to_dict()]
        line = (f"✔ **{tool.name}** is {'replaced' if replaced else 'added'}: every mode's prompt lists it (the "
                f"Prompts tab shows it), CodeAct calls it as a function. {self.listing(own)}")
        return own, self.picker(own, [*(enabled or []), tool.name]), line

    def remove(self, name: Any, own: Any, enabled: Any) -> tuple:
        """Remove the visitor's tool named in the form."""
        own = list(own or [])
        key = normalize_name(name) if isinstance(name, str) else ""
        kept = [t for t in own if normalize_name(t["name"]) != key]
        if len(kept) == len(own):
            return gr.skip(), gr.skip(), f"⚠ You have no tool named {render.plain(str(name or '')[:60])!r}."
        return kept, self.picker(kept, enabled), f"✔ Removed. {self.listing(kept)}"

    @staticmethod
    def example(label: Any) -> tuple:
        """An example's name, description and body in the form."""
        if label not in EXAMPLES:
            return gr.skip(), gr.skip(), gr.skip()
        return EXAMPLES[label]

    async def from_recording(self, path: Any, own: Any, enabled: Any) -> tuple:
        """A replayed run's tools written on the page, put back here (replacing yours of the same name) and enabled;
        the first one's source in the form."""
        unchanged = (gr.skip(),) * 6
        if not isinstance(path, str) or not await asyncio.to_thread(_mentions_page_tools, path):
            return unchanged
        try:
            recording = await open_recording(path)  # read and checked in a worker process, like the replay's
        except RecordingError:
            return unchanged  # the replay says what is wrong with the file
        recording.discard()
        try:
            recorded = page_tools_of(recording.settings.get("page_tools"), self.registry.names)
        except PageToolError as exc:
            line = f"⚠ The replayed run's tool written on the page cannot be used: {render.safe_markdown(str(exc))}"
            return gr.skip(), gr.skip(), line, gr.skip(), gr.skip(), gr.skip()
        if not recorded:
            return unchanged
        names = {normalize_name(t.name) for t in recorded}
        kept = [t for t in own or [] if normalize_name(t["name"]) not in names]
        room = max(0, MAX_TOOLS - len(kept))
        added, left = recorded[:room], recorded[room:]
        own = [*kept, *(t.to_dict() for t in added)]
        line = f"✔ The replayed run's tools are yours now: {', '.join(f'**{t.name}**' for t in added)}." * bool(added)
        if left:
            line += f" ⚠ Left out (at most {MAX_TOOLS} tools): {', '.join(t.name for t in left)}."
        form = (added[0].name, added[0].description, added[0].source) if added else (gr.skip(),) * 3
        return own, self.picker(own, [*(enabled or []), *(t.name for t in added)]), line.strip(), *form

    def picker(self, own: list[dict[str, str]], enabled: Any) -> Any:
        """The Enabled tools picker of this visitor: the app's tools, then theirs."""
        names = [*self.registry.names, *(t["name"] for t in own)]
        chosen = {normalize_name(n) for n in enabled or [] if isinstance(n, str)}
        return gr.CheckboxGroup(choices=names, value=[n for n in names if normalize_name(n) in chosen])

    @staticmethod
    def listing(own: list[dict[str, str]]) -> str:
        if not own:
            return "You have no tool of your own."
        return f"Your tools ({len(own)} of {MAX_TOOLS}): " + ", ".join(f"`{t['name']}`" for t in own) + "."


def wire(registry: ToolRegistry, controls: PageToolControls, picker: gr.CheckboxGroup, replay_btn: gr.Button,
         replay_file: gr.File) -> PageTools:
    """The form's events (all private), and a replay's tools put back on the page; returns their handlers."""
    handlers = PageTools(registry)
    private: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    outputs = [controls.own, picker, controls.status]
    controls.example.input(handlers.example, controls.example,
                           [controls.name, controls.description, controls.body], queue=False, **private)
    controls.add_btn.click(handlers.add, [controls.name, controls.description, controls.body, controls.own, picker],
                           outputs, **private)
    controls.remove_btn.click(handlers.remove, [controls.name, controls.own, picker], outputs, **private)
    replay_btn.click(handlers.from_recording, [replay_file, controls.own, picker],
                     [*outputs, controls.name, controls.description, controls.body], **private)
    return handlers


def _mentions_page_tools(path: str) -> bool:
    """Whether the file could hold tools written on the page (most recordings do not: no reader process then)."""
    try:
        with Path(path).open("rb") as f:
            return any(b'"page_tools"' in chunk for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return False
