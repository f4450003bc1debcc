#!/usr/bin/env bash
# The databases the node tests run, made from Debian's packages (no registry), like images.sh's:
#   appstorage.local/postgres:15   postgresql-15 and postgresql-client-15 (postgres, initdb, pg_ctl,
#                                  pgbench: postgresql-15; psql, pg_amcheck: postgresql-client-15;
#                                  the amcheck extension: postgresql-15's contrib modules, which
#                                  the postgresql-contrib package only depends on), tzdata, and the
#                                  shared libraries they need; user postgres, uid and gid 999, its
#                                  default user; PATH starts with /usr/lib/postgresql/15/bin.
#   appstorage.local/etcd:3.4      etcd-server and etcd-client (etcd, etcdctl), and libc; user etcd,
#                                  uid and gid 999, its default user.
# Both have Debian's busybox-static under /bin for a shell. Each rootfs is the packages' own files
# (apt-get download, dpkg-deb -x), with their library dependencies: the packages named lib* (and
# zlib1g) that they depend on, followed through the lib* packages' own dependencies; not LLVM,
# which only postgres's JIT loads (jit is off: its module is left out). Each program is run once in
# a chroot of its rootfs before the archive is written, so a missing library stops the build.
# Built once into the cache, keyed by the candidate versions of the packages named above, busybox
# and these scripts; the packages and versions that went in are in the folder's packages.txt.
#
#   db-images.sh build         makes both archives once into the cache; prints their folder (last line)
#   db-images.sh load SOCKET   imports them into containerd's k8s.io namespace (what kubelet sees)
#
# images.sh build and load call this (scripts/cluster up --node and --nodes N load both).
# apt: busybox-static (and apt's own apt-get, apt-cache, dpkg-deb, ldconfig)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${APPSTORAGE_CACHE:-$HOME/.cache/kubectl-appstorage}/node"
die() { echo "db-images: $*" >&2; exit 1; }
# shellcheck source=lab/node/oci.sh
source "$here/oci.sh"

postgres_packages=(postgresql-15 postgresql-client-15 tzdata)
etcd_packages=(etcd-server etcd-client)
# Depended on by postgresql-15 for its JIT module (llvmjit.so) alone.
not_needed=(libllvm14)
uid=999

# candidates PKG...: "PKG VERSION" per package, the version apt-get download fetches.
candidates() {
  apt-cache policy "$@" 2>/dev/null | awk '/^[^ ].*:$/ { p = substr($1, 1, length($1) - 1) } /^  Candidate:/ { print p, $2 }'
}

# The candidates, after one apt-get update when apt knows none of them (a machine that never ran it).
# Remembered per state of apt's package lists: apt-cache takes seconds here (no pkgcache.bin), and
# images.sh asks on every cluster up.
versions() {
  local v stamp
  stamp="$(stat -c '%n %s %Y' /var/lib/apt/lists/*Packages* /etc/apt/preferences* /etc/apt/sources.list* 2>/dev/null | sha256sum | cut -c1-12)"
  if [[ -s "$cache/db-versions-$stamp" ]]; then cat "$cache/db-versions-$stamp"; return 0; fi
  v="$(candidates "${postgres_packages[@]}" "${etcd_packages[@]}")"
  if [[ -z "$v" || "$v" == *"(none)"* ]]; then
    apt-get update -qq >&2 || die "apt-get update failed; the database images are made from Debian's packages"
    v="$(candidates "${postgres_packages[@]}" "${etcd_packages[@]}")"
  fi
  [[ -n "$v" && "$v" != *"(none)"* ]] || die "apt has no candidate for some of ${postgres_packages[*]} ${etcd_packages[*]}: $v"
  mkdir -p "$cache"
  # After an apt-get update the lists are new: the stamp is taken again.
  stamp="$(stat -c '%n %s %Y' /var/lib/apt/lists/*Packages* /etc/apt/preferences* /etc/apt/sources.list* 2>/dev/null | sha256sum | cut -c1-12)"
  echo "$v" > "$cache/db-versions-$stamp"
  echo "$v"
}

# libraries PKG...: the lib* packages (and zlib1g) PKG depends on, followed through their own
# dependencies; of alternatives (a | b) the first.
libraries() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances "$@" 2>/dev/null |
    awk -v roots="$*" -v skip="${not_needed[*]}" '
      BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) want[r[i]] = 1; split(skip, s, " "); for (i in s) drop[s[i]] = 1 }
      /^[^ ]/ { cur = $1; alt = 0; next }
      /^ [ |](Pre)?Depends: / {
        if (!alt && $2 !~ /^</) edge[cur] = edge[cur] " " $2
        alt = ($0 ~ /^ \|/); next
      }
      END {
        # Breadth first from the roots, into lib* packages only.
        changed = 1
        while (changed) {
          changed = 0
          for (p in want) {
            m = split(edge[p], d, " ")
            for (i = 1; i <= m; i++) {
              q = d[i]; sub(/:any$/, "", q)
              if ((q ~ /^lib/ || q == "zlib1g") && !(q in drop) && !(q in want)) { want[q] = 1; changed = 1 }
            }
          }
        }
        for (p in want) if (p ~ /^lib/ || p == "zlib1g") print p
      }' | sort
}

