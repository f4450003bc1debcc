// The labels and annotations of a claim template, changed as `kubectl label` and `kubectl annotate`
// change an object's: KEY=VALUE sets a key, KEY- removes it, and a key that already has another
// value changes only with --overwrite. On the command line each names its claim template first:
// `--template-label data:tier=gold`, `--template-annotation data:backup-`. A claim template's name
// never holds ':' and a key never ends with '-', so neither form can be read as another. Pure.
import type { StatefulSet } from "../api/types";

/** Keys set to a value, or removed (null): what a change does to one map of a template. */
export type MapEdits = Record<string, string | null>;

export type MetadataKind = "label" | "annotation";

/** The command-line flag of each kind, as the request text writes it. */
export const metadataFlag: Record<MetadataKind, string> = { label: "--template-label", annotation: "--template-annotation" };

export class TemplateMetadataError extends Error {}

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const qualifiedName = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Why a key is not a valid label or annotation key (Kubernetes' qualified name), or undefined. */
function badKey(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length > 253 || !dnsSubdomain.test(prefix))) return `its prefix "${prefix}" is not a DNS subdomain (lower-case letters, digits, '-' and '.')`;
  if (name.length === 0 || name.length > 63 || !qualifiedName.test(name))
    return "a key is an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
  return undefined;
}

export interface MetadataEdit {
  claim: string;
  kind: MetadataKind;
  key: string;
  /** null: remove the key. */
  value: string | null;
}

/** One `--template-label` or `--template-annotation` value: CLAIM:KEY=VALUE or CLAIM:KEY-. */
export function parseMetadataEdit(text: string, kind: MetadataKind): MetadataEdit {
  const flag = metadataFlag[kind];
  const form = `write CLAIM:KEY=VALUE to set or CLAIM:KEY- to remove, for example ${flag} data:${kind === "label" ? "tier=gold" : "backup=daily"}`;
  const colon = text.indexOf(":");
  if (colon < 0) throw new TemplateMetadataError(`${flag} "${text}" names no claim template: ${form}`);
  const claim = text.slice(0, colon);
  const rest = text.slice(colon + 1);
  if (claim.length > 63 || !dnsLabel.test(claim)) throw new TemplateMetadataError(`${flag} "${text}": "${claim}" is not a valid claim template name (lower-case letters, digits and '-'); ${form}`);
  const eq = rest.indexOf("=");
  const remove = eq < 0 && rest.endsWith("-");
  if (eq < 0 && !remove) throw new TemplateMetadataError(`${flag} "${text}" neither sets nor removes ${kind === "label" ? "a label" : "an annotation"}: ${form}`);
  const key = remove ? rest.slice(0, -1) : rest.slice(0, eq);
  const why = badKey(key);
  if (why) throw new TemplateMetadataError(`${flag} "${text}": "${key}" is not a valid ${kind} key: ${why}`);
  if (remove) return { claim, kind, key, value: null };
  const value = rest.slice(eq + 1);
  if (kind === "label" && (value.length > 63 || !labelValue.test(value))) {
    throw new TemplateMetadataError(
      `${flag} "${text}": "${value}" is not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit); one KEY=VALUE per ${flag}, repeat the flag for more, or use ${metadataFlag.annotation} for free text`,
    );
  }
  return { claim, kind, key, value };
}

/** The edits of every flag, per claim template and kind; a key given twice for one template is an error, as in kubectl. */
export function groupEdits(edits: readonly MetadataEdit[]): Map<string, Record<MetadataKind, MapEdits | undefined>> {
  const out = new Map<string, Record<MetadataKind, MapEdits | undefined>>();
  for (const e of edits) {
    const entry = out.get(e.claim) ?? { label: undefined, annotation: undefined };
    const map = (entry[e.kind] ??= {});
    if (e.key in map) throw new TemplateMetadataError(`${e.kind} "${e.key}" of claim template ${e.claim} is given twice; give it once (KEY=VALUE to set, or KEY- to remove)`);
    map[e.key] = e.value;
    out.set(e.claim, entry);
  }
  return out;
}

/** The map after the edits; undefined stays undefined when nothing is set. */
export function applyEdits(map: Readonly<Record<string, string>> | undefined, edits: MapEdits): Record<string, string> {
  const out: Record<string, string> = { ...(map ?? {}) };
  for (const [key, value] of Object.entries(edits)) {
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out;
}

/** The edits that make `from` equal to `to`: keys set where they differ, removed where `to` has none. Keys sorted. */
export function editsBetween(from: Readonly<Record<string, string>> | undefined, to: Readonly<Record<string, string>> | undefined): MapEdits {
  const a = from ?? {};
  const b = to ?? {};
  const edits: MapEdits = {};
  for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (!(key in b)) edits[key] = null;
    else if (a[key] !== b[key]) edits[key] = b[key]!;
  }
  return edits;
}

/** A word as a POSIX shell reads it back: quoted when it holds anything but plain characters. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=,+@%^-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The flags that make these edits, keys sorted: `--template-label=data:tier=gold`, `--template-label=data:old-`. */
export function editWords(claim: string, kind: MetadataKind, edits: MapEdits): string[] {
  return Object.keys(edits)
    .sort()
    .map((key) => {
      const value = edits[key];
      return shellWord(`${metadataFlag[kind]}=${claim}:${key}${value === null ? "-" : `=${value}`}`);
    });
}

export interface MetadataFindings {
  refusals: string[];
  warnings: string[];
}

/**
 * What kubectl label and annotate would say about these edits of the live templates: a key that
 * has another value changes only with --overwrite (refused otherwise, nothing changed), and a key
 * to remove that is not there is only a warning.
 */
export function checkEdits(sts: StatefulSet, claim: string, kind: MetadataKind, edits: MapEdits, overwrite: boolean): MetadataFindings {
  const template = (sts.spec.volumeClaimTemplates ?? []).find((t) => t.metadata.name === claim);
  const findings: MetadataFindings = { refusals: [], warnings: [] };
  if (!template) return findings;
  const now = (kind === "label" ? template.metadata.labels : template.metadata.annotations) ?? {};
  for (const [key, value] of Object.entries(edits)) {
    if (value === null && !(key in now)) findings.warnings.push(`${kind} "${key}" not found on claim template ${claim}; nothing to remove`);
    if (value !== null && key in now && now[key] !== value && !overwrite) {
      findings.refusals.push(`'${key}' already has a value (${now[key]}) on claim template ${claim}, and --overwrite is false; add --overwrite to change it`);
    }
  }
  return findings;
}
