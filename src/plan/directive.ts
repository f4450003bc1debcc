// Directives name a claim template and what it should become, as Juju's
// application-storage does: `pgdata=2Gi`, `pgdata=2Gi,fast-ssd`, `pgdata=fast-ssd`.
// Items after `=` are comma-separated, in any order: a Kubernetes quantity is the size,
// anything else a storage class name; `size=` and `class=` say which explicitly when a
// class name could be read as a quantity (`pgdata=class=1e3`). `vac=NAME` names a
// VolumeAttributesClass (`pgdata=2Gi,vac=fast-iops`): always explicit, since a bare name
// is a storage class.
import { formatQuantity, parseStorageSize, QuantityError } from "./quantity";
import { editWords, groupEdits, type MapEdits, parseMetadataEdit, TemplateMetadataError } from "./template-metadata";

export interface Directive {
  claim: string;
  /** Canonical size, as Kubernetes would store it. */
  size?: string;
  storageClass?: string;
  /** spec.volumeAttributesClassName of the template (and, when asked, of existing claims). */
  volumeAttributesClass?: string;
  /** Keys of the template's metadata.labels set or removed (--template-label, or what set -f makes equal to the manifest); absent: left as they are. */
  labels?: MapEdits;
  /** Keys of the template's metadata.annotations set or removed (--template-annotation, set -f); absent: left as they are. */
  annotations?: MapEdits;
  /** The template's spec.accessModes, made equal to these; absent: left as they are. */
  accessModes?: string[];
}

export class DirectiveError extends Error {}

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function parseDirective(text: string): Directive {
  const eq = text.indexOf("=");
  if (eq < 0) throw new DirectiveError(`"${text}" is not a directive: write CLAIM=SIZE[,CLASS], for example pgdata=2Gi`);
  const claim = text.slice(0, eq);
  const rest = text.slice(eq + 1);
  if (!claim) throw new DirectiveError(`"${text}" names no claim template: write CLAIM=SIZE[,CLASS], for example pgdata=2Gi`);
  if (claim.length > 63 || !dnsLabel.test(claim)) {
    throw new DirectiveError(`"${claim}" is not a valid claim template name (lower-case letters, digits and '-')`);
  }
  if (!rest) throw new DirectiveError(`"${text}" gives neither a size nor a storage class: write ${claim}=SIZE[,CLASS], for example ${claim}=2Gi`);
  const directive: Directive = { claim };
  for (const item of rest.split(",")) {
    const explicit = /^(size|class|vac)=(.*)$/.exec(item);
    const kind = explicit ? explicit[1] : undefined;
    const value = explicit ? explicit[2]! : item;
    if (!value) throw new DirectiveError(`"${text}" has an empty item: write ${claim}=SIZE[,CLASS]`);
    if (kind === "vac") {
      if (directive.volumeAttributesClass !== undefined) throw new DirectiveError(`"${text}" gives two volume attributes classes for ${claim}; give one`);
      if (value.length > 253 || !dnsSubdomain.test(value)) throw new DirectiveError(`"${value}" is not a valid volume attributes class name`);
      directive.volumeAttributesClass = value;
    } else if (kind === "size" || (kind === undefined && /^[+-]?[0-9.]/.test(value))) {
      if (directive.size !== undefined) throw new DirectiveError(`"${text}" gives two sizes for ${claim}; give one`);
      try {
        directive.size = formatQuantity(parseStorageSize(value));
      } catch (e) {
        if (e instanceof QuantityError) throw new DirectiveError(`invalid size for ${claim}: ${e.message}; use a quantity such as 10Gi or 500M`);
        throw e;
      }
    } else {
      if (directive.storageClass !== undefined) throw new DirectiveError(`"${text}" gives two storage classes for ${claim}; give one`);
      if (value.length > 253 || !dnsSubdomain.test(value)) {
        throw new DirectiveError(`"${value}" is neither a size (such as 10Gi) nor a valid storage class name`);
      }
      directive.storageClass = value;
    }
  }
  return directive;
}

/** Parses all directives; a claim template named twice is an error. */
export function parseDirectives(texts: readonly string[]): Directive[] {
  if (texts.length === 0) throw new DirectiveError("no change given: add at least one CLAIM=SIZE[,CLASS], for example pgdata=2Gi");
  const seen = new Set<string>();
  return texts.map((t) => {
    const d = parseDirective(t);
    if (seen.has(d.claim)) throw new DirectiveError(`claim template "${d.claim}" is named twice; give one directive per claim template`);
    seen.add(d.claim);
    return d;
  });
}

/**
 * The directive as the words of a command line that asks for it again: `pgdata=2Gi,fast`, then a
 * `--template-label=CLAIM:KEY=VALUE` (or `KEY-`) per label and the same for annotations, keys
 * sorted, each quoted for the shell where it needs it. (Access modes come only from set -f.)
 */
export function formatDirective(d: Directive): string {
  const vac = d.volumeAttributesClass !== undefined ? `vac=${d.volumeAttributesClass}` : undefined;
  const access = d.accessModes !== undefined ? `access=${d.accessModes.join("+")}` : undefined;
  const items = [d.size, d.storageClass, vac, access].filter((x) => x !== undefined);
  const words = [
    ...(items.length ? [`${d.claim}=${items.join(",")}`] : []),
    ...(d.labels ? editWords(d.claim, "label", d.labels) : []),
    ...(d.annotations ? editWords(d.claim, "annotation", d.annotations) : []),
  ];
  return words.length ? words.join(" ") : `${d.claim}=`;
}

/** What the command line asks of the claim templates: its directives, and its --template-label and --template-annotation values. */
export interface ChangeWords {
  directives: readonly string[];
  labels?: readonly string[];
  annotations?: readonly string[];
}

/**
 * The directives of a command line: each CLAIM=... directive, with the labels and annotations of
 * its template added; a template whose labels or annotations alone change gets a directive of its
 * own, after the others, in the order the flags named them.
 */
export function parseChangeWords(words: ChangeWords): Directive[] {
  const labels = words.labels ?? [];
  const annotations = words.annotations ?? [];
  if (words.directives.length === 0 && labels.length === 0 && annotations.length === 0) return parseDirectives([]);
  let edits: ReturnType<typeof groupEdits>;
  try {
    edits = groupEdits([...labels.map((t) => parseMetadataEdit(t, "label")), ...annotations.map((t) => parseMetadataEdit(t, "annotation"))]);
  } catch (e) {
    if (e instanceof TemplateMetadataError) throw new DirectiveError(e.message);
    throw e;
  }
  const directives = words.directives.length ? parseDirectives(words.directives) : [];
  for (const [claim, { label, annotation }] of edits) {
    let d = directives.find((x) => x.claim === claim);
    if (!d) directives.push((d = { claim }));
    if (label) d.labels = label;
    if (annotation) d.annotations = annotation;
  }
  return directives;
}
