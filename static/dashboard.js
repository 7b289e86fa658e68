// Root dashboard: the little the pages need from a script. Everything
// works without it except the live admin chat stream.
"use strict";

// <form data-confirm="..."> asks before it submits (deletes, revocations).
document.addEventListener("submit", (ev) => {
  const form = ev.target;
  const question = form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    ev.preventDefault();
  }
});

// /chat: send the message to /chat/stream and show the turn's NDJSON
// events as they arrive (without this the form posts and the page shows
// the finished exchange).
(() => {
  const form = document.getElementById("chat-form");
  if (!form) return;
  const log = document.getElementById("chat-log");
  const input = document.getElementById("message");
  const button = document.getElementById("send");
  const status = document.getElementById("chat-status");
  const threadKey = document.getElementById("thread_key");
  const add = (cls, label, text) => {
    const li = document.createElement("li");
    li.className = cls;
    if (label) {
      const b = document.createElement("strong");
      b.textContent = label + " ";
      li.appendChild(b);
    }
    const span = document.createElement("span");
    span.textContent = text;
    li.appendChild(span);
    log.appendChild(li);
    return span;
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const message = input.value.trim();
    if (!message) return;
    add("me", "You:", message).className = "asked";
    input.value = "";
    button.disabled = true;
    status.textContent = "Thinking…";
    let answer = null;
    try {
      const resp = await fetch("/chat/stream", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          csrf: form.elements.csrf.value,
          message,
          thread_key: threadKey.value || null,
        }),
      });
      if (!resp.ok || !resp.body) {
        add("event error", "", "The message could not be sent (" + resp.status + ").");
        return;
      }
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let buffered = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        let nl;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const raw = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (!raw.trim()) continue;
          const e = JSON.parse(raw);
          if (e.type === "phase") {
            status.textContent = e.phase === "answering" ? "Answering…" : "Thinking…";
            add("event phase", "", e.phase);
          } else if (e.type === "tool") {
            add("event tool", "", "tool " + e.name + " " + e.status +
              (e.success === false ? " (failed)" : ""));
          } else if (e.type === "progress") {
            add("event progress", "", e.message);
          } else if (e.type === "answer") {
            if (!answer) { answer = add("bot", "Root:", ""); answer.className = "answer"; }
            answer.textContent += e.delta;
          } else if (e.type === "done") {
            if (!answer) { answer = add("bot", "Root:", ""); answer.className = "answer"; }
            answer.textContent = e.response;
            threadKey.value = e.thread_key;
            if (e.trace_id) {
              const a = document.createElement("a");
              a.href = "/traces/" + encodeURIComponent(e.trace_id);
              a.textContent = "trace " + e.trace_id;
              const li = document.createElement("li");
              li.className = "event trace";
              li.appendChild(a);
              log.appendChild(li);
            }
          } else if (e.type === "error") {
            add("event error", "", e.message);
          }
        }
      }
    } catch (err) {
      add("event error", "", "The connection was lost. Please try again.");
    } finally {
      status.textContent = "";
      button.disabled = false;
      input.focus();
    }
  });
})();
