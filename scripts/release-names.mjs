// The release archive's file name for a platform, shared by `npm run release` (scripts/release.mjs),
// which writes the archives, and scripts/krew-template.mjs, which names them in .krew.yaml.
// version: the release tag (plugin.yaml's spec.version, v + package.json's version).
export function archiveName(version, os, arch) {
  return `kubectl-appstorage_${version}_${os}_${arch}.${os === "windows" ? "zip" : "tar.gz"}`;
}
