// The agi chat widget (anywidget ES module, no bundler).
// The `transcript` trait is the source of truth; "delta" custom messages carry the text of
// the assistant entry being streamed until Python commits it to the transcript.
//
// Markdown is rendered by JupyterLab's own renderer (the widget manager's rendermime: the same
// as notebook Markdown cells and the AGI side panel, with code highlighting and HTML
// sanitized); front ends without one (VS Code, Colab) get the small renderer below. The
// controls use JupyterLab's styled-control classes and theme variables.

const THROTTLE_MS = 80;

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

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

// --- status icons (SVG in currentColor: no emoji font needed) ------------------------------

const ICON_PATHS = {
  running: '<path d="M8 2.5a5.5 5.5 0 1 1-5.5 5.5"/>',
  completed: '<path d="M3 8.5l3.2 3L13 4.5"/>',
  failed: '<circle cx="8" cy="8" r="5.5"/><path d="M6 6l4 4M10 6l-4 4"/>',
  denied: '<circle cx="8" cy="8" r="5.5"/><path d="M4.2 11.8l7.6-7.6"/>',
  skipped: '<path d="M3 4l5 4-5 4zM9 4l5 4-5 4z"/>',
  cancelled: '<rect x="4" y="4" width="8" height="8" rx="1"/>',
  waiting_approval: '<circle cx="8" cy="8" r="5.5"/><path d="M6.4 6.3a1.7 1.7 0 1 1 2.2 1.6c-.4.2-.6.5-.6.9v.4M8 11.3v.1"/>',
  copy: '<rect x="5" y="5" width="8" height="9" rx="1"/><path d="M3 11V3a1 1 0 0 1 1-1h6"/>',
};

function icon(name) {
  const span = el("span", { class: `agi-icon agi-icon-${name}`, "aria-hidden": "true" });
  span.innerHTML =
    '<svg xmlns="http://www.w3.org/2000/svg" width="14" height="14" viewBox="0 0 16 16" fill="none" ' +
    'stroke="currentColor" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round">' +
    (ICON_PATHS[name] || ICON_PATHS.running) +
    "</svg>";
  return span;
}

// --- Markdown -------------------------------------------------------------------------------

function escapeHtml(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function inline(text) {
  return escapeHtml(text)
    .replace(/`([^`\n]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\n]+)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" target="_blank" rel="noopener">$1</a>');
}

function tableHtml(rows) {
  const cells = (row) => row.replace(/^\s*\|/, "").replace(/\|\s*$/, "").split("|").map((c) => c.trim());
  const head = cells(rows[0]).map((c) => `<th>${inline(c)}</th>`).join("");
  const body = rows.slice(2).map((r) => `<tr>${cells(r).map((c) => `<td>${inline(c)}</td>`).join("")}</tr>`);
  return `<table><thead><tr>${head}</tr></thead><tbody>${body.join("")}</tbody></table>`;
}

