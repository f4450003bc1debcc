// Bounds every wait by --timeout while still following the caller's signal (Ctrl-C).

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
