// The agi chat widget (anywidget ES module, no bundler).
// The `transcript` trait is the source of truth; "delta" custom messages carry the text of
// the assistant entry being streamed until Python commits it to the transcript.

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

// A small Markdown subset: fenced code, inline code, bold; the rest stays text (pre-wrap).
function renderMarkdown(text) {
  const parts = text.split(/```[^\n`]*\n?/);
  return parts
    .map((part, i) => {
      const safe = escapeHtml(part);
      if (i % 2 === 1) return `<pre class="agi-code"><code>${safe}</code></pre>`;
      return safe
        .replace(/`([^`\n]+)`/g, "<code>$1</code>")
        .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>");
    })
    .join("");
}

const ICONS = { running: "⏳", completed: "✅", failed: "❌", denied: "⛔", skipped: "⏭", cancelled: "⏹" };

function renderEntry(entry, live) {
  const role = entry.role;
  if (role === "tool") {
    const summary = el(
      "summary",
      {},
      `${ICONS[entry.status] || "•"} ${entry.name} ${entry.status}`,
    );
    const body = el("div", { class: "agi-tool-body" });
    if (entry.arguments) body.append(el("pre", { class: "agi-code" }, entry.arguments));
    if (entry.output) {
      body.append(el("div", { class: "agi-label" }, entry.ok ? "output" : "error"));
      body.append(el("pre", { class: "agi-code" }, entry.output));
    }
    return el(
      "details",
      { class: `agi-entry agi-tool agi-${entry.status}`, "data-role": "tool", "data-entry-id": entry.id },
      summary,
      body,
    );
  }
  const text = entry.streaming ? (live.get(entry.id) ?? entry.text ?? "") : entry.text ?? "";
  const node = el("div", {
    class: `agi-entry agi-${role}${entry.streaming ? " agi-streaming" : ""}${entry.partial ? " agi-partial" : ""}`,
    "data-role": role,
    "data-entry-id": entry.id,
  });
  if (role === "assistant") node.innerHTML = renderMarkdown(text);
  else node.textContent = text;
  if (entry.partial) {
    node.append(el("div", { class: "agi-label" }, "partial answer: the run ended before it did"));
  }
  return node;
}

function fillSelect(select, options, current) {
  select.replaceChildren(
    ...options.map((opt) => {
      const value = typeof opt === "string" ? opt : opt.id;
      const label = typeof opt === "string" ? opt : opt.label;
      const option = el("option", { value }, label);
      if (value === current) option.selected = true;
      return option;
    }),
  );
  if (current && !options.some((o) => (typeof o === "string" ? o : o.id) === current)) {
    const option = el("option", { value: current }, current);
    option.selected = true;
    select.prepend(option);
  }
}

export default {
  render({ model, el: root }) {
    const live = new Map();
    root.classList.add("agi-chat");

    const sessionSelect = el("select", { class: "agi-session", title: "session" });
    const modelSelect = el("select", { class: "agi-model", title: "model" });
    const agentSelect = el("select", { class: "agi-agent", title: "agent" });
    const newButton = el("button", { class: "agi-new", title: "new session" }, "New");
    const log = el("div", { class: "agi-log" });
    const input = el("textarea", { class: "agi-input", rows: "2", placeholder: "Ask the agent… (Enter sends, Shift+Enter: new line)" });
    const send = el("button", { class: "agi-send" }, "Send");
    const stop = el("button", { class: "agi-stop" }, "Stop");
    const status = el("div", { class: "agi-status" });

    root.append(
      el("div", { class: "agi-header" }, sessionSelect, agentSelect, modelSelect, newButton),
      log,
      el("div", { class: "agi-footer" }, input, send, stop),
      status,
    );

    function renderLog() {
      const entries = model.get("transcript") || [];
      for (const entry of entries) {
        if (!entry.streaming) live.delete(entry.id);
      }
      const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 30;
      log.replaceChildren(...entries.map((entry) => renderEntry(entry, live)));
      if (atBottom) log.scrollTop = log.scrollHeight;
    }

    function renderControls() {
      fillSelect(sessionSelect, model.get("sessions") || [], model.get("session_id"));
      fillSelect(modelSelect, model.get("models") || [], model.get("model"));
      fillSelect(agentSelect, model.get("agents") || [], model.get("agent"));
      const running = Boolean(model.get("running"));
      send.disabled = running;
      stop.disabled = !running;
      root.classList.toggle("agi-running", running);
      status.textContent = model.get("status") || "";
    }

    function onCustom(msg) {
      if (!msg || msg.type !== "delta") return;
      live.set(msg.entry, (live.get(msg.entry) || "") + msg.text);
      const node = log.querySelector(`[data-entry-id="${CSS.escape(msg.entry)}"]`);
      if (node) {
        node.innerHTML = renderMarkdown(live.get(msg.entry));
        log.scrollTop = log.scrollHeight;
      } else {
        renderLog();
      }
    }

    function submit() {
      const text = input.value.trim();
      if (!text || model.get("running")) return;
      model.send({ type: "send", text });
      input.value = "";
    }

    send.addEventListener("click", submit);
    stop.addEventListener("click", () => model.send({ type: "stop" }));
    newButton.addEventListener("click", () => model.send({ type: "new_session" }));
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        submit();
      }
    });
    for (const [select, trait] of [
      [sessionSelect, "session_id"],
      [modelSelect, "model"],
      [agentSelect, "agent"],
    ]) {
      select.addEventListener("change", () => {
        model.set(trait, select.value);
        model.save_changes();
      });
    }

    const controlTraits = ["sessions", "session_id", "models", "model", "agents", "agent", "running", "status"];
    model.on("change:transcript", renderLog);
    for (const trait of controlTraits) model.on(`change:${trait}`, renderControls);
    model.on("msg:custom", onCustom);
    renderLog();
    renderControls();

    return () => {
      model.off("change:transcript", renderLog);
      for (const trait of controlTraits) model.off(`change:${trait}`, renderControls);
      model.off("msg:custom", onCustom);
    };
  },
};
