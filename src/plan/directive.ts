// Directives name a claim template and what it should become, as Juju's
// application-storage does: `pgdata=2Gi`, `pgdata=2Gi,fast-ssd`, `pgdata=fast-ssd`.
// Items after `=` are comma-separated, in any order: a Kubernetes quantity is the size,
// anything else a storage class name; `size=` and `class=` say which explicitly when a
// class name could be read as a quantity (`pgdata=class=1e3`). `vac=NAME` names a
// VolumeAttributesClass (`pgdata=2Gi,vac=fast-iops`): always explicit, since a bare name
// is a storage class.
import { formatQuantity, parseStorageSize, QuantityError } from "./quantity";

export interface Directive {
  claim: string;
  /** Canonical size, as Kubernetes would store it. */
  size?: string;
  storageClass?: string;
  /** spec.volumeAttributesClassName of the template (and, when asked, of existing claims). */
  volumeAttributesClass?: string;
  /** The template's metadata.labels, made equal to these (from a manifest, set -f); absent: left as they are. */
  labels?: Record<string, string>;
  /** The template's metadata.annotations, made equal to these; absent: left as they are. */
  annotations?: Record<string, string>;
  /** The template's spec.accessModes, made equal to these; absent: left as they are. */
  accessModes?: string[];
}

/** A map as a directive prints it: `{app=db,tier=data}`, keys sorted. */
const mapText = (m: Record<string, string>) =>
  `{${Object.keys(m)
    .sort()
    .map((k) => `${k}=${m[k]}`)
    .join(",")}}`;

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

export function formatDirective(d: Directive): string {
  const vac = d.volumeAttributesClass !== undefined ? `vac=${d.volumeAttributesClass}` : undefined;
  const labels = d.labels !== undefined ? `labels=${mapText(d.labels)}` : undefined;
  const annotations = d.annotations !== undefined ? `annotations=${mapText(d.annotations)}` : undefined;
  const access = d.accessModes !== undefined ? `access=${d.accessModes.join("+")}` : undefined;
  return `${d.claim}=${[d.size, d.storageClass, vac, labels, annotations, access].filter((x) => x !== undefined).join(",")}`;
}
