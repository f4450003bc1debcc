// Data output for -o json and -o yaml, stable and unfolded like kubectl's.
import { stringify } from "yaml";

export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 4)}\n`;
}

export function formatData(value: unknown, output: "json" | "yaml"): string {
  return output === "json" ? toJson(value) : toYaml(value);
}
