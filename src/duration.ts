// Durations as kubectl reads them: Go's time.ParseDuration ("1m30s", "90s", "1h", "1.5h",
// "250ms"), and, for --request-timeout only, also a bare number of seconds ("30", "0" = none),
// as clientcmd's ParseTimeout. Pure: it parses, and the command line turns a failure into a
// usage error; the HTTP client only ever sees milliseconds.

const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration, in milliseconds; undefined when Go would refuse the text. */
export function parseGoDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    sign = s.startsWith("-") ? -1 : 1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  let total = 0;
  const part = /^(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  while (s.length) {
    const m = part.exec(s);
    if (!m) return undefined; // a number without a unit, or an unknown unit
    total += Number(m[1]) * unitMs[m[2]!]!;
    s = s.slice(m[0].length);
  }
  return sign * total;
}

/** clientcmd's ParseTimeout: a bare integer is seconds, else a Go duration; 0 means no timeout. */
export function parseRequestTimeout(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const ms = parseGoDuration(text);
  return ms === undefined || ms < 0 ? undefined : ms;
}
