// city-weather: one tool, one HTTP request through the host's fetch.
// The API answers like Open-Meteo's /v1/forecast:
//   {"current": {"temperature_2m": 21.4, "wind_speed_10m": 11.2}, "current_units": {...}}

export async function invoke(toolName, params, ctx) {
  if (toolName !== "city_weather_now") {
    throw new Error("unknown tool " + toolName);
  }
  const units = params.units === "fahrenheit" ? "fahrenheit" : "celsius";
  const c = ctx.config;
  ctx.progress("Checking the weather in " + c.city + "…");
  const url =
    c.api_url +
    "?latitude=" + encodeURIComponent(c.latitude) +
    "&longitude=" + encodeURIComponent(c.longitude) +
    "&current=temperature_2m,wind_speed_10m" +
    "&temperature_unit=" + units;
  const headers = c.api_key ? { authorization: "Bearer " + c.api_key } : {};
  const res = await fetch(url, { headers });
  ctx.log("forecast API answered " + res.status);
  if (!res.ok) {
    throw new Error("the weather service answered " + res.status);
  }
  const data = await res.json();
  const now = data.current || {};
  if (typeof now.temperature_2m !== "number") {
    throw new Error("the weather service's answer has no current temperature");
  }
  return {
    city: c.city,
    temperature: now.temperature_2m,
    units,
    wind_speed_kmh: typeof now.wind_speed_10m === "number" ? now.wind_speed_10m : null,
  };
}
