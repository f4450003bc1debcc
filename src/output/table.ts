// Tables that look like kubectl's: no borders, upper-case headers, columns three spaces apart.
// Written out rather than taken from a table library: show prints a row per claim (hundreds),
// and a general-purpose library spent most of show's run time on layout features (spans,
// wrapping, borders) that these tables never use.

// Colour and other SGR sequences take no room on the screen.
const sgr = /\u001b\[[0-9;]*m/g;

/** Columns a cell takes: its characters (code points), as kubectl's tabwriter counts them. */
function width(cell: string): number {
  let n = 0;
  for (const _ of cell.includes("\u001b") ? cell.replace(sgr, "") : cell) n++;
  return n;
}

/** noHeaders: kubectl's --no-headers, the rows alone, as wide as they need. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[], opts: { noHeaders?: boolean } = {}): string {
  const lines = opts.noHeaders ? [...rows] : [headers.map((h) => h.toUpperCase()), ...rows];
  if (lines.length === 0) return "";
  const columns = Math.max(...lines.map((l) => l.length));
  const widths = new Array<number>(columns).fill(0);
  const cellWidths = lines.map((l) =>
    l.map((cell, c) => {
      const w = width(cell);
      if (w > widths[c]!) widths[c] = w;
      return w;
    }),
  );
  let text = "";
  lines.forEach((l, i) => {
    let line = "";
    for (let c = 0; c < columns; c++) {
      const cell = l[c] ?? "";
      line += c === columns - 1 ? cell : cell + " ".repeat(widths[c]! - (cellWidths[i]![c] ?? 0) + 3);
    }
    text += `${line.trimEnd()}\n`;
  });
  return text;
}
