// The script of the --migrate-existing copy pods, for busybox's sh and tools (the default copy
// image) or any POSIX userland with stat -c, sha256sum and awk. /src is the claim (read-only),
// /dst the new volume; the report goes to the termination message as one line of JSON.
//
// MODE=measure: the bytes the data takes ({bytes}, du), when kubelet's volume stats cannot tell.
//
// MODE=copy, while the pod still runs: empties /dst (an interrupted earlier copy; the new
// volume holds nothing else), checks the data fits, copies everything with cp -a (owners,
// modes, times, symlinks, special files), reports {since, bytes}: since is when it began, by
// the node's clock, which is the clock of the file times it compares.
//
// MODE=sync, once the pod is stopped (SINCE from the copy): removes from /dst what /src no longer
// has; copies again everything whose change time (ctime, which no tool can set back) is from
// SINCE - 1 on, or that /dst lacks; sets directories' owners, modes and times; then verifies:
// a manifest of each side (type, owner, group, mode, mtime and size of every entry but
// symlinks; owner and target of every symlink; sha256 of every regular file), sorted, hashed.
// Equal digests: exit 0 with {files, bytes, src, dst}; else exit 2 with the first differences.
// A symlink's own time is not compared (cp keeps its target, not its time); /lost+found at the
// top is the file system's own and is left out. Names with a newline are not supported.
export const copyScript = String.raw`set -eu
SRC=${"${SRC:-/src}"}; DST=${"${DST:-/dst}"}; OUT=${"${OUT:-/dev/termination-log}"}; TMP=${"${TMPDIR:-/tmp}"}
report() { printf '%s' "$1" > "$OUT"; }
fail() { m=$(printf '%s' "$1" | tr -d '"\\' | tr '\n' ' '); report "{\"error\":\"$m\"}"; echo "$1" >&2; exit 1; }
# Every entry below the current directory, one line each (FORMAT: stat's, else the name), /lost+found left out.
entries() { if [ $# -gt 0 ]; then find . -mindepth 1 -exec stat -c "$1" {} +; else find . -mindepth 1; fi | grep -v '\(^\||\)\./lost+found\(/.*\)\{0,1\}$' || true; }
manifest() (
  cd "$1"
  {
    find . ! -type l -exec stat -c '%F|%u|%g|%a|%Y|%s|%n' {} + | awk -F'|' -v OFS='|' '$1 == "directory" { $6 = "-" } { print }'
    find . -type l -exec stat -c 'link|%u|%g|%N' {} +
    find . -type f -exec sha256sum {} +
  } | grep -v '\(^\||\| \)\./lost+found\(/.*\)\{0,1\}$' | LC_ALL=C sort
)
case "${"${MODE:-}"}" in
measure)
  report "{\"bytes\":$(($(du -sk "$SRC" | awk '{ print $1 }') * 1024))}"
  ;;
copy)
  since=$(date +%s)
  find "$DST" -mindepth 1 -maxdepth 1 ! -name lost+found -exec rm -rf {} +
  need=$(du -sk "$SRC" | awk '{ print $1 }')
  free=$(df -Pk "$DST" | awk 'NR == 2 { print $4 }')
  [ "$need" -le "$free" ] || fail "the data takes $((need * 1024)) bytes and the new volume has $((free * 1024)) bytes free: choose a larger size"
  cp -a "$SRC/." "$DST/"
  report "{\"since\":$since,\"bytes\":$((need * 1024))}"
  ;;
sync)
  [ -n "${"${SINCE:-}"}" ] || fail "SINCE is not set: the first copy did not report when it began"
  from=$((SINCE - 1))
  : > "$TMP/dirs"
  cd "$DST"
  entries > "$TMP/dst.list"
  while IFS= read -r p; do
    if [ ! -e "$SRC/$p" ] && [ ! -L "$SRC/$p" ]; then rm -rf "$DST/$p"; echo "${"${p%/*}"}" >> "$TMP/dirs"; fi
  done < "$TMP/dst.list"
  cd "$SRC"
  entries '%Z|%F|%n' > "$TMP/src.list"
  while IFS='|' read -r ctime type p; do
    if [ "$ctime" -lt "$from" ] && { [ -e "$DST/$p" ] || [ -L "$DST/$p" ]; }; then continue; fi
    if [ "$type" = directory ]; then
      if [ ! -d "$DST/$p" ] || [ -L "$DST/$p" ]; then rm -rf "$DST/$p"; mkdir "$DST/$p"; fi
      chown "$(stat -c %u:%g "$p")" "$DST/$p"
      chmod "$(stat -c %a "$p")" "$DST/$p"
      echo "$p" >> "$TMP/dirs"
    else
      rm -rf "$DST/$p"
      cp -a "$p" "$DST/$p"
    fi
    echo "${"${p%/*}"}" >> "$TMP/dirs"
  done < "$TMP/src.list"
  sort -u "$TMP/dirs" | while IFS= read -r d; do if [ -d "$SRC/$d" ] && [ -d "$DST/$d" ]; then touch -r "$SRC/$d" "$DST/$d"; fi; done
  chown "$(stat -c %u:%g "$SRC")" "$DST"
  chmod "$(stat -c %a "$SRC")" "$DST"
  touch -r "$SRC" "$DST"
  manifest "$SRC" > "$TMP/src.manifest" &
  a=$!
  manifest "$DST" > "$TMP/dst.manifest" &
  b=$!
  wait "$a"
  wait "$b"
  s=$(sha256sum < "$TMP/src.manifest" | cut -d' ' -f1)
  d=$(sha256sum < "$TMP/dst.manifest" | cut -d' ' -f1)
  counts=$(awk -F'|' '$1 ~ /^regular/ { n++; b += $6 } END { printf "%d,%.0f", n, b }' "$TMP/src.manifest")
  head="\"files\":${"${counts%,*}"},\"bytes\":${"${counts#*,}"},\"src\":\"$s\",\"dst\":\"$d\""
  if [ "$s" = "$d" ]; then report "{$head}"; exit 0; fi
  diff=$(diff "$TMP/src.manifest" "$TMP/dst.manifest" | grep '^[-+][^-+]' | head -n 4 | tr -d '"\\' | tr '\n\t' '  ' | cut -c 1-600 || true)
  report "{$head,\"diff\":\"$diff\"}"
  exit 2
  ;;
*) fail "MODE must be copy or sync" ;;
esac
`;
