// Progress lines on stderr, each with the time elapsed since the command started.
import type { Writable } from "../streams";

export class Progress {
  private readonly start: number;

  constructor(
    private readonly errOut: Writable,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.start = clock();
  }

  elapsedSeconds(): number {
    return (this.clock() - this.start) / 1000;
  }

  say(message: string): void {
    this.errOut.write(`[${this.elapsedSeconds().toFixed(2)}s] ${message}\n`);
  }

  warn(message: string): void {
    this.errOut.write(`Warning: ${message}\n`);
  }
}
