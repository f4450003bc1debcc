// The real CustomResourceDefinitions of Argo CD's Application, Flux's Kustomization and
// HelmRelease, and the Prometheus Operator's Alertmanager (with AlertmanagerConfig, which its
// controller watches), taken from their Go modules as the module proxy serves them (pinned versions, and
// the sha256 of each file), cached outside the repository, and installed on the test control
// plane. Their controllers do not run here (they need images from a registry, or do not build with
// the machine's Go): a test plays the controller where it matters. The Prometheus Operator runs for
// real (lab/tools/prometheus-operator, test/shared/operator.ts).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { kubectl, kubectlTry } from "./harness";

interface CrdSource {
  /** The module and version as the proxy serves them, and the file inside the module. */
  module: string;
  version: string;
  file: string;
  sha256: string;
  /** The CRD's name, to wait for it to be Established. */
  name: string;
}

// The newest versions the proxy served (2026-12): github.com/fluxcd/helm-controller answers 403 from
// v1.5.0 on, and its api module carries no CRD YAML, so its HelmRelease is v1.4.5's (helm.toolkit.fluxcd.io/v2 in both).
export const crdSources: CrdSource[] = [
  {
    module: "github.com/argoproj/argo-cd/v3",
    version: "v3.6.2",
    file: "manifests/crds/application-crd.yaml",
    sha256: "9fd0da3e7097ad6d1af614fabd5c960bc7ddb00d768c3ef485a2fda6e9460df8",
    name: "applications.argoproj.io",
  },
  {
    module: "github.com/fluxcd/kustomize-controller",
    version: "v1.10.2",
    file: "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    sha256: "dec77e391bff9307e47898d2d7448c5083a49b85700f6f870c7849449e11aad0",
    name: "kustomizations.kustomize.toolkit.fluxcd.io",
  },
  {
    module: "github.com/fluxcd/helm-controller",
    version: "v1.4.5",
    file: "config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml",
    sha256: "96d8f931a7a0732f3b169f540af2b2af5ec3b37d3478c8beee70be21416a7259",
    name: "helmreleases.helm.toolkit.fluxcd.io",
  },
];

/** The Prometheus Operator's, of the release lab/tools/prometheus-operator builds. */
export const operatorCrdSources: CrdSource[] = [
  {
    module: "github.com/prometheus-operator/prometheus-operator",
    version: "v0.85.0",
    file: "example/prometheus-operator-crd/monitoring.coreos.com_alertmanagers.yaml",
    sha256: "5a7bdf7900fd58053f3403abc9daaa301a90cd8dd1bbdf1362788704a87d04a4",
    name: "alertmanagers.monitoring.coreos.com",
  },
  {
    module: "github.com/prometheus-operator/prometheus-operator",
    version: "v0.85.0",
    file: "example/prometheus-operator-crd/monitoring.coreos.com_alertmanagerconfigs.yaml",
    sha256: "7e34fd1f9abf3a2756eb53895f1ca6b291ce3cac929152c9e3919d8d7fb85ccf",
    name: "alertmanagerconfigs.monitoring.coreos.com",
  },
];

const cacheDir = () => join(process.env["APPSTORAGE_CACHE"] ?? join(homedir(), ".cache", "kubectl-appstorage"), "crds");
const proxy = () => (process.env["GOPROXY"] ?? "https://proxy.golang.org").split(/[,|]/).find((p) => p.startsWith("http")) ?? "https://proxy.golang.org";
/** The module path as the proxy spells it: capitals as !lower. */
const escaped = (module: string) => module.replace(/[A-Z]/g, (c) => `!${c.toLowerCase()}`);

/** The CRD's YAML, from the cache or downloaded (the module's zip from the proxy) and checked against its sha256. */
export function crdYaml(src: CrdSource): string {
  const dir = cacheDir();
  const path = join(dir, `${src.name}-${src.version}.yaml`);
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true });
    const zip = join(dir, `${escaped(src.module).replaceAll("/", "_")}-${src.version}.zip`);
    const url = `${proxy()}/${escaped(src.module)}/@v/${src.version}.zip`;
    const got = spawnSync("curl", ["-sSfL", "-o", zip, url], { encoding: "utf8" });
    if (got.status !== 0) throw new Error(`could not download ${url}: ${got.stderr}`);
    const out = spawnSync("unzip", ["-p", zip, `${src.module}@${src.version}/${src.file}`], { maxBuffer: 64 * 2 ** 20 });
    if (out.status !== 0) throw new Error(`${src.file} is not in ${url}`);
    writeFileSync(`${path}.tmp`, out.stdout);
    renameSync(`${path}.tmp`, path);
  }
  const text = readFileSync(path);
  const sum = createHash("sha256").update(text).digest("hex");
  if (sum !== src.sha256) throw new Error(`${path} has sha256 ${sum}, not the pinned ${src.sha256}: delete it to download it again`);
  return text.toString("utf8");
}

/** Installs the CRDs (the owners' three by default; server-side: the Application's is too large for a client-side apply's annotation) and waits until they are served. */
export function installOwnerCrds(sources: readonly CrdSource[] = crdSources): void {
  for (const src of sources) {
    if (kubectlTry(["get", "crd", src.name]).code === 0) continue;
    kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], { input: crdYaml(src) });
    // kubectl wait fails on a CRD that has no conditions yet (just created): asked until Established.
    const deadline = Date.now() + 60_000;
    while (kubectlTry(["get", "crd", src.name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`]).stdout !== "True") {
      if (Date.now() > deadline) throw new Error(`crd/${src.name} was not Established within 60s`);
      spawnSync("sleep", ["0.2"]);
    }
  }
}
