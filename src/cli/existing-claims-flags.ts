// The flags for existing claims, shared by set and diff: --resize-existing, --vac-existing,
// --wait-resize, --restart-pods (declared in src/cli/flags.ts). Parsed into one plain value
// (or nothing when none is given).
import type { ExistingClaimsOptions as ExistingOptions } from "../plan/existing-claims-types";
import { UsageError } from "../errors";
import { lastValue } from "./flags";
import { defaultCopyImage } from "../plan/migrate";

/** The options, or undefined when no flag was given (the plan then leaves existing claims alone). */
export function existingClaimFlags(argv: Record<string, unknown>): ExistingOptions | undefined {
  const on = (name: string) => lastValue(argv[name]) === true;
  const resize = on("resize-existing");
  const vac = on("vac-existing");
  const restartPods = on("restart-pods");
  const waitResize = on("wait-resize") || restartPods;
  const image = lastValue(argv["copy-image"]);
  if (image !== undefined && !on("migrate-existing")) throw new UsageError("--copy-image is the image of the copy pods of --migrate-existing; add --migrate-existing, or drop --copy-image");
  if (on("migrate-existing")) {
    if (resize || vac || waitResize)
      throw new UsageError("--migrate-existing moves the existing claims to new volumes of the new size and class: drop --resize-existing, --vac-existing, --wait-resize and --restart-pods");
    if (image !== undefined && (typeof image !== "string" || image.trim() === "")) throw new UsageError("--copy-image needs an image, for example --copy-image docker.io/library/busybox:1.37.0");
    const copyImage = typeof image === "string" ? image : defaultCopyImage;
    return { resize: false, vac: false, waitResize: false, restartPods: false, migrate: { copyImage, acceptDowntime: on("yes") } };
  }
  if (!resize && !vac && !waitResize) return undefined;
  if (!resize && !vac) throw new UsageError(`--${restartPods ? "restart-pods" : "wait-resize"} works on the claims that --resize-existing or --vac-existing change; add one of them`);
  return { resize, vac, waitResize, restartPods };
}
