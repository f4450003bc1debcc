// Every command reads and writes only the streams it is given (cli-runtime's IOStreams).
export interface Writable {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

export interface Readable {
  isTTY?: boolean;
  [Symbol.asyncIterator](): AsyncIterator<string | Buffer>;
}

export interface IOStreams {
  in: Readable;
  out: Writable;
  errOut: Writable;
}

/** Colour only on a terminal and never with NO_COLOR (https://no-color.org). */
export function useColor(stream: Writable, env: Record<string, string | undefined>): boolean {
  return stream.isTTY === true && !env["NO_COLOR"] && env["TERM"] !== "dumb";
}