# rootfs DIR PKG...: the packages and their libraries, extracted into DIR; prints "PKG VERSION" of each.
rootfs() {
  local dir=$1 debs f
  shift
  debs="$(mktemp -d)"
  # shellcheck disable=SC2046
  (cd "$debs" && apt-get -qq -o APT::Sandbox::User=root download "$@" $(libraries "$@")) >&2 ||
    die "apt-get download $* (and their libraries) failed"
  for f in "$debs"/*.deb; do
    dpkg-deb -x "$f" "$dir" || die "dpkg-deb -x $f failed"
    # shellcheck disable=SC2016 # dpkg-deb's own ${...} fields
    dpkg-deb --showformat='${Package} ${Version}\n' -W "$f"
  done
  rm -rf "$debs"
  # What a container needs of the rest: busybox for a shell, the loader's cache, /tmp, a user.
  mkdir -p "$dir/bin" "$dir/tmp" "$dir/etc" "$dir/etc/ld.so.conf.d"
  chmod 1777 "$dir/tmp"
  cp /bin/busybox "$dir/bin/busybox"
  local a
  for a in $(/bin/busybox --list); do [[ -e "$dir/bin/$a" || "$a" == busybox ]] || ln -s busybox "$dir/bin/$a"; done
  echo 'include /etc/ld.so.conf.d/*.conf' > "$dir/etc/ld.so.conf"
  rm -rf "$dir/usr/share/doc" "$dir/usr/share/man" "$dir/usr/share/locale" "$dir/usr/share/lintian" "$dir/etc/init.d" "$dir/lib/systemd"
}

# user DIR NAME HOME: root, NAME (uid and gid 999) and nobody.
user() {
  printf 'root:x:0:0:root:/root:/bin/sh\n%s:x:%d:%d:%s:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' "$2" "$uid" "$uid" "$2" "$3" > "$1/etc/passwd"
  printf 'root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n' "$2" "$uid" > "$1/etc/group"
}

# check DIR PROGRAM...: each program runs in a chroot of DIR (its libraries found there).
check() {
  local dir=$1 p out
  shift
  ldconfig -r "$dir" || die "ldconfig -r $dir failed"
  for p in "$@"; do
    out="$(chroot "$dir" /lib64/ld-linux-x86-64.so.2 --list "$p" 2>&1)" || die "$p does not load in its image: $out"
    [[ "$out" != *"not found"* ]] || die "$p lacks libraries in its image: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ' | paste -sd,)"
  done
}

build() {
  [[ -x /bin/busybox ]] || die "busybox-static is missing; install it: apt-get install busybox-static"
  local v key out tmp pg=/usr/lib/postgresql/15
  v="$(versions)"
  key="$( { echo "$v"; sha /bin/busybox; sha "$here/db-images.sh"; sha "$here/oci.sh"; } | sha256sum | cut -c1-12)"
  out="$cache/db-images-$key"
  if [[ ! -f "$out/postgres.tar" || ! -f "$out/etcd.tar" ]]; then
    echo "db-images: making appstorage.local/postgres:15 and appstorage.local/etcd:3.4 from Debian's packages" >&2
    tmp="$out.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp/postgres" "$tmp/etcd"
    {
      echo "# appstorage.local/postgres:15"
      rootfs "$tmp/postgres" "${postgres_packages[@]}"
      echo "# appstorage.local/etcd:3.4"
      rootfs "$tmp/etcd" "${etcd_packages[@]}"
    } > "$tmp/packages.txt"
    # postgres: no JIT (its module needs LLVM), the socket folder open to the server's user.
    rm -rf "$tmp/postgres$pg/lib/llvmjit.so" "$tmp/postgres$pg/lib/llvmjit_types.bc" "$tmp/postgres$pg/lib/bitcode"
    mkdir -p "$tmp/postgres/var/run/postgresql" "$tmp/postgres/var/lib/postgresql"
    chmod 1777 "$tmp/postgres/var/run/postgresql" "$tmp/postgres/var/lib/postgresql"
    user "$tmp/postgres" postgres /var/lib/postgresql
    user "$tmp/etcd" etcd /var/lib/etcd
    local p progs=()
    for p in "$tmp/postgres$pg/bin/"* "$tmp/postgres$pg/lib/"*.so; do progs+=("${p#"$tmp/postgres"}"); done
    check "$tmp/postgres" "${progs[@]}"
    check "$tmp/etcd" /usr/bin/etcd /usr/bin/etcdctl
    chroot "$tmp/postgres" "$pg/bin/postgres" --version >&2 || die "postgres does not run in its image"
    chroot "$tmp/etcd" /usr/bin/etcd --version >&2 || die "etcd does not run in its image"
    oci appstorage.local/postgres 15 "$tmp/postgres" "$tmp/postgres.tar" null '["postgres"]' "[\"PATH=$pg/bin:/usr/bin:/bin\",\"PGDATA=/var/lib/postgresql/data/pgdata\"]" "$uid:$uid"
    oci appstorage.local/etcd 3.4 "$tmp/etcd" "$tmp/etcd.tar" null '["etcd"]' '["PATH=/usr/bin:/bin","ETCDCTL_API=3"]' "$uid:$uid"
    mkdir -p "$out"; mv "$tmp/postgres.tar" "$tmp/etcd.tar" "$tmp/packages.txt" "$out/"; rm -rf "$tmp"
  fi
  echo "$out"
}

load() {
  local sock=${1:?usage: db-images.sh load SOCKET} dir f
  dir="$(build | tail -n 1)"
  for f in postgres etcd; do
    ctr --address "$sock" --namespace k8s.io images import "$dir/$f.tar" >/dev/null ||
      die "importing $dir/$f.tar into containerd failed"
  done
}

case "${1:-}" in
  build) build ;;
  load) shift; load "$@" ;;
  *) die "usage: db-images.sh build | load SOCKET" ;;
esac
