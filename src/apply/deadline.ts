// Bounds every wait by --timeout while still following the caller's signal (Ctrl-C): the one
// deadline helper of the writer, and its one sleep.
import { StopError } from "../errors";

/** An AbortSignal that fires on the caller's signal, or after ms with the error made by onTimeout. */
export function withDeadline(parent: AbortSignal, ms: number, onTimeout: () => Error): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(onTimeout()), ms);
  const onParent = () => controller.abort(parent.reason);
  // A Ctrl-C that came before this wait began stops it too (an abort event is sent only once).
  if (parent.aborted) onParent();
  else parent.addEventListener("abort", onParent, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      parent.removeEventListener("abort", onParent);
    },
  };
}

/** Runs `wait` with a signal that fires on the caller's signal or after ms (with onTimeout's error); the timer is always cleared. */
export async function within<T>(parent: AbortSignal, ms: number, onTimeout: () => Error, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const d = withDeadline(parent, ms, onTimeout);
  try {
    return await wait(d.signal);
  } finally {
    d.done();
  }
}

/** Bounds a wait of a step by --timeout; the error names what was awaited and what to do next. */
export function bounded<T>(ctx: { signal: AbortSignal; timeoutMs: number }, what: string, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
  return within(ctx.signal, ctx.timeoutMs, () => new StopError(`timed out after ${ctx.timeoutMs / 1000}s ${what}`), wait);
}

/** Waits ms, or less when the signal fires (it then resolves: the caller checks the signal). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });
}
