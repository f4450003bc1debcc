// Ordinals as a person reads them, for the plan and for show.

/** 1 -> "1"; [1, 2] -> "1 and 2"; [0, 2, 5] -> "0, 2 and 5"; runs of three or more -> "1 to 4". */
export function formatOrdinals(ordinals: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < ordinals.length; ) {
    let j = i;
    while (j + 1 < ordinals.length && ordinals[j + 1] === ordinals[j]! + 1) j++;
    if (j - i >= 2) parts.push(`${ordinals[i]} to ${ordinals[j]}`);
    else for (let k = i; k <= j; k++) parts.push(String(ordinals[k]));
    i = j + 1;
  }
  return parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}` : (parts[0] ?? "");
}

export function ordinalsWord(ordinals: readonly number[]): string {
  return `${ordinals.length === 1 ? "ordinal" : "ordinals"} ${formatOrdinals(ordinals)}`;
}
