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
//
// The sha256 of a file unchanged since the first copy is not read again while the pod is down:
// the first copy hashes both sides once it is done (the pod still runs) into a folder on the new
// volume (removed before the final copy reports). A source file's hash is reused only when its
// change time is from before the first copy began and is still the one seen when it was hashed;
// a new volume's file only when the final copy did not write it and its change time is the one
// seen. Everything else is read again. Without that folder (a rerun), every file is read.
// A symlink's own time is not compared (cp keeps its target, not its time); /lost+found at the
// top is the file system's own and is left out. Names with a newline are not supported.
export const copyScript = String.raw`set -eu
SRC=${"${SRC:-/src}"}; DST=${"${DST:-/dst}"}; OUT=${"${OUT:-/dev/termination-log}"}; TMP=${"${TMPDIR:-/tmp}"}
CACHE=.kubectl-appstorage-verify
report() { printf '%s' "$1" > "$OUT"; }
# Seconds since boot, to the hundredth: how long the copy and the verification took, by the node's clock.
uptime_s() { cut -d' ' -f1 /proc/uptime; }
took() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }'; }
fail() { m=$(printf '%s' "$1" | tr -d '"\\' | tr '\n' ' '); report "{\"error\":\"$m\"}"; echo "$1" >&2; exit 1; }
# Lines that name /lost+found at the top or the hash folder (at the end of the line, after "|", "  " or at its start) are left out.
mine() { grep -v '\(^\||\| \)\./\(lost+found\|'"$CACHE"'\)\(/.*\)\{0,1\}$' || true; }
# Every entry below the current directory, one line each (FORMAT: stat's, else the name).
entries() { if [ $# -gt 0 ]; then find . -mindepth 1 -exec stat -c "$1" {} +; else find . -mindepth 1; fi | mine; }
# "stamp|sha256|path" of every regular file below the current directory: the stamp (change time, to the nanosecond) is taken before it is read.
stamps() { find . -type f -exec stat -c '%z|%n' {} + | mine > "$1.stat"; find . -type f -exec sha256sum {} + | mine > "$1.sha"; awk 'FILENAME == ARGV[1] { i = index($0, "|"); s[substr($0, i + 1)] = substr($0, 1, i - 1); next } { p = substr($0, 67); if (p in s) print s[p] "|" substr($0, 1, 64) "|" p }' "$1.stat" "$1.sha" > "$1"; }
# sha256 lines of the regular files below the current directory, reusing a cached hash where it is still good (see above).
hashes() (
  side=$1; cached="$DST/$CACHE/$side"
  if [ ! -f "$cached" ]; then find . -type f -exec sha256sum {} + | mine; return; fi
  entries '%z|%Z|%F|%n' | awk -F'|' '$3 ~ /^regular/' > "$TMP/$side.now"
  : > "$TMP/$side.fresh"
  awk -v side="$side" -v from="${"${from:-0}"}" -v fresh="$TMP/$side.fresh" '
    FILENAME == ARGV[1] { i = index($0, "|"); st = substr($0, 1, i - 1); r = substr($0, i + 1); cs[substr(r, 66)] = st; ch[substr(r, 66)] = substr(r, 1, 64); next }
    FILENAME == ARGV[2] { written[$0] = 1; next }
    { i = index($0, "|"); st = substr($0, 1, i - 1); r = substr($0, i + 1); j = index(r, "|"); ct = substr(r, 1, j - 1); r = substr(r, j + 1); k = index(r, "|"); p = substr(r, k + 1)
      if ((p in cs) && cs[p] == st && !(p in written) && (side == "dst" || ct + 0 < from + 0)) print ch[p] "  " p; else print p > fresh }
  ' "$cached" "$TMP/written" "$TMP/$side.now"
  while IFS= read -r p; do sha256sum "$p"; done < "$TMP/$side.fresh"
)
manifest() (
  cd "$1"
  {
    find . ! -type l -exec stat -c '%F|%u|%g|%a|%Y|%s|%n' {} + | awk -F'|' -v OFS='|' '$1 == "directory" { $6 = "-" } { print }'
    find . -type l -exec stat -c 'link|%u|%g|%N' {} +
    hashes "$2"
  } | mine | LC_ALL=C sort
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
  t0=$(uptime_s)
  cp -a "$SRC/." "$DST/"
  sync
  seconds=$(took "$t0")
  # The hashes of both sides while the pod still runs: the final copy reads again only what changed.
  mkdir "$DST/$CACHE"
  (cd "$SRC" && stamps "$TMP/src.cache") &
  a=$!
  (cd "$DST" && stamps "$TMP/dst.cache") &
  b=$!
  wait "$a"
  wait "$b"
  cp "$TMP/src.cache" "$DST/$CACHE/src"
  cp "$TMP/dst.cache" "$DST/$CACHE/dst"
  sync
  report "{\"since\":$since,\"bytes\":$((need * 1024)),\"seconds\":$seconds}"
  ;;
sync)
  [ -n "${"${SINCE:-}"}" ] || fail "SINCE is not set: the first copy did not report when it began"
  from=$((SINCE - 1))
  t0=$(uptime_s)
  : > "$TMP/dirs"
  : > "$TMP/written"
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
      echo "$p" >> "$TMP/written"
    fi
    echo "${"${p%/*}"}" >> "$TMP/dirs"
  done < "$TMP/src.list"
  sort -u "$TMP/dirs" | while IFS= read -r d; do if [ -d "$SRC/$d" ] && [ -d "$DST/$d" ]; then touch -r "$SRC/$d" "$DST/$d"; fi; done
  chown "$(stat -c %u:%g "$SRC")" "$DST"
  chmod "$(stat -c %a "$SRC")" "$DST"
  touch -r "$SRC" "$DST"
  sync
  copied=$(took "$t0")
  t1=$(uptime_s)
  manifest "$SRC" src > "$TMP/src.manifest" &
  a=$!
  manifest "$DST" dst > "$TMP/dst.manifest" &
  b=$!
  wait "$a"
  wait "$b"
  rm -rf "${"${DST:?}"}/$CACHE"
  touch -r "$SRC" "$DST"
  sync
  s=$(sha256sum < "$TMP/src.manifest" | cut -d' ' -f1)
  d=$(sha256sum < "$TMP/dst.manifest" | cut -d' ' -f1)
  counts=$(awk -F'|' '$1 ~ /^regular/ { n++; b += $6 } END { printf "%d,%.0f", n, b }' "$TMP/src.manifest")
  head="\"files\":${"${counts%,*}"},\"bytes\":${"${counts#*,}"},\"src\":\"$s\",\"dst\":\"$d\",\"seconds\":$copied,\"verifySeconds\":$(took "$t1")"
  if [ "$s" = "$d" ]; then report "{$head}"; exit 0; fi
  diff=$(diff "$TMP/src.manifest" "$TMP/dst.manifest" | grep '^[-+][^-+]' | head -n 4 | tr -d '"\\' | tr '\n\t' '  ' | cut -c 1-600 || true)
  report "{$head,\"diff\":\"$diff\"}"
  exit 2
  ;;
*) fail "MODE must be copy, sync or measure" ;;
esac
`;
