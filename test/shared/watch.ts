// Every event of a watch, as kubectl get -w --output-watch-events prints it: for tests that judge
// what happened to an object from the order etcd gave its changes, not from the timing of reads.
import { spawn } from "node:child_process";
import { kubeconfig } from "./harness";

/** Every event of a watch (kubectl get -w), in order: its type, the object's name and resourceVersion, and `extra` (a jsonpath of the object). */
export function watchEvents(args: string[], extra: string): { stop: () => Promise<{ type: string; name: string; rv: number; extra: string }[]> } {
  const child = spawn(
    "kubectl",
    ["--kubeconfig", kubeconfig(), "get", ...args, "-w", "--output-watch-events", "-o", `jsonpath={.type} {.object.metadata.name} {.object.metadata.resourceVersion} ${extra}{"\\n"}`],
    {
      stdio: ["ignore", "pipe", "ignore"],
    },
  );
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const closed = new Promise<void>((r) => child.on("close", () => r()));
  return {
    stop: async () => {
      // Events of the last writes may still be on their way.
      await new Promise((r) => setTimeout(r, 500));
      child.kill();
      await closed;
      return out
        .split("\n")
        .filter(Boolean)
        .map((l) => {
          const [type = "", name = "", rv = "", ...rest] = l.split(" ");
          return { type, name, rv: Number(rv), extra: rest.join(" ") };
        });
    },
  };
}
