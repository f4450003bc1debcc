// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), exact.
//
//   <quantity>        ::= <signedNumber><suffix>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
//
// Values are kept as an exact fraction numerator / 10^scale with BigInt, so `1Gi` equals
// `1024Mi` and `2G` (2*10^9) never equals `2Gi` (2*2^30), with no floating point anywhere.

export type QuantityFormat = "BinarySI" | "DecimalSI" | "DecimalExponent";

export interface Quantity {
  /** The value is numerator / 10^scale. */
  readonly numerator: bigint;
  readonly scale: number;
  readonly format: QuantityFormat;
}

export class QuantityError extends Error {}

const binarySuffixes: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const decimalSuffixes: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const binaryNames = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
const decimalNames: Record<number, string> = { [-9]: "n", [-6]: "u", [-3]: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E" };

// Kubernetes refuses quantities whose magnitude it cannot hold; far past int64 there is no
// sensible storage size, and bounding the exponent keeps BigInt work small on absurd input.
const maxExponent = 64;
const numberPattern = /^([+-]?)(\d*)(?:\.(\d*))?(.*)$/;

/** Quantities parsed in this run: a plan of many StatefulSets compares the same few sizes again and again. */
const parsed = new Map<string, Quantity>();

/** Parses a quantity string with Kubernetes' grammar; throws QuantityError with a reason. */
export function parseQuantity(text: string): Quantity {
  const known = parsed.get(text);
  if (known) return known;
  const q = parseUncached(text);
  if (parsed.size < 4096) parsed.set(text, q);
  return q;
}

function parseUncached(text: string): Quantity {
  if (text.length === 0) throw new QuantityError("empty quantity");
  if (text.length > 256) throw new QuantityError("quantity too long");
  const m = numberPattern.exec(text);
  if (!m) throw new QuantityError(`"${text}" is not a quantity`);
  const [, sign, whole = "", fraction = "", suffix = ""] = m;
  if (whole.length === 0 && fraction.length === 0) throw new QuantityError(`"${text}" has no number`);
  let numerator = BigInt((whole || "0") + fraction);
  if (sign === "-") numerator = -numerator;
  let scale = fraction.length;
  let format: QuantityFormat;
  if (suffix in binarySuffixes) {
    numerator *= 1024n ** BigInt(binarySuffixes[suffix]!);
    format = "BinarySI";
  } else if (suffix in decimalSuffixes) {
    scale -= decimalSuffixes[suffix]!;
    format = "DecimalSI";
  } else {
    const exp = /^[eE]([+-]?\d+)$/.exec(suffix);
    if (!exp) throw new QuantityError(`"${text}" has an unknown suffix "${suffix}" (use Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E or an exponent such as e9)`);
    const e = Number(exp[1]);
    if (!Number.isSafeInteger(e) || Math.abs(e) > maxExponent) throw new QuantityError(`"${text}" is out of range`);
    scale -= e;
    format = "DecimalExponent";
  }
  return normalize({ numerator, scale, format });
}

/** Removes trailing decimal zeros and folds a negative scale into the numerator. */
function normalize(q: Quantity): Quantity {
  let { numerator, scale } = q;
  if (numerator === 0n) return { numerator: 0n, scale: 0, format: q.format };
  while (scale > 0 && numerator % 10n === 0n) {
    numerator /= 10n;
    scale -= 1;
  }
  if (scale < 0) {
    numerator *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { numerator, scale, format: q.format };
}

/** -1, 0 or 1, by value: compare(parse("1Gi"), parse("1024Mi")) === 0. */
export function compareQuantities(a: Quantity, b: Quantity): number {
  const scale = Math.max(a.scale, b.scale);
  const an = a.numerator * 10n ** BigInt(scale - a.scale);
  const bn = b.numerator * 10n ** BigInt(scale - b.scale);
  return an < bn ? -1 : an > bn ? 1 : 0;
}

export function sameQuantity(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return compareQuantities(parseQuantity(a), parseQuantity(b)) === 0;
  } catch {
    return a === b;
  }
}

/** The quantity, or undefined when there is none or it does not parse. */
export function tryParseQuantity(text: string | undefined): Quantity | undefined {
  if (text === undefined) return undefined;
  try {
    return parseQuantity(text);
  } catch {
    return undefined;
  }
}

/** a < b by value; false when either is missing or does not parse (nothing is decided on a guess). */
export function lessQuantity(a: string | undefined, b: string | undefined): boolean {
  const qa = tryParseQuantity(a);
  const qb = tryParseQuantity(b);
  return qa !== undefined && qb !== undefined && compareQuantities(qa, qb) < 0;
}

/** Bytes of a quantity text, or undefined (missing, unparsable, or a fraction of a byte). */
export function bytesOf(text: string | undefined): bigint | undefined {
  const q = tryParseQuantity(text);
  return q === undefined ? undefined : toBytes(q);
}

/** Bytes as Kubernetes would write them: binary suffixes where exact (`3Gi`), else decimal. */
export function formatBytes(bytes: bigint): string {
  return formatQuantity({ numerator: bytes, scale: 0, format: "BinarySI" });
}

/** The whole number of bytes, or undefined when the value has a fraction of a byte. */
export function toBytes(q: Quantity): bigint | undefined {
  if (q.scale === 0) return q.numerator;
  const d = 10n ** BigInt(q.scale);
  return q.numerator % d === 0n ? q.numerator / d : undefined;
}

export const maxInt64 = 2n ** 63n - 1n;

/**
 * Parses a storage size as this tool accepts it: a quantity of whole bytes, greater than
 * zero, within int64 (what the API server can store for a claim's request).
 */
export function parseStorageSize(text: string): Quantity {
  const q = parseQuantity(text);
  if (q.numerator <= 0n) throw new QuantityError(`size "${text}" must be greater than zero`);
  const bytes = toBytes(q);
  if (bytes === undefined) throw new QuantityError(`size "${text}" is not a whole number of bytes`);
  if (bytes > maxInt64) throw new QuantityError(`size "${text}" is too large`);
  return q;
}

/**
 * The canonical string Kubernetes would store, keeping the input's format: `2048Mi` -> `2Gi`,
 * `1500M` -> `1500M`, `2000M` -> `2G`, `1.5Gi` -> `1536Mi`.
 */
export function formatQuantity(q: Quantity): string {
  if (q.numerator === 0n) return "0";
  const bytes = toBytes(q);
  if (q.format === "BinarySI" && bytes !== undefined) {
    const abs = bytes < 0n ? -bytes : bytes;
    if (abs >= 1024n) {
      let i = 0;
      let n = bytes;
      while (i < binaryNames.length - 1 && n % 1024n === 0n) {
        n /= 1024n;
        i += 1;
      }
      if (i > 0) return `${n}${binaryNames[i]}`;
    }
  }
  // Decimal: the largest exponent that is a multiple of 3 and keeps an integer mantissa.
  let numerator = q.numerator;
  let exponent = -q.scale;
  while (numerator % 10n === 0n) {
    numerator /= 10n;
    exponent += 1;
  }
  let e3 = Math.floor(exponent / 3) * 3;
  if (q.format !== "DecimalExponent") e3 = Math.max(-9, Math.min(18, e3));
  numerator *= 10n ** BigInt(exponent - e3);
  if (q.format === "DecimalExponent") return e3 === 0 ? `${numerator}` : `${numerator}e${e3}`;
  return `${numerator}${decimalNames[e3]}`;
}

/** Canonical form of a quantity string; unparsable input is returned unchanged. */
export function canonical(text: string): string {
  try {
    return formatQuantity(parseQuantity(text));
  } catch {
    return text;
  }
}

const decimalSuffix = /^(\d+)(k|M|G|T|P|E)$/;

/**
 * A note when a size is written in decimal units (2G) beside sizes written in binary ones (1Gi):
 * most people who type 2G there mean 2Gi (Juju's storage directives do). The size keeps
 * kubectl's meaning; the note says both values in bytes and the binary spelling.
 */
export function decimalSizeNote(claim: string, size: string, beside: readonly (string | undefined)[]): string | undefined {
  const m = decimalSuffix.exec(size);
  const binary = beside.find((s) => s !== undefined && /^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei)$/.test(s));
  if (!m || binary === undefined) return undefined;
  const alternative = `${m[1]}${m[2] === "k" ? "K" : m[2]}i`;
  return `${claim}=${size} is ${bytesOf(size)} bytes (a decimal ${m[2]}), while ${binary} there is binary: for ${bytesOf(alternative)} bytes write ${claim}=${alternative}`;
}
