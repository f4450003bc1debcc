# shellcheck shell=bash
# Sourced by the scripts that build Kubernetes binaries from its modules (lab/tools/kubectl/build.sh,
# lab/specs/build.sh). version_ldflags VERSION: the -ldflags that stamp a build with VERSION in
# both version packages (component-base's and client-go's), as Kubernetes' own build does, so that
# `--version` and the User-Agent say the release and not v0.0.0.
version_ldflags() {
  local version=$1 major minor pkg flags="-s -w"
  major="${version#v}"; major="${major%%.*}"
  minor="${version#v*.}"; minor="${minor%%.*}"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags="$flags -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "$flags"
}
