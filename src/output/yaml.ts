// Data output for -o json and -o yaml, stable and unfolded like kubectl's.

export function toYaml(value: unknown): string {
  // The yaml package is loaded when YAML is asked for: initialising it costs milliseconds on
  // every start, and most runs print tables or JSON. (require, not import(): the function
  // stays synchronous, and the bundle still carries the package.)
  const { stringify } = require("yaml") as typeof import("yaml");
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 4)}\n`;
}
