// Progress lines on stderr, each with the time elapsed since the command started.
import type { Writable } from "../streams";

export class Progress {
  private readonly start: number;

  constructor(
    private readonly errOut: Writable,
    private readonly clock: () => number = () => performance.now(),
    private readonly prefix = "",
    start?: number,
  ) {
    this.start = start ?? clock();
  }

  /** The same clock, every line prefixed: one StatefulSet's progress among several changed side by side. */
  for(prefix: string): Progress {
    return new Progress(this.errOut, this.clock, prefix, this.start);
  }

  /** Seconds since the command started (the clock every line shows). */
  elapsedSeconds(): number {
    return (this.clock() - this.start) / 1000;
  }

  say(message: string): void {
    this.errOut.write(`[${this.elapsedSeconds().toFixed(2)}s] ${this.prefix}${message}\n`);
  }

  warn(message: string): void {
    this.errOut.write(`Warning: ${this.prefix}${message}\n`);
  }
}
