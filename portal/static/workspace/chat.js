// The chat page: each question is a streamed POST /api/rag/chat (the API's Server-Sent Events:
// sources, then the answer's deltas, then done or error). The conversation lives in the page;
// the answer's footnotes [N] open the cited passage at its page in a dialog.
"use strict";

(() => {
  const form = document.getElementById("chat-form");
  if (!form) return;
  const log = document.getElementById("conversation");
  const input = document.getElementById("chat-message");
  const status = document.getElementById("chat-status");
  const send = document.getElementById("chat-send");
  const dialog = document.getElementById("passage-dialog");
  const dialogBody = document.getElementById("passage-dialog-body");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const maxMessages = Number(form.dataset.maxMessages) || 20;
  const citation = /\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]/g;
  let messages = [];

  // The page's passage URL names document "DOCUMENT", chunk 0: put in the source's own.
  function passageUrl(source) {
    return form.dataset.passageUrl
      .replace("DOCUMENT", encodeURIComponent(source.document_id))
      .replace(/\/0\/$/, `/${source.chunk_index}/`);
  }

  function collections() {
    return [...form.querySelectorAll("input[name=c]:checked")].map((box) => {
      const [scope, ...name] = box.value.split(":");
      return { name: name.join(":"), shared: scope === "shared" };
    });
  }

  function requestBody() {
    // The history the API takes ends with the question; older turns fall off the front.
    const body = { messages: messages.slice(-maxMessages), stream: true };
    const profile = form.elements.profile.value;
    if (profile) body.profile = profile;
    else body.collections = collections();
    return body;
  }

  function addTurn(role, text) {
    const item = document.createElement("li");
    item.className = `turn turn-${role}`;
    const who = document.createElement("p");
    who.className = "who";
    who.textContent = role === "user" ? "You" : "Answer";
    const content = document.createElement("div");
    content.className = "content";
    content.textContent = text;
    item.append(who, content);
    log.append(item);
    return item;
  }

  function footnote(number, source) {
    const link = document.createElement("a");
    link.href = passageUrl(source);
    link.className = "footnote";
    link.textContent = String(number);
    link.setAttribute("aria-label", `Source ${number}: ${source.citation}`);
    return link;
  }

  // The answer's text with each [N] that names a source as a link to it.
  function renderAnswer(element, text, sources) {
    const byId = new Map(sources.map((source) => [source.footnote_id, source]));
    element.textContent = "";
    let last = 0;
    for (const match of text.matchAll(citation)) {
      element.append(text.slice(last, match.index), "[");
      match[1].split(",").forEach((part, i) => {
        const number = Number(part.trim());
        const source = byId.get(number);
        if (i) element.append(", ");
        element.append(source ? footnote(number, source) : String(number));
      });
      element.append("]");
      last = match.index + match[0].length;
    }
    element.append(text.slice(last));
  }

  // "p. 3", "pp. 3–4" (as the citations name pages), or "" for a source without pages.
  function pages(source) {
    const first = source.page_number;
    if (!first) return "";
    const last = source.page_end;
    return last && last > first ? `pp. ${first}\u2013${last}` : `p. ${first}`;
  }

  function renderSources(turn, sources) {
    if (!sources.length) return;
    const box = document.createElement("details");
    box.className = "sources";
    box.open = true;
    const summary = document.createElement("summary");
    summary.textContent = `Sources (${sources.length})`;
    const list = document.createElement("ol");
    for (const source of sources) {
      const item = document.createElement("li");
      item.value = source.footnote_id;
      const link = document.createElement("a");
      link.href = passageUrl(source);
      link.className = "source-link";
      // The page first: a long title is cut short on a narrow screen, the page never.
      link.textContent = pages(source) ? `${pages(source)} · ${source.title}` : source.title;
      link.title = source.citation;
      const excerpt = document.createElement("p");
      excerpt.className = "excerpt";
      excerpt.textContent = source.excerpt;
      item.append(link, excerpt);
      list.append(item);
    }
    box.append(summary, list);
    turn.append(box);
  }

  function showError(turn, message) {
    const content = turn.querySelector(".content");
    content.textContent = message;
    content.setAttribute("role", "alert");
    turn.classList.add("turn-error");
  }

  // The response's Server-Sent Events, parsed as they arrive.
  async function* events(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (data) yield { name, data: JSON.parse(data) };
      }
    }
  }

  async function ask(question) {
    messages.push({ role: "user", content: question });
    addTurn("user", question);
    const turn = addTurn("assistant", "");
    turn.setAttribute("aria-busy", "true");
    const content = turn.querySelector(".content");
    let sources = [];
    let text = "";
    const response = await fetch(form.dataset.chatUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "text/event-stream",
        "X-CSRFToken": csrf,
      },
      body: JSON.stringify(requestBody()),
    });
    const type = response.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      // Refused before the API's view ran (e.g. a body too large): JSON or text.
      const body = await response.text();
      let message = body;
      try {
        message = JSON.parse(body).error || body;
      } catch {
        // plain text
      }
      showError(turn, message || `The chat failed (HTTP ${response.status}).`);
      messages.pop();
      return;
    }
    for await (const { name, data } of events(response)) {
      if (name === "sources") {
        sources = data.sources;
        renderSources(turn, sources);
      } else if (name === "delta") {
        text += data.text;
        content.textContent = text;
      } else if (name === "done") {
        if (data.answer === null) {
          content.textContent = data.message;
          content.classList.add("notice");
        } else {
          renderAnswer(content, data.answer, sources);
          messages.push({ role: "assistant", content: data.answer });
        }
      } else if (name === "error") {
        showError(turn, data.error);
        messages.pop();
      }
    }
    turn.removeAttribute("aria-busy");
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) {
      status.textContent = "Write a question first.";
      input.focus();
      return;
    }
    if (!form.elements.profile.value && !collections().length) {
      status.textContent = "Choose a retrieval profile or at least one collection.";
      return;
    }
    input.value = "";
    send.disabled = true;
    status.textContent = "Answering…";
    try {
      await ask(question);
      status.textContent = "";
    } catch (error) {
      status.textContent = `The answer could not be read: ${error.message}`;
    } finally {
      send.disabled = false;
      input.focus();
    }
  });

  // Enter sends, Shift+Enter starts a new line.
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  document.getElementById("chat-new").addEventListener("click", () => {
    messages = [];
    log.textContent = "";
    status.textContent = "A new conversation.";
    input.focus();
  });

  // A footnote or source opens its passage in the dialog (a modified click: the page itself).
  log.addEventListener("click", async (event) => {
    const link = event.target.closest("a.footnote, a.source-link");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    const response = await fetch(link.href, { headers: { "HX-Request": "true" } });
    // The server's fragment, escaped by its templates (an error is a fragment too).
    dialogBody.innerHTML = await response.text();
    dialog.showModal();
    const passage = document.getElementById("passage");
    if (passage) {
      passage.scrollIntoView({ block: "center" });
      passage.focus();
    }
  });
})();
