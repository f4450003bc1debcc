// Whether the namespace's ResourceQuotas leave room for growing existing claims, in exact byte
// arithmetic, and the refusal that names the quota when they do not. Pure.
import type { ResourceQuota } from "../api/types";
import { bytesOf, formatBytes } from "./quantity";
import { byName } from "./objects";
import type { Refusal } from "./types";
import type { QuotaCheck } from "./existing-claims-types";

export interface Growth {
  claim: string;
  storageClass?: string;
  /** What the quota charges for the claim now: the larger of its request and allocatedResources. */
  charged: string;
  to: string;
}

export const storagePerClass = ".storageclass.storage.k8s.io/requests.storage";

/**
 * Whether every ResourceQuota of the namespace leaves room for the growth: `requests.storage`
 * counts every claim, `<class>.storageclass.storage.k8s.io/requests.storage` the claims of that
 * class. Exact byte arithmetic (BigInt). Quotas with scopes are left to the server.
 */
export function checkQuotas(quotas: readonly ResourceQuota[], growth: readonly Growth[]): { checks: QuotaCheck[]; warnings: string[] } {
  const checks: QuotaCheck[] = [];
  const warnings: string[] = [];
  const delta = (g: Growth) => {
    const d = (bytesOf(g.to) ?? 0n) - (bytesOf(g.charged) ?? 0n);
    return d > 0n ? d : 0n;
  };
  for (const q of [...quotas].sort((a, b) => byName(a.metadata.name ?? "", b.metadata.name ?? ""))) {
    const name = q.metadata.name ?? "";
    const hardAll = { ...(q.spec?.hard ?? {}), ...(q.status?.hard ?? {}) };
    const resources = Object.keys(hardAll)
      .filter((r) => r === "requests.storage" || r.endsWith(storagePerClass))
      .sort();
    if (resources.length === 0) continue;
    if ((q.spec?.scopes?.length ?? 0) > 0 || q.spec?.scopeSelector) {
      warnings.push(`resourcequota "${name}" has scopes and is not checked here; the server enforces it when the claims grow`);
      continue;
    }
    for (const resource of resources) {
      const applies = resource === "requests.storage" ? () => true : (g: Growth) => `${g.storageClass ?? ""}${storagePerClass}` === resource;
      const needed = growth.filter(applies).reduce((sum, g) => sum + delta(g), 0n);
      if (needed === 0n) continue;
      const hard = bytesOf(hardAll[resource]);
      const usedText = q.status?.used?.[resource];
      if (usedText === undefined || hard === undefined) {
        warnings.push(`resourcequota "${name}" has not counted its ${resource} yet; the server checks it when the claims grow`);
        continue;
      }
      const used = bytesOf(usedText) ?? 0n;
      const left = hard > used ? hard - used : 0n;
      checks.push({ quota: name, resource, hard: formatBytes(hard), used: formatBytes(used), needed: formatBytes(needed), left: formatBytes(left), fits: needed <= left });
    }
  }
  return { checks, warnings };
}

export function quotaRefusal(c: QuotaCheck, claims: number): Refusal {
  const raise = formatBytes((bytesOf(c.used) ?? 0n) + (bytesOf(c.needed) ?? 0n));
  return {
    message: `growing ${claims} claim(s) needs ${c.needed} more ${c.resource}, but resourcequota "${c.quota}" has ${c.left} left (used ${c.used} of ${c.hard}); nothing was changed: raise its ${c.resource} to at least ${raise}, or drop --resize-existing`,
    forceable: false,
  };
}