// Headings, lists, tables, fenced code, emphasis, inline code and links; the rest paragraphs.
export function renderMarkdown(text) {
  const lines = text.split("\n");
  const out = [];
  for (let i = 0; i < lines.length; ) {
    const line = lines[i];
    const fence = line.match(/^```\s*([\w+-]*)/);
    if (fence) {
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      i++;
      out.push(`<pre><code class="language-${fence[1]}">${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      out.push(`<h${heading[1].length}>${inline(heading[2])}</h${heading[1].length}>`);
      i++;
      continue;
    }
    if (/^\s*\|/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-+/.test(lines[i + 1])) {
      const rows = [];
      for (; i < lines.length && /^\s*\|/.test(lines[i]); i++) rows.push(lines[i]);
      out.push(tableHtml(rows));
      continue;
    }
    const item = line.match(/^\s*([-*]|\d+\.)\s+/);
    if (item) {
      const ordered = /\d/.test(item[1]);
      const items = [];
      for (; i < lines.length && /^\s*([-*]|\d+\.)\s+/.test(lines[i]); i++) {
        items.push(`<li>${inline(lines[i].replace(/^\s*([-*]|\d+\.)\s+/, ""))}</li>`);
      }
      out.push(ordered ? `<ol>${items.join("")}</ol>` : `<ul>${items.join("")}</ul>`);
      continue;
    }
    const para = [];
    for (; i < lines.length && lines[i].trim() && !/^(```|#{1,6}\s|\s*\||\s*([-*]|\d+\.)\s)/.test(lines[i]); i++) {
      para.push(lines[i]);
    }
    if (para.length) out.push(`<p>${inline(para.join("\n"))}</p>`);
    else i++;
  }
  return out.join("");
}

// A Markdown view of one entry, re-rendered at most every THROTTLE_MS while it streams.
function markdownView(model) {
  const rendermime = model.widget_manager && model.widget_manager.rendermime;
  const node = el("div", { class: "agi-markdown" });
  let renderer = null;
  if (rendermime && typeof rendermime.createRenderer === "function") {
    renderer = rendermime.createRenderer("text/markdown");
    node.append(renderer.node);
  } else {
    node.classList.add("jp-RenderedHTMLCommon", "agi-markdown-own");
  }
  let wanted = null;
  let shown = null;
  let busy = false;
  let timer = null;
  async function render() {
    timer = null;
    if (busy || wanted === shown) return;
    busy = true;
    const text = wanted;
    try {
      if (renderer) {
        await renderer.renderModel({ data: { "text/markdown": text }, metadata: {}, trusted: false, setData() {} });
      } else {
        node.innerHTML = renderMarkdown(text);
      }
      decorateCode(node);
      shown = text;
      node.dataset.renderedLength = String(text.length);
    } catch (error) {
      node.textContent = text; // a broken render shows the text as it is
    } finally {
      busy = false;
    }
    if (wanted !== shown) schedule();
  }
  function schedule() {
    if (timer === null) timer = setTimeout(render, THROTTLE_MS);
  }
  return {
    node,
    set(text) {
      wanted = text;
      if (shown === null) render();
      else schedule();
    },
  };
}

// Code blocks get a Copy button.
function decorateCode(root) {
  for (const pre of root.querySelectorAll("pre")) {
    if (pre.parentElement && pre.parentElement.classList.contains("agi-code-block")) continue;
    const block = el("div", { class: "agi-code-block" });
    pre.replaceWith(block);
    const copy = el("button", { class: "agi-copy", type: "button", title: "Copy", "aria-label": "Copy" }, icon("copy"));
    copy.addEventListener("click", () => copyText(pre.textContent || ""));
    block.append(pre, el("div", { class: "agi-code-toolbar" }, copy));
  }
}

function copyText(text) {
  const fallback = () => {
    const area = el("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  };
  if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).catch(fallback);
  else fallback();
}

// --- entries ----------------------------------------------------------------------------

function approvalButtons(entry, send) {
  // A call waiting for a person: decided here, durably (the run resumes in this kernel).
  const message = el("input", {
    class: "jp-mod-styled agi-approval-message",
    type: "text",
    placeholder: "message to the model with a denial (optional)",
    "aria-label": "Message with a denial",
  });
  const button = (label, decision, cls) => {
    const node = el("button", { class: `jp-mod-styled ${cls} agi-approval-${decision.replace("_", "-")}`, type: "button" }, label);
    node.addEventListener("click", () => {
      for (const b of node.parentElement.querySelectorAll("button, input")) b.disabled = true;
      send({ type: "approval", run_id: entry.run_id, tool_call_id: entry.id, decision, message: message.value.trim() });
    });
    return node;
  };
  return el(
    "div",
    { class: "agi-approval" },
    button("Approve", "approve", "jp-mod-accept"),
    button("Deny", "deny", "jp-mod-reject"),
    button("Always (this session)", "approve_always", ""),
    message,
  );
}

function toolNode(entry, send) {
  const status = entry.status || "running";
  const summary = el(
    "summary",
    {},
    el("span", { class: `agi-status agi-status-${status}`, title: status }, icon(status)),
    el("span", { class: "agi-tool-name" }, entry.name || "tool"),
    el("span", { class: "agi-tool-state" }, status),
  );
  // who decided a call that waited ("approved in the panel by alice"), wherever it was decided
  if (entry.decided) summary.append(el("span", { class: "agi-tool-decided" }, entry.decided));
  const body = el("div", { class: "agi-tool-body" });
  if (entry.arguments) body.append(el("pre", { class: "agi-code" }, entry.arguments));
  if (entry.diff) {
    // a file_diff / notebook_diff artifact's patch (apply_patch, fs.write, notebook tools)
    body.append(el("div", { class: "agi-label" }, "diff"));
    const diff = el("pre", { class: "agi-code agi-diff" });
    for (const line of entry.diff.split("\n")) {
      const kind = /^(\+\+\+|---)/.test(line) ? "head" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx";
      diff.append(el("div", { class: `agi-diff-${kind}` }, line || " "));
    }
    body.append(diff);
  }
  if (entry.output) {
    body.append(el("div", { class: "agi-label" }, entry.ok ? "output" : "error"));
    body.append(el("pre", { class: "agi-code" }, entry.output));
  }
  const waiting = status === "waiting_approval" && entry.run_id && send;
  const node = el(
    "details",
    { class: `agi-entry agi-tool agi-${status}`, "data-role": "tool", "data-status": status, "data-entry-id": entry.id },
    summary,
    body,
  );
  if (waiting) {
    node.open = true; // the question shows without a click
    body.append(approvalButtons(entry, send));
  }
  return node;
}

export default {
  render({ model, el: root }) {
    const live = new Map(); // entry id -> text streamed so far
    const views = new Map(); // entry id -> {key, node, markdown}
    root.classList.add("agi-chat");

    const select = (cls, title) => el("select", { class: `jp-mod-styled ${cls}`, title, "aria-label": title });
    const sessionSelect = select("agi-session", "Session");
    const agentSelect = select("agi-agent", "Agent");
    const modelSelect = select("agi-model", "Model");
    const newButton = el("button", { class: "jp-mod-styled jp-mod-reject agi-new", type: "button", title: "New session" }, "New");
    const log = el("div", { class: "agi-log", role: "log", "aria-live": "polite" });
    const input = el("textarea", {
      class: "jp-mod-styled agi-input",
      rows: "2",
      "aria-label": "Message",
      placeholder: "Ask the agent… (Enter sends, Shift+Enter: new line)",
    });
    const send = el("button", { class: "jp-mod-styled jp-mod-accept agi-send", type: "button" }, "Send");
    const stop = el("button", { class: "jp-mod-styled jp-mod-reject agi-stop", type: "button" }, "Stop");
    const status = el("div", { class: "agi-status-line" });

    // Images pasted into the box: sent as the message's buffers (the kernel checks and stores
    // them: app.attachments), at most 4 (the server's bound).
    const attached = [];
    const attachedRow = el("div", { class: "agi-attached" });
    function renderAttached() {
      attachedRow.replaceChildren(
        ...attached.map((image) =>
          el(
            "span",
            { class: "agi-attached-image", title: image.file.name },
            el("img", { src: image.url, alt: image.file.name }),
            el("button", {
              type: "button",
              "aria-label": `Remove ${image.file.name}`,
              onclick: () => {
                attached.splice(attached.indexOf(image), 1);
                URL.revokeObjectURL(image.url);
                renderAttached();
              },
            }, "×"),
          ),
        ),
      );
    }
    input.addEventListener("paste", (event) => {
      const files = Array.from(event.clipboardData?.files || []).filter((f) => IMAGE_TYPES.includes(f.type));
      if (!files.length) return;
      event.preventDefault();
      for (const file of files.slice(0, Math.max(0, 4 - attached.length))) {
        attached.push({ file, url: URL.createObjectURL(file) });
      }
      renderAttached();
    });

    root.append(
      el("div", { class: "agi-header" }, sessionSelect, agentSelect, modelSelect, newButton),
      log,
      attachedRow,
      el("div", { class: "agi-footer" }, input, el("div", { class: "agi-buttons" }, send, stop)),
      status,
    );

    function entryNode(entry) {
      if (entry.role === "tool") return toolNode(entry, (content) => model.send(content));
      const streaming = Boolean(entry.streaming);
      const node = el("div", {
        class: `agi-entry agi-${entry.role}${streaming ? " agi-streaming" : ""}${entry.partial ? " agi-partial" : ""}`,
        "data-role": entry.role,
        "data-entry-id": entry.id,
      });
      if (entry.role === "assistant") {
        const view = markdownView(model);
        view.set(streaming ? (live.get(entry.id) ?? entry.text ?? "") : (entry.text ?? ""));
        node.append(view.node);
        node.markdown = view;
        if (entry.partial) node.append(el("div", { class: "agi-label" }, "partial answer: the run ended before it did"));
        if (entry.stop) node.append(el("div", { class: "agi-label agi-truncated" }, entry.stop));
      } else {
        node.textContent = entry.text ?? "";
        if (entry.images) {
          node.append(el("div", { class: "agi-label" }, `${entry.images} image${entry.images > 1 ? "s" : ""} attached`));
        }
      }
      return node;
    }

    // Entries are rebuilt only when they changed (a render per transcript change would
    // restart every answer's Markdown rendering).
    function renderLog() {
      const entries = model.get("transcript") || [];
      const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 30;
      const nodes = entries.map((entry) => {
        if (!entry.streaming) live.delete(entry.id);
        const key = JSON.stringify(entry);
        const cached = views.get(entry.id);
        if (cached && cached.key === key) return cached.node;
        const node = entryNode(entry);
        views.set(entry.id, { key, node });
        return node;
      });
      const ids = new Set(entries.map((e) => e.id));
      for (const id of views.keys()) if (!ids.has(id)) views.delete(id);
      log.replaceChildren(...nodes);
      if (atBottom) log.scrollTop = log.scrollHeight;
    }

    function fillSelect(selectNode, options, current) {
      const values = options.map((opt) => (typeof opt === "string" ? { id: opt, label: opt } : opt));
      if (current && !values.some((o) => o.id === current)) values.unshift({ id: current, label: current });
      selectNode.replaceChildren(
        ...values.map((opt) => {
          const option = el("option", { value: opt.id }, opt.label);
          if (opt.id === current) option.selected = true;
          return option;
        }),
      );
    }

    function renderControls() {
      fillSelect(sessionSelect, model.get("sessions") || [], model.get("session_id"));
      fillSelect(modelSelect, model.get("models") || [], model.get("model"));
      fillSelect(agentSelect, model.get("agents") || [], model.get("agent"));
      const running = Boolean(model.get("running"));
      send.disabled = running;
      stop.disabled = !running;
      stop.classList.toggle("jp-mod-warn", running);
      stop.classList.toggle("jp-mod-reject", !running);
      root.classList.toggle("agi-running", running);
      status.textContent = model.get("status") || "";
    }

    function onCustom(msg) {
      if (!msg || msg.type !== "delta") return;
      live.set(msg.entry, (live.get(msg.entry) || "") + msg.text);
      const view = views.get(msg.entry);
      if (view && view.node.markdown) {
        view.node.markdown.set(live.get(msg.entry));
        log.scrollTop = log.scrollHeight;
      } else {
        renderLog();
      }
    }

    function submit() {
      const text = input.value.trim();
      if (!text || model.get("running")) return;
      const images = attached.splice(0);
      input.value = "";
      renderAttached();
      Promise.all(images.map((image) => image.file.arrayBuffer())).then((buffers) => {
        model.send({ type: "send", text }, undefined, buffers);
        images.forEach((image) => URL.revokeObjectURL(image.url));
      });
    }

    send.addEventListener("click", submit);
    stop.addEventListener("click", () => model.send({ type: "stop" }));
    newButton.addEventListener("click", () => model.send({ type: "new_session" }));
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        submit();
      }
    });
    for (const [selectNode, trait] of [
      [sessionSelect, "session_id"],
      [modelSelect, "model"],
      [agentSelect, "agent"],
    ]) {
      selectNode.addEventListener("change", () => {
        model.set(trait, selectNode.value);
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
