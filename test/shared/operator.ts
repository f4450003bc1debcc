// The Prometheus Operator, for real: built once from its Go module (lab/tools/prometheus-operator)
// and run on the host against the test control plane with the admin kubeconfig, watching one
// namespace, its web server on a loopback port the kernel picks. The test that starts it stops it.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { kubeconfig, root } from "./harness";

let bin: string | undefined;
function operatorBin(): string {
  if (!bin) {
    const r = spawnSync("bash", [join(root, "lab", "tools", "prometheus-operator", "build.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    if (r.status !== 0) throw new Error("lab/tools/prometheus-operator/build.sh failed: the operator test runs the real Prometheus Operator");
    bin = join(r.stdout.trim().split("\n").pop()!, "prometheus-operator");
  }
  return bin;
}

/** Starts the Prometheus Operator for namespace ns until the test ends; log() reads what it wrote so far. */
export function prometheusOperator(t: TestContext, ns: string): { log: () => string } {
  const path = join(mkdtempSync(join(tmpdir(), "appstorage-operator-")), "operator.log");
  const fd = openSync(path, "a");
  const child = spawn(operatorBin(), [`--namespaces=${ns}`, "--web.listen-address=127.0.0.1:0"], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", KUBECONFIG: kubeconfig() },
    stdio: ["ignore", fd, fd],
  });
  closeSync(fd);
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  t.after(async () => {
    child.kill("SIGTERM");
    await closed;
  });
  return { log: () => readFileSync(path, "utf8") };
}
