// Types of scale-objects.mjs for the TypeScript tests (test/unit/scale-objects.test.ts): the pure
// functions only, on objects as the API server returns them.
// biome-ignore lint/suspicious/noExplicitAny: API objects, as JSON
type Obj = any;
export interface Snapshot {
  sets: Obj[];
  revisions: Obj[];
  pods: Obj[];
  claims: Obj[];
}
export function controllerRevisionText(sts: Obj): { name: string; text: string };
export function podFor(sts: Obj, ordinal: number, revisionName: string): Obj;
export function claimsFor(sts: Obj, ordinal: number): Obj[];
export function settledStatus(sts: Obj, revisionName: string): Obj;
export function differencesFromController(snap: Snapshot): string[];
export function changedBeyond(before: Snapshot, after: Snapshot, changed: Set<string>): string[];
