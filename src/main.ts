// Process entry: the only file that touches process.* and the only one that exits.
import { holderDead as isHolderDead } from "./lock-holder";
import { ExitCode, exitCodeFor, UsageError } from "./errors";
import { commandName, parseArgs, type ParsedCommand } from "./cli/root";
import type { IOStreams } from "./streams";

/**
 * Whether a journal's holder is certainly dead (this machine's /proc: gone, a zombie, or its pid
 * reused by another process); anything it cannot tell is left to the journal's lease.
 */
const holderDead = (holder: string): boolean => isHolderDead(holder, process.pid);

async function dispatch(cmd: ParsedCommand, streams: IOStreams): Promise<void> {
  const deps = { streams, env: process.env, platform: process.platform, arch: process.arch, now: () => new Date(), pid: process.pid, holderDead };
  switch (cmd.kind) {
    case "text":
      streams.out.write(cmd.text);
      return;
    case "complete": {
      const { runComplete } = await import("./commands/completion");
      return runComplete(cmd, deps);
    }
    case "show": {
      const { runShow } = await import("./commands/show");
      return runShow(cmd, deps);
    }
    case "diff": {
      const { runDiff } = await import("./commands/diff");
      return runDiff(cmd, deps);
    }
    case "history": {
      const { runHistory } = await import("./commands/history");
      return runHistory(cmd, deps);
    }
    case "undo": {
      const { runUndo } = await import("./commands/undo");
      return runUndo(cmd, { ...deps, signal: interruptible() });
    }
    case "rbac": {
      const { runRbac } = await import("./commands/rbac");
      return runRbac(cmd, deps);
    }
    case "version": {
      const { runVersion } = await import("./commands/version");
      return runVersion(cmd, deps);
    }
    case "set": {
      const { runSet } = await import("./commands/set");
      return runSet(cmd, { ...deps, signal: interruptible() });
    }
  }
}

/** Ctrl-C: a change stops waiting; its journal lets the next run finish the job. */
function interruptible(): AbortSignal {
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort(new Error("interrupted")));
  return controller.signal;
}

function messageFor(err: unknown): string {
  if (err instanceof UsageError) return `${err.message} (see '${commandName} --help')`;
  if (err instanceof Error) return err.message;
  return String(err);
}

async function main(): Promise<void> {
  const streams: IOStreams = { in: process.stdin, out: process.stdout, errOut: process.stderr };
  // A reader that stops early (`| head`) closes the pipe: stop quietly, as kubectl does.
  for (const s of [process.stdout, process.stderr]) {
    s.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code !== "EPIPE") throw e;
      process.exit(process.exitCode ?? 0);
    });
  }
  const args = process.argv.slice(2);
  const command = args.find((a) => ["show", "diff", "set", "undo", "history", "rbac"].includes(a));
  try {
    const cmd = parseArgs(args);
    for (const notice of cmd.notices ?? []) streams.errOut.write(`Warning: ${notice}\n`);
    await dispatch(cmd, streams);
    process.exitCode = 0;
  } catch (err) {
    if (err instanceof UsageError && err.text) streams.errOut.write(err.text);
    else if (!(err instanceof ExitCode)) {
      const line = messageFor(err).split("\n")[0];
      streams.errOut.write(`error: ${line}\n`);
      if (process.env["APPSTORAGE_DEBUG"] && err instanceof Error) streams.errOut.write(`${err.stack}\n`);
    }
    process.exitCode = exitCodeFor(err, command);
  }
  // Keep-alive sockets and watches must not hold the process open after the command ends; but
  // output to a pipe is written asynchronously, and exiting at once cut `show -A -o json | jq`
  // off at 64 KiB: exit once both streams have written everything they were given.
  let unflushed = 2;
  const exit = () => {
    if (--unflushed === 0) setImmediate(() => process.exit(process.exitCode ?? 0));
  };
  process.stdout.write("", exit);
  process.stderr.write("", exit);
}

void main();
