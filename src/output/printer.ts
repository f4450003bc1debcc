// One place that turns a command's result into what -o asks for, as kubectl prints: json and
// yaml print the data, name prints `kind.group/name`, table and wide print the human text.
import type { Writable } from "../streams";
import { toJson, toYaml } from "./yaml";

export type OutputFormat = "table" | "wide" | "json" | "yaml" | "name";

export interface Printable {
  /** What -o json|yaml prints (made only when asked for: a sealed plan list costs a digest per plan). */
  data: () => unknown;
  /** What a person reads (-o table|wide, or no -o). */
  text: () => string;
  /** What -o name prints; commands without -o name leave it out. */
  name?: () => string;
}

export function print(out: Writable, format: OutputFormat | undefined, p: Printable): void {
  if (format === "json") out.write(toJson(p.data()));
  else if (format === "yaml") out.write(toYaml(p.data()));
  else if (format === "name" && p.name) out.write(p.name());
  else out.write(p.text());
}
