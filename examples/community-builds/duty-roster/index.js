// duty-roster: pure computation over the install's config.

const DAY_MS = 24 * 60 * 60 * 1000;

function day(text, field) {
  if (text === undefined) {
    const now = new Date();
    return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  }
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    throw new Error(field + " must be a date like 2026-03-01");
  }
  const ms = Date.parse(text + "T00:00:00Z");
  if (Number.isNaN(ms)) {
    throw new Error(field + " is not a real date");
  }
  return ms;
}

function iso(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

function turnAt(config, ms) {
  const period = config.period_days || 7;
  const start = day(config.start_date, "start_date");
  const index = Math.floor((ms - start) / (period * DAY_MS));
  const n = config.people.length;
  const who = config.people[((index % n) + n) % n];
  const from = start + index * period * DAY_MS;
  return { person: who, from: iso(from), until: iso(from + (period - 1) * DAY_MS) };
}

export function invoke(toolName, params, ctx) {
  const config = ctx.config;
  if (toolName === "who_is_on_duty") {
    const turn = turnAt(config, day(params.date, "date"));
    return { duty: config.duty, date: iso(day(params.date, "date")), ...turn };
  }
  if (toolName === "upcoming_duty") {
    const period = (config.period_days || 7) * DAY_MS;
    const count = params.turns || 4;
    let at = day(params.from, "from");
    const turns = [];
    for (let i = 0; i < count; i++) {
      const turn = turnAt(config, at);
      turns.push(turn);
      at = day(turn.from, "from") + period;
    }
    ctx.log("listed " + turns.length + " turns");
    return { duty: config.duty, turns };
  }
  throw new Error("unknown tool " + toolName);
}
