# shellcheck shell=bash
# Sourced by images.sh and db-images.sh: a one-layer OCI image archive of a rootfs folder, which
# `ctr images import` loads (no registry).
#
#   oci NAME TAG ROOTFS OUT ENTRYPOINT_JSON CMD_JSON [ENV_JSON [USER]]
#       writes the archive OUT; ENV_JSON defaults to ["PATH=/bin"]; USER (e.g. "999:999") is the
#       image's default user, root when not given.

sha() { sha256sum "$1" | cut -d' ' -f1; }

oci() {
  local name=$1 tag=$2 rootfs=$3 out=$4 entry=$5 cmd=$6 env=${7:-'["PATH=/bin"]'} user=${8:-} d diff cfg man
  d="$(mktemp -d)"; mkdir -p "$d/blobs/sha256"
  # Same bytes every time (sorted, no times, no owners): the same image id on every machine.
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$d/layer.tar" .
  diff="$(sha "$d/layer.tar")"; mv "$d/layer.tar" "$d/blobs/sha256/$diff"
  printf '{"architecture":"amd64","os":"linux","config":{%s"Entrypoint":%s,"Cmd":%s,"Env":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "${user:+\"User\":\"$user\",}" "$entry" "$cmd" "$env" "$diff" > "$d/config.json"
  cfg="$(sha "$d/config.json")"; mv "$d/config.json" "$d/blobs/sha256/$cfg"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
    "$cfg" "$(stat -c %s "$d/blobs/sha256/$cfg")" "$diff" "$(stat -c %s "$d/blobs/sha256/$diff")" > "$d/manifest.json"
  man="$(sha "$d/manifest.json")"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s:%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$man" "$(stat -c %s "$d/manifest.json")" "$name" "$tag" "$tag" > "$d/index.json"
  mv "$d/manifest.json" "$d/blobs/sha256/$man"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$d/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$d" -cf "$out" oci-layout index.json blobs
  rm -rf "$d"
}
