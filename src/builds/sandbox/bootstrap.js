// Evaluated once in each sandbox child before the build's module. It is an
// expression: a function of the two host functions (emit a log/progress
// line; perform one guarded HTTP request) that installs `fetch` and
// `console` and returns the runner. Nothing host-side is left on
// `globalThis`, so the module can reach the host only through these.
(function (emit, hostFetch) {
  "use strict";
  const text = (v) => (typeof v === "string" ? v : (() => {
    try { return JSON.stringify(v); } catch (_) { return String(v); }
  })());
  const line = (kind) => (...parts) => emit(kind, parts.map(text).join(" "));
  const log = line("log");
  globalThis.console = Object.freeze({ log, info: log, warn: log, error: log, debug: log });
  globalThis.fetch = async function fetch(url, init) {
    const opts = init || {};
    const request = {
      url: String(url),
      method: opts.method ? String(opts.method) : "GET",
      headers: opts.headers || {},
      body: opts.body === undefined || opts.body === null ? null : text(opts.body),
    };
    const answer = JSON.parse(hostFetch(JSON.stringify(request)));
    if (answer.error !== undefined) {
      throw new TypeError("fetch failed: " + answer.error);
    }
    const body = answer.body;
    return Object.freeze({
      status: answer.status,
      ok: answer.status >= 200 && answer.status < 300,
      headers: Object.freeze(answer.headers),
      text: async () => body,
      json: async () => JSON.parse(body),
    });
  };
  return async function run(invoke, tool, paramsJson, ctxJson) {
    if (typeof invoke !== "function") {
      throw new TypeError("the module does not export an invoke(toolName, params, ctx) function");
    }
    const c = JSON.parse(ctxJson);
    const ctx = Object.freeze({
      config: c.config,
      principal: c.principal,
      channel: c.channel,
      log: line("log"),
      progress: line("progress"),
    });
    const result = await invoke(tool, JSON.parse(paramsJson), ctx);
    const json = JSON.stringify(result === undefined ? null : result);
    return json === undefined ? "null" : json;
  };
})
