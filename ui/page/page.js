() => {
  /* Think · Act · ReAct in the browser (ui/page/behaviour.py loads it through launch(js=...)): the run on screen
     after Run and on a shared link, each panel at the start of its newest step, the comparison table as cards on a
     phone, presentation mode's panel height, and two fixes of Gradio's markup for assistive technology. */
  const $ = (selector, root = document) => root.querySelector(selector);
  const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];
  const NARROW = 820;  // px: theme.css stacks the panels below this width
  const MARGIN = 8;  // px above the run once it is scrolled to
  // ui/core/render.py's titles that open a step: a thought, an action (a program, a call), a new trial
  const OPENS = /^[✎⚙⟳]/;
  const shown = (el) => !!el && el.offsetParent !== null;
  const box = (el) => el.getBoundingClientRect();

  /* The first row of panels on screen, with their metrics lines: its lowest edge. */
  function firstRowBottom() {
    const columns = $$("#panels > .panel-col").filter(shown);
    if (!columns.length) return null;
    const top = box(columns[0]).top;
    return Math.max(...columns.filter((c) => Math.abs(box(c).top - top) < 2).map((c) => box(c).bottom));
  }

  /* The metrics lines under the first row of panels: the tallest one's height, and one line's. */
  function metricsRoom() {
    const lines = $$("#panels > .panel-col").filter(shown).map((c) => $(".metrics", c)).filter(Boolean);
    const text = lines.length ? $("p", lines[0]) || lines[0] : null;
    const line = text ? 1.5 * parseFloat(getComputedStyle(text).fontSize) : 30;
    return { tallest: Math.max(0, ...lines.map((m) => box(m).height)), line };
  }

  /* Presentation mode: the panels fill what the screen has left under the question, examples and status line, and
     leave room for the tallest metrics line (three lines at least: a long mode's numbers wrap at 20 px), refitted
     when a metrics line grows (update()), so every one stays on the first screen. */
  let fitted = -1;
  function fitPresentation() {
    const ask = $("#ask-row"), panels = $("#panels");
    if (!document.body.classList.contains("presentation") || !ask || !panels) return;
    const root = document.documentElement.style;
    if (window.innerWidth <= NARROW) { root.setProperty("--presentation-panel-h", "auto"); return; }  // a phone
    const above = box(panels).top - box(ask).top;
    const { tallest, line } = metricsRoom();
    fitted = tallest;
    const below = Math.max(tallest, 3 * line) + 2 * MARGIN;
    const height = Math.max(320, Math.floor(window.innerHeight - MARGIN - above - below));
    root.setProperty("--presentation-panel-h", `${height}px`);
  }

  /* After Run, Step, Replay or Fork, and on a shared link: on a wide screen the question row with the panels under it
     when both fit, else the status line at the top with the panels under it (a phone). */
  function showRun() {
    for (const panel of $$(".panel-chat")) delete panel.dataset.userScrolled;
    fitPresentation();
    const ask = $("#ask-row"), status = $("#status-row");
    if (!status) return;
    const bottom = firstRowBottom();
    const fits = ask && bottom !== null && bottom - box(ask).top + MARGIN <= window.innerHeight;
    const target = window.innerWidth > NARROW && fits ? ask : status;
    target.style.scrollMarginTop = `${MARGIN}px`;
    target.scrollIntoView({ block: "start", behavior: "smooth" });  // also scrolls a Space's page around its iframe
  }

  const titleOf = (row) => ($(".thought-group .title", row)?.innerText || "").trim();

  /* A panel shows the start of its newest step (a thought and its action open one step). Once the last message is
     a plain one (a final answer, an error), it is shown whole, under as much of that step as fits. */
  function place(panel) {
    const area = $(".panel-wrap", panel);
    if (!area || panel.dataset.userScrolled || area.scrollHeight <= area.clientHeight) return;
    const rows = $$(".message-row", area);
    if (!rows.length) return;
    let i = rows.length - 1;
    while (i > 0 && !OPENS.test(titleOf(rows[i]))) i--;
    while (i > 0 && OPENS.test(titleOf(rows[i - 1]))) i--;
    const origin = box(area).top - area.scrollTop;
    const top = (row) => box(row).top - origin;
    const last = rows[rows.length - 1];
    if (!$(".thought-group", last)) {
      const bottom = box(last).bottom - origin;
      while (i < rows.length - 1 && bottom - top(rows[i]) > area.clientHeight) i++;
    }
    const want = Math.min(top(rows[i]), area.scrollHeight - area.clientHeight);
    if (Math.abs(area.scrollTop - want) > 1) area.scrollTop = want;
  }

  /* A step box that opens grows without a change to the page's tree: a panel's messages are watched for size. */
  const sized = new WeakSet();
  const resizes = new ResizeObserver(() => schedule());
  function watchSize(panel) {
    const messages = $(".message-wrap", panel);
    if (messages && !sized.has(messages)) { sized.add(messages); resizes.observe(messages); }
  }

  /* A visitor who scrolls or clicks inside a panel reads it: it stays where they put it until the next run. */
  function watchVisitor(panel) {
    watchSize(panel);
    if (panel.dataset.watched) return;
    panel.dataset.watched = "1";
    const reading = () => { panel.dataset.userScrolled = "1"; };
    for (const kind of ["wheel", "touchstart", "pointerdown", "keydown"]) {
      panel.addEventListener(kind, reading, { passive: true });
    }
  }

  /* The comparison table as one card per mode on a phone (theme.css): each cell carries its column's name. */
  function labelTable() {
    const table = $("#comparison table");
    if (!table) return;
    const heads = $$("thead th", table).map((th) => th.innerText.trim());
    for (const row of $$("tbody tr", table)) {
      [...row.children].forEach((cell, k) => {
        if (cell.dataset.label !== (heads[k] || "")) cell.dataset.label = heads[k] || "";
      });
    }
  }

  /* Gradio 6.31's markup, fixed where it is drawn (docs/app.md): a collapsible message's title is a button (a click
     and Enter toggle it) holding a second, unnamed button, the arrow, which a click passes through (theme.css), so it
     is taken out of the keyboard's and assistive technology's way; the upload box's spoken name is not its text. */
  function fixMarkup() {
    for (const arrow of $$(".thought-group .title .icon-button:not([disabled])")) {
      arrow.disabled = true;
      arrow.setAttribute("aria-hidden", "true");
    }
    for (const upload of $$(".upload-container[aria-label], .upload-container [aria-label]")) {
      if (upload.matches("button, [role=button]")) upload.removeAttribute("aria-label");
    }
  }

  let pending = false;
  function update() {
    pending = false;
    for (const panel of $$(".panel-chat")) {
      watchVisitor(panel);
      if (shown(panel)) place(panel);
    }
    labelTable();
    fixMarkup();
    if (document.body.classList.contains("presentation") && Math.abs(metricsRoom().tallest - fitted) > 1) {
      fitPresentation();
    }
  }
  const schedule = () => { if (!pending) { pending = true; requestAnimationFrame(update); } };
  new MutationObserver(schedule).observe(document.body, { childList: true, subtree: true, characterData: true });
  window.addEventListener("resize", fitPresentation);
  window.thinkActReact = { showRun, fitPresentation };
  schedule();
}
