// Tables that look like kubectl's: no borders, upper-case headers, columns three spaces apart.
import Table from "cli-table3";

export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const table = new Table({
    head: headers.map((h) => h.toUpperCase()),
    chars: {
      top: "", "top-mid": "", "top-left": "", "top-right": "",
      bottom: "", "bottom-mid": "", "bottom-left": "", "bottom-right": "",
      left: "", "left-mid": "", mid: "", "mid-mid": "",
      right: "", "right-mid": "", middle: "   ",
    },
    style: { head: [], border: [], "padding-left": 0, "padding-right": 0, compact: true },
  });
  for (const row of rows) table.push([...row]);
  return `${table
    .toString()
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")}\n`;
}
