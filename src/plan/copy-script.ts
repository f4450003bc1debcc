// The script of the --migrate-existing copy pods, for busybox's sh and tools (the default copy
// image) or another userland with the same options (cp -a, find -mindepth, stat -c, sha256sum,
// awk). /src is the claim (read-only), /dst the new volume; the report goes to the termination
// message as one line of JSON.
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
//
// Large files (over BIG_MIB MiB, 64 by default) are hashed in blocks of BLOCK_MIB MiB (16): their
// hash in the manifests is the sha256 of the list of their blocks' sha256, on both sides alike.
// The first copy keeps the new volume's block hashes too, so a large file that changed while the
// pod ran is not copied whole again: its source is read once (its blocks hashed on two cores),
// only the blocks that differ from the new volume's are written (dd), and only those are read
// again on the new volume. That holds only while the new volume's file is the one hashed (its
// change time and size as seen then) and the source is not shorter; else it is copied whole.
//
// WAIT (sync only, when set): nothing is read until the script gets SIGTERM, which is the go: a pod
// started before its replica stops is deleted by the tool (gracefully, with a grace period longer
// than any copy) the moment the replica is gone, and kubelet sends it SIGTERM at once; it then makes
// the final copy and exits, and kubelet, which waits for that exit, reports it at once.
export const copyScript = String.raw`set -eu
SRC=${"${SRC:-/src}"}; DST=${"${DST:-/dst}"}; OUT=${"${OUT:-/dev/termination-log}"}; TMP=${"${TMPDIR:-/tmp}"}
CACHE=.kubectl-appstorage-verify
BLOCK=${"${BLOCK_MIB:-16}"}; BIG=$((${"${BIG_MIB:-64}"} * 1048576))
report() { printf '%s' "$1" > "$OUT"; }
# Seconds since boot, to the hundredth: how long the copy and the verification took, by the node's clock.
uptime_s() { cut -d' ' -f1 /proc/uptime; }
took() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }'; }
fail() { m=$(printf '%s' "$1" | tr -d '"\\' | tr '\n' ' '); report "{\"error\":\"$m\"}"; echo "$1" >&2; exit 1; }
# Lines that name /lost+found at the top or the hash folder (at the end of the line, after "|", "  " or at its start) are left out.
mine() { grep -v '\(^\||\| \)\./\(lost+found\|'"$CACHE"'\)\(/.*\)\{0,1\}$' || true; }
# Every entry below the current directory, one line each (FORMAT: stat's, else the name).
entries() { if [ $# -gt 0 ]; then find . -mindepth 1 -exec stat -c "$1" {} +; else find . -mindepth 1; fi | mine; }
# blocks FILE OUT WORKERS: "k|sha256" of each BLOCK MiB block k (from 0) of FILE, sorted by k, read by WORKERS processes side by side.
# A list that is not whole (a hash or a block missing) ends with a line no other list has: it can never verify equal.
blocks() (
  n=$((($(stat -c %s "$1") + BLOCK * 1048576 - 1) / (BLOCK * 1048576))); w=0
  while [ "$w" -lt "$3" ]; do
    k=$w
    while [ "$k" -lt "$n" ]; do echo "$k|$(dd if="$1" bs=1048576 skip=$((k * BLOCK)) count="$BLOCK" 2>/dev/null | sha256sum | cut -c 1-64)"; k=$((k + $3)); done > "$2.$w" &
    w=$((w + 1))
  done
  wait
  w=0; while [ "$w" -lt "$3" ]; do cat "$2.$w"; rm -f "$2.$w"; w=$((w + 1)); done | sort -t '|' -k 1,1n > "$2"
  if [ "$(grep -c '^[0-9]*|[0-9a-f]\{64\}$' "$2")" != "$n" ]; then echo "x|not read whole $(uptime_s) $RANDOM $RANDOM" >> "$2"; fi
)
# The hash of a large file in the manifests: the sha256 of its list of blocks (made by blocks).
listsum() { sha256sum < "$1" | cut -c 1-64; }
# "sha256  path" of each regular file below the current directory (large ones by their blocks; with KEEP, their blocks go to KEEP as "k|sha256|path").
sums() {
  find . -type f ! -size +"$BIG"c -exec sha256sum {} + | mine
  find . -type f -size +"$BIG"c | mine | while IFS= read -r p; do
    blocks "$p" "$TMP/sums.$1" 1
    echo "$(listsum "$TMP/sums.$1")  $p"
    if [ -n "${"${2:-}"}" ]; then awk -v p="$p" '{ print $0 "|" p }' "$TMP/sums.$1" >> "$2"; fi
  done
}
# "sha256  path" of one regular file (a large one by its blocks).
sum1() { if [ "$(stat -c %s "$1")" -gt "$BIG" ]; then blocks "$1" "$TMP/sum1.$2" 1; echo "$(listsum "$TMP/sum1.$2")  $1"; else sha256sum "$1"; fi; }
# "stamp|sha256|path" of every regular file below the current directory: the stamp (change time, to the nanosecond) is taken before it is read; a large file's blocks go to OUT.blocks.
stamps() { : > "$1.blocks"; find . -type f -exec stat -c '%z|%n' {} + | mine > "$1.stat"; sums "$2" "$1.blocks" > "$1.sha"; awk 'FILENAME == ARGV[1] { i = index($0, "|"); s[substr($0, i + 1)] = substr($0, 1, i - 1); next } { p = substr($0, 67); if (p in s) print s[p] "|" substr($0, 1, 64) "|" p }' "$1.stat" "$1.sha" > "$1"; }
# deltable PATH (in SRC, the pod stopped): whether a large file that changed can be brought up to date block by
# block: the new volume's file is still the one the first copy hashed (its change time then), and not longer.
deltable() {
  d="$DST/$1"
  [ -f "$DST/$CACHE/dst" ] && [ -f "$DST/$CACHE/dst.blocks" ] && [ -f "$d" ] && [ ! -L "$d" ] || return 1
  [ "$(stat -c %s "$1")" -ge "$(stat -c %s "$d")" ] || return 1
  was=$(awk -v p="$1" '{ i = index($0, "|"); r = substr($0, i + 1); if (substr(r, 66) == p) { print substr($0, 1, i - 1); exit } }' "$DST/$CACHE/dst")
  [ -n "$was" ] && [ "$was" = "$(stat -c %z "$d")" ]
}
# delta PATH: that file brought up to date block by block (see deltable); both sides' hashes of it go to
# TMP/src.big and TMP/dst.big.
delta() {
  p=$1; d="$DST/$p"
  awk -v p="$p" -F'|' '{ i = index($0, "|"); r = substr($0, i + 1); j = index(r, "|"); if (substr(r, j + 1) == p) print $1 "|" $2 }' "$DST/$CACHE/dst.blocks" > "$TMP/delta.had"
  blocks "$p" "$TMP/delta.src" 2
  awk -F'|' 'FILENAME == ARGV[1] { had[$1] = $2; next } had[$1] != $2 { print $1 }' "$TMP/delta.had" "$TMP/delta.src" > "$TMP/delta.todo"
  while IFS= read -r k; do dd if="$p" of="$d" bs=1048576 skip=$((k * BLOCK)) seek=$((k * BLOCK)) count="$BLOCK" conv=notrunc 2>/dev/null; done < "$TMP/delta.todo"
  chown "$(stat -c %u:%g "$p")" "$d"
  chmod "$(stat -c %a "$p")" "$d"
  touch -r "$p" "$d"
  : > "$TMP/delta.new"
  while IFS= read -r k; do echo "$k|$(dd if="$d" bs=1048576 skip=$((k * BLOCK)) count="$BLOCK" 2>/dev/null | sha256sum | cut -c 1-64)"; done < "$TMP/delta.todo" > "$TMP/delta.new"
  awk -F'|' 'FILENAME == ARGV[1] { now[$1] = $2; next } FILENAME == ARGV[2] { if (!($1 in now)) now[$1] = $2; next } END { for (k in now) print k "|" now[k] }' "$TMP/delta.new" "$TMP/delta.had" | sort -t '|' -k 1,1n > "$TMP/delta.dst"
  # Only numbered blocks within the source's count: a kept list that was not whole has a marker line, and the blocks it lacked were written and read again above.
  awk -F'|' -v n="$(wc -l < "$TMP/delta.src")" '$1 < n' "$TMP/delta.dst" > "$TMP/delta.dst.n"
  echo "$(listsum "$TMP/delta.src")  $p" >> "$TMP/src.big"
  echo "$(listsum "$TMP/delta.dst.n")  $p" >> "$TMP/dst.big"
  wc -l < "$TMP/delta.todo" | awk -v p="$p" '{ print p "|" $1 }' >> "$TMP/delta.log"
}
# listing DIR OUT: DIR itself (as ".") and every entry below it, one line each, in one pass of stat:
# "stamp|ctime|type|uid|gid|mode|mtime|size|path" (stamp: the change time to the nanosecond).
listing() ( cd "$1" && { stat -c '%z|%Z|%F|%u|%g|%a|%Y|%s|%n' .; find . -mindepth 1 -exec stat -c '%z|%Z|%F|%u|%g|%a|%Y|%s|%n' {} +; } | mine > "$2" )
# The path of a listing line (after its 8 fields; a path may hold "|"), for awk.
LPATH='function lpath(s) { match(s, /^[^|]*[|][^|]*[|][^|]*[|][^|]*[|][^|]*[|][^|]*[|][^|]*[|][^|]*[|]/); return substr(s, RLENGTH + 1) }'
# sha256 lines of the regular files of a listing (run in its folder), reusing a cached hash where it is still good (see above).
hashes() (
  side=$1; cached="$DST/$CACHE/$side"
  if [ ! -f "$cached" ]; then sums "$side"; return; fi
  : > "$TMP/$side.fresh"
  awk -F'|' -v side="$side" -v from="${"${from:-0}"}" -v fresh="$TMP/$side.fresh" "$LPATH"'
    FILENAME == ARGV[1] { i = index($0, "|"); st = substr($0, 1, i - 1); r = substr($0, i + 1); cs[substr(r, 66)] = st; ch[substr(r, 66)] = substr(r, 1, 64); next }
    FILENAME == ARGV[2] { written[$0] = 1; next }
    FILENAME == ARGV[3] { big[substr($0, 67)] = substr($0, 1, 64); next }
    $3 ~ /^regular/ { p = lpath($0)
      if (p in big) print big[p] "  " p
      else if ((p in cs) && cs[p] == $1 && !(p in written) && (side == "dst" || $2 + 0 < from + 0)) print ch[p] "  " p; else print p > fresh }
  ' "$cached" "$TMP/written" "$TMP/$side.big" "$2"
  while IFS= read -r p; do sum1 "$p" "$side"; done < "$TMP/$side.fresh"
)
# manifest DIR SIDE LISTING: the sorted manifest of DIR from its listing (one stat pass), its symlinks' targets and its files' hashes.
manifest() (
  cd "$1"
  {
    awk -F'|' "$LPATH"'$3 != "symbolic link" { print $3 "|" $4 "|" $5 "|" $6 "|" $7 "|" ($3 == "directory" ? "-" : $8) "|" lpath($0) }' "$3"
    awk -F'|' "$LPATH"'$3 == "symbolic link" { print lpath($0) }' "$3" | tr '\n' '\0' | xargs -0 -r stat -c 'link|%u|%g|%N'
    hashes "$2" "$3"
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
  t1=$(uptime_s)
  mkdir "$DST/$CACHE"
  (cd "$SRC" && stamps "$TMP/src.cache" src) &
  a=$!
  (cd "$DST" && entries > "$TMP/dst.names" && stamps "$TMP/dst.cache" dst) &
  b=$!
  wait "$a"
  wait "$b"
  cp "$TMP/src.cache" "$DST/$CACHE/src"
  cp "$TMP/dst.cache" "$DST/$CACHE/dst"
  cp "$TMP/dst.cache.blocks" "$DST/$CACHE/dst.blocks"
  cp "$TMP/dst.names" "$DST/$CACHE/names"
  sync
  report "{\"since\":$since,\"bytes\":$((need * 1024)),\"seconds\":$seconds,\"hashSeconds\":$(took "$t1")}"
  ;;
sync)
  [ -n "${"${SINCE:-}"}" ] || fail "SINCE is not set: the first copy did not report when it began"
  # Waiting, nothing read yet: a stop (the pod deleted) ends it at once.
  # Waiting, nothing read yet, until SIGTERM (the pod deleted: the go); the trap runs once a sleep ends.
  if [ -n "${"${WAIT:-}"}" ]; then go=; trap 'go=1' TERM; while [ -z "$go" ]; do sleep 0.05; done; trap '' TERM; fi
  from=$((SINCE - 1))
  t0=$(uptime_s)
  : > "$TMP/dirs"
  : > "$TMP/written"
  : > "$TMP/src.big"
  : > "$TMP/dst.big"
  : > "$TMP/delta.log"
  # The source, listed once: the replica is stopped and nothing else writes it, so this listing is
  # what is copied and, at the end, its side of the verification.
  listing "$SRC" "$TMP/src.listing"
  awk -F'|' "$LPATH"'$9 != "." { print $2 "|" $3 "|" lpath($0) }' "$TMP/src.listing" > "$TMP/src.list"
  # The new volume's entries as the first copy left them (an entry added behind it makes the verification fail), else listed.
  if [ -f "$DST/$CACHE/names" ]; then cp "$DST/$CACHE/names" "$TMP/dst.list"; else (cd "$DST" && entries) > "$TMP/dst.list"; fi
  # What the new volume has and the source no longer has is removed (the source does not change now: its listing is the truth).
  awk 'FILENAME == ARGV[1] { i = index($0, "|"); r = substr($0, i + 1); have[substr(r, index(r, "|") + 1)] = 1; next } !($0 in have)' "$TMP/src.list" "$TMP/dst.list" > "$TMP/gone.list"
  while IFS= read -r p; do
    if [ -e "$DST/$p" ] || [ -L "$DST/$p" ]; then rm -rf "$DST/$p"; echo "${"${p%/*}"}" >> "$TMP/dirs"; fi
  done < "$TMP/gone.list"
  # What is copied again: every entry changed since SINCE - 1 (its change time), or that the new volume lacks.
  awk -v from="$from" 'FILENAME == ARGV[1] { had[$0] = 1; next } { i = index($0, "|"); r = substr($0, i + 1); if (substr($0, 1, i - 1) + 0 >= from + 0 || !(substr(r, index(r, "|") + 1) in had)) print }' "$TMP/dst.list" "$TMP/src.list" > "$TMP/todo.list"
  cd "$SRC"
  while IFS='|' read -r ctime type p; do
    if [ "$type" = directory ]; then
      if [ ! -d "$DST/$p" ] || [ -L "$DST/$p" ]; then rm -rf "$DST/$p"; mkdir "$DST/$p"; fi
      chown "$(stat -c %u:%g "$p")" "$DST/$p"
      chmod "$(stat -c %a "$p")" "$DST/$p"
      echo "$p" >> "$TMP/dirs"
    elif [ "$type" = "regular file" ] && [ "$(stat -c %s "$p")" -gt "$BIG" ] && deltable "$p"; then
      delta "$p"
    else
      rm -rf "$DST/$p"
      cp -a "$p" "$DST/$p"
      echo "$p" >> "$TMP/written"
    fi
    echo "${"${p%/*}"}" >> "$TMP/dirs"
  done < "$TMP/todo.list"
  sort -u "$TMP/dirs" | while IFS= read -r d; do if [ -d "$SRC/$d" ] && [ -d "$DST/$d" ]; then touch -r "$SRC/$d" "$DST/$d"; fi; done
  chown "$(stat -c %u:%g "$SRC")" "$DST"
  chmod "$(stat -c %a "$SRC")" "$DST"
  touch -r "$SRC" "$DST"
  sync
  copied=$(took "$t0")
  t1=$(uptime_s)
  manifest "$SRC" src "$TMP/src.listing" > "$TMP/src.manifest" &
  a=$!
  (listing "$DST" "$TMP/dst.listing" && manifest "$DST" dst "$TMP/dst.listing") > "$TMP/dst.manifest" &
  b=$!
  wait "$a"
  wait "$b"
  rm -rf "${"${DST:?}"}/$CACHE"
  touch -r "$SRC" "$DST"
  sync
  s=$(sha256sum < "$TMP/src.manifest" | cut -d' ' -f1)
  d=$(sha256sum < "$TMP/dst.manifest" | cut -d' ' -f1)
  counts=$(awk -F'|' '$1 ~ /^regular/ { n++; b += $6 } END { printf "%d,%.0f", n, b }' "$TMP/src.manifest")
  blocks=$(awk -F'|' '{ n += $NF } END { print n + 0 }' "$TMP/delta.log")
  head="\"files\":${"${counts%,*}"},\"bytes\":${"${counts#*,}"},\"blockFiles\":$(wc -l < "$TMP/delta.log"),\"blocks\":$blocks,\"src\":\"$s\",\"dst\":\"$d\",\"seconds\":$copied,\"verifySeconds\":$(took "$t1")"
  if [ "$s" = "$d" ]; then report "{$head}"; exit 0; fi
  diff=$(diff "$TMP/src.manifest" "$TMP/dst.manifest" | grep '^[-+][^-+]' | head -n 4 | tr -d '"\\' | tr '\n\t' '  ' | cut -c 1-600 || true)
  report "{$head,\"diff\":\"$diff\"}"
  exit 2
  ;;
*) fail "MODE must be copy, sync or measure" ;;
esac
`;
