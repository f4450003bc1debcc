// The script of the --migrate-existing copy pods: rsync (3.1.3 or later) does the copying, with
// -aHAXS --numeric-ids --modify-window=-1, what rsync keeps: contents, hard links, sparse files,
// xattrs (SELinux labels among them), POSIX ACLs, owners and groups by number, modes (setuid,
// setgid, sticky), times to the nanosecond (symlinks' too), symlinks (dangling ones too), fifos,
// sockets and device nodes, and the volume root's own mode, owner and times. The rest is sh and the
// tools of busybox or any userland with the same options (find -print0, xargs -0, stat -c,
// sha256sum, awk, sort, sed, tr, dd, du, df), and getfattr when the image has it. /src is the claim
// (read-only), /dst the new volume; the report goes to the termination message as one line of JSON.
//
// Names: every name the kernel allows, newlines and backslashes included. Lists are NUL-separated
// (find -print0 | xargs -0); in the script's own one-a-line lists a name's newlines are the byte
// STX (0x02), so a name holding byte 0x01 or 0x02 itself cannot be listed faithfully: it is still
// copied (by rsync), and its verification fails loudly rather than pass.
//
// lost+found at the top: on ext2/3/4 it is the file system's own (mke2fs makes it, e2fsck fills it):
// left out on both sides, and the new volume's own is kept. On any other file system a top-level
// lost+found is data: copied and verified like the rest.
//
// MODE=measure: the bytes the data takes ({bytes}, du), before a shrink.
//
// MODE=copy, while the pod still runs: empties /dst (an interrupted earlier copy; the new volume
// holds nothing else but its own lost+found), checks the data fits, copies everything with rsync
// (a file gone before it was read is left to the final copy; any other error stops the copy),
// reports {since, bytes}: since is when it began, by the node's clock, which is the clock of the
// file times it compares.
//
// MODE=sync, once the pod is stopped (SINCE from the copy): lists the source once (it no longer
// changes); every entry whose change time (ctime, which no program can set back) is from SINCE - 1
// on is removed from /dst, but directories (rsync alone would trust a size and a time), or a large
// file is brought up to date block by block (below); then rsync --delete makes /dst the source's
// copy again. Then it verifies, three ways, all of which must agree:
// - a manifest of each side, sorted and hashed: per entry (the root too) its type, owner, group,
//   mode, mtime to the nanosecond, size (not a directory's) and device numbers; its hard-link group;
//   each symlink's target; each regular file's sha256; and, with getfattr, every xattr (ACLs among
//   them, as system.posix_acl_*). Equal digests: exit 0 with {files, bytes, src, dst}; else exit 2
//   with the first differences. A file that cannot be read fails the verification (exit 1).
// - rsync's own comparison of both sides (a dry run, which lists any attribute it keeps that differs,
//   xattrs and ACLs included, whatever the image has);
// - a sparse file stays sparse: the new volume's copy takes no more room than the source's (1 MiB
//   and 1% of its size of slack, for file systems of other block sizes).
// What rsync's comparison or the sparse check finds is added to the new volume's manifest, so its
// digest then differs.
//
// The sha256 of a file unchanged since the first copy is not read again while the pod is down:
// the first copy hashes both sides once it is done (the pod still runs) into a folder on the new
// volume (removed before the final copy's rsync). A source file's hash is reused only when its
// change time is from before the first copy began and is still the one seen when it was hashed;
// a new volume's file only when its change time is still the one seen (whatever wrote it since,
// rsync or anything else, changed it). Everything else is read again. Without that folder (a
// rerun), every file is read.
//
// Large files (over BIG_MIB MiB, 64 by default) are hashed in blocks of BLOCK_MIB MiB (16): their
// hash in the manifests is the sha256 of the list of their blocks' sha256, on both sides alike.
// The first copy keeps the new volume's block hashes too, so a large file that changed while the
// pod ran is not copied whole again: its source is read once (its blocks hashed on two cores),
// only the blocks that differ from the new volume's are written (dd), and only those are read
// again on the new volume; its times are then set as the source's, and rsync finds it up to date and
// sets the rest (owner, mode, ACLs, xattrs). That holds only for a file that is not sparse, has one
// link on both sides, and whose new-volume copy is the one hashed (its change time and size as seen
// then) and not longer than the source; else rsync copies it whole.
//
// WAIT (sync only, when set): nothing is read until the script gets SIGTERM, which is the go: a pod
// started before its replica stops is deleted by the tool (gracefully, with a grace period longer
// than any copy) the moment the replica is gone, and kubelet sends it SIGTERM at once; it then makes
// the final copy and exits, and kubelet, which waits for that exit, reports it at once.
export const copyScript = String.raw`set -eu
SRC=${"${"}SRC:-/src}; DST=${"${"}DST:-/dst}; OUT=${"${"}OUT:-/dev/termination-log}; TMP=${"${"}TMPDIR:-/tmp}
CACHE=.kubectl-appstorage-verify
BLOCK=${"${"}BLOCK_MIB:-16}; BIG=$((${"${"}BIG_MIB:-64} * 1048576))
LC_ALL=C; export LC_ALL
SOH=$(printf '\001'); STX=$(printf '\002')
report() { printf '%s' "$1" > "$OUT"; }
# Seconds since boot, to the hundredth: how long the copy and the verification took, by the node's clock.
uptime_s() { cut -d' ' -f1 /proc/uptime; }
took() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }'; }
fail() { m=$(printf '%s' "$1" | tr -d '"\\' | tr '\n\001\002' '   '); report "{\"error\":\"$m\"}"; echo "$1" >&2; exit 1; }
# The tools, before anything is read or written: a copy image without one of them stops here.
for t in rsync find stat xargs sha256sum awk sort sed tr dd du df cut wc grep diff; do
  command -v "$t" > /dev/null || fail "the copy image has no $t: pass --copy-image with an image that has rsync and sh, find, stat, xargs, sha256sum, awk, sort, sed, tr, dd, du, df, cut, wc, grep and diff"
done
# rsync 3.1.3 and later compare and set times to the nanosecond (--modify-window=-1).
rv=$(rsync --version | sed -n '1s/^rsync *version v\{0,1\}\([0-9.]*\).*/\1/p')
case "$rv" in 3.1.[3-9]* | 3.[2-9]* | [4-9]*) ;; *) fail "rsync ${"${"}rv:-of unknown version} is older than 3.1.3, which keeps times to the nanosecond: pass --copy-image with a newer rsync" ;; esac
XATTRS=; if command -v getfattr > /dev/null; then XATTRS=getfattr; fi
# A top-level lost+found is the file system's own on ext2/3/4 (mke2fs makes it, e2fsck fills it): left
# out on both sides, and kept on the new volume. On any other file system one is data, and copied.
SKIP_LF=; if [ "$(stat -f -c %T "$SRC")" = "ext2/ext3" ] || { [ ! -e "$SRC/lost+found" ] && [ ! -L "$SRC/lost+found" ]; }; then SKIP_LF=1; fi
# rsync with what is left out: the hashes' folder, and lost+found when it is not data (hidden on the
# source, kept on the new volume). -aHAXS --numeric-ids: hard links, ACLs, xattrs, sparse files,
# owners by number; --modify-window=-1: times to the nanosecond.
rs() {
  if [ -n "$SKIP_LF" ]; then set -- --exclude=/lost+found "$@"; fi
  rsync -aHAXS --numeric-ids --modify-window=-1 --exclude="/$CACHE" "$@"
}
# Every entry below the current directory but what is left out, NUL-terminated.
names0() {
  if [ -n "$SKIP_LF" ]; then find . -mindepth 1 \( -path ./lost+found -o -path "./$CACHE" \) -prune -o -print0
  else find . -mindepth 1 -path "./$CACHE" -prune -o -print0; fi
}
# stat0 FORMAT: "FORMAT|PATH" of each entry of a NUL-terminated list (stdin), one line each: each
# record starts with SOH, so a name's newlines become STX and nothing else does ("E" paths below).
stat0() { { xargs -0 -r stat -c "$SOH$1|%n"; printf '%s' "$SOH"; } | tr '\n\001' '\002\n' | sed -e '1d' -e "s/$STX\$//"; }
# E paths (one a line, newlines as STX) back to a NUL-terminated list; and one back to its name.
nul() { tr '\n\002' '\000\n'; }
real() { r=$(printf '%s' "$1" | tr '\002' '\n'; echo x); printf '%s' "${"${"}r%x}"; }
# listing: the current directory itself (".") and every entry below it, one line each:
# stamp|ctime|type|uid|gid|mode|mtime|size|links|inode|device|blocks|E (stamp, the change time,
# and mtime to the nanosecond).
LFMT='%z|%Z|%F|%u|%g|%a|%y|%s|%h|%i|%t:%T|%b'
listing() { { printf '.\0'; names0; } | stat0 "$LFMT"; }
AWKLIB='function after(s, n) { while (n-- > 0) s = substr(s, index(s, "|") + 1); return s }'
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
# sums TAG LIST OUT [BLOCKS]: "sha256|E" of each regular file of LIST ("size|E" lines, paths below the
# current directory) into OUT. Small files with plain names are hashed in batches (sha256sum prints
# "HASH  NAME", and a name without newline or backslash as it is); large ones by their blocks (with
# BLOCKS, their blocks go there as "k|sha256|E"), names with a newline or a backslash one by one.
# A file that cannot be read gets no line.
sums() {
  : > "$3"; : > "$TMP/sums.$1.one"
  awk -F'|' -v big="$BIG" -v stx="$STX" -v one="$TMP/sums.$1.one" '{ p = substr($0, index($0, "|") + 1); if ($1 + 0 > big || index(p, stx) || index(p, "\\")) print $1 "|" p > one; else print p }' "$2" > "$TMP/sums.$1.plain"
  nul < "$TMP/sums.$1.plain" | xargs -0 -r sha256sum 2> "$TMP/sums.$1.err" | awk '{ print substr($0, 1, 64) "|" substr($0, 67) }' >> "$3" || true
  while IFS= read -r line; do
    e=${"${"}line#*|}; p=$(real "$e")
    if [ "${"${"}line%%|*}" -gt "$BIG" ]; then
      blocks "$p" "$TMP/sums.$1.b" 1 || continue
      echo "$(listsum "$TMP/sums.$1.b")|$e" >> "$3"
      if [ -n "${"${"}4:-}" ]; then awk -v e="$e" '{ print $0 "|" e }' "$TMP/sums.$1.b" >> "$4"; fi
    else
      h=$(sha256sum < "$p" | cut -c 1-64) || continue
      echo "$h|$e" >> "$3"
    fi
  done < "$TMP/sums.$1.one"
}
# stamps TAG OUT: "stamp|sha256|E" of every regular file below the current directory, the stamp (its
# change time) taken before it is read; a large file's blocks go to OUT.blocks.
stamps() {
  : > "$2.blocks"
  names0 | stat0 '%z|%F|%s' | awk -F'|' "$AWKLIB"' $2 ~ /^regular/ { print $1 "|" $3 "|" after($0, 3) }' > "$2.stat"
  awk -F'|' "$AWKLIB"'{ print $2 "|" after($0, 2) }' "$2.stat" > "$2.list"
  sums "$1" "$2.list" "$2.sha" "$2.blocks"
  awk -F'|' "$AWKLIB"'FILENAME == ARGV[1] { s[after($0, 2)] = $1; next } { e = substr($0, 66); if (e in s) print s[e] "|" substr($0, 1, 64) "|" e }' "$2.stat" "$2.sha" > "$2"
}
# deltable E (in SRC, the pod stopped): whether a large file that changed can be brought up to date
# block by block: not sparse, one link on both sides, and the new volume's file still the one the first
# copy hashed (its change time then), and not longer.
deltable() {
  d="$DST/$1"
  [ -s "$TMP/cache.dst" ] && [ -f "$d" ] && [ ! -L "$d" ] || return 1
  [ "$(stat -c %h "$d")" = 1 ] && [ "$(stat -c %s "$1")" -ge "$(stat -c %s "$d")" ] || return 1
  was=$(awk -v e="$1" '{ i = index($0, "|"); r = substr($0, i + 1); if (substr(r, 66) == e) { print substr($0, 1, i - 1); exit } }' "$TMP/cache.dst")
  [ -n "$was" ] && [ "$was" = "$(stat -c %z "$d")" ]
}
# delta E: that file brought up to date block by block (see deltable), its times set as the source's
# (rsync then finds its size and time equal and sets the rest: owner, mode, ACLs, xattrs); both sides'
# hashes of it go to TMP/src.big and TMP/dst.big.
delta() {
  p=$1; d="$DST/$p"
  awk -v e="$p" -F'|' '{ i = index($0, "|"); r = substr($0, i + 1); j = index(r, "|"); if (substr(r, j + 1) == e) print $1 "|" $2 }' "$TMP/cache.dst.blocks" > "$TMP/delta.had"
  blocks "$p" "$TMP/delta.src" 2
  awk -F'|' 'FILENAME == ARGV[1] { had[$1] = $2; next } had[$1] != $2 { print $1 }' "$TMP/delta.had" "$TMP/delta.src" > "$TMP/delta.todo"
  while IFS= read -r k; do dd if="$p" of="$d" bs=1048576 skip=$((k * BLOCK)) seek=$((k * BLOCK)) count="$BLOCK" conv=notrunc 2>/dev/null; done < "$TMP/delta.todo"
  touch -r "$p" "$d"
  while IFS= read -r k; do echo "$k|$(dd if="$d" bs=1048576 skip=$((k * BLOCK)) count="$BLOCK" 2>/dev/null | sha256sum | cut -c 1-64)"; done < "$TMP/delta.todo" > "$TMP/delta.new"
  awk -F'|' 'FILENAME == ARGV[1] { now[$1] = $2; next } FILENAME == ARGV[2] { if (!($1 in now)) now[$1] = $2; next } END { for (k in now) print k "|" now[k] }' "$TMP/delta.new" "$TMP/delta.had" | sort -t '|' -k 1,1n > "$TMP/delta.dst"
  # Only numbered blocks within the source's count: a kept list that was not whole has a marker line, and the blocks it lacked were written and read again above.
  awk -F'|' -v n="$(wc -l < "$TMP/delta.src")" '$1 < n' "$TMP/delta.dst" > "$TMP/delta.dst.n"
  echo "$(listsum "$TMP/delta.src")|$p" >> "$TMP/src.big"
  echo "$(listsum "$TMP/delta.dst.n")|$p" >> "$TMP/dst.big"
  echo "$p|$(wc -l < "$TMP/delta.todo")" >> "$TMP/delta.log"
}
# hashes SIDE LISTING: "sha256|E" of the listing's regular files (run in its folder), reusing a
# cached hash where it is still good: a source file's when its change time is the one seen when it
# was hashed and from before the first copy began, a new-volume file's when its change time is the
# one seen (whatever wrote it since, rsync or anything else, changed it). The rest are read again
# (their paths in TMP/SIDE.fresh).
hashes() {
  : > "$TMP/$1.fresh"
  awk -F'|' -v side="$1" -v from="${"${"}from:-0}" -v fresh="$TMP/$1.fresh" "$AWKLIB"'
    FILENAME == ARGV[1] { i = index($0, "|"); r = substr($0, i + 1); cs[substr(r, 66)] = substr($0, 1, i - 1); ch[substr(r, 66)] = substr(r, 1, 64); next }
    FILENAME == ARGV[2] { big[substr($0, 66)] = substr($0, 1, 64); next }
    $3 ~ /^regular/ { e = after($0, 12)
      if (e in big) print big[e] "|" e
      else if ((e in cs) && cs[e] == $1 && (side == "dst" || $2 + 0 < from + 0)) print ch[e] "|" e; else print $8 "|" e > fresh }
  ' "$TMP/cache.$1" "$TMP/$1.big" "$2" > "$TMP/$1.sums"
  sums "$1" "$TMP/$1.fresh" "$TMP/$1.sums.fresh"
  cat "$TMP/$1.sums.fresh"
  awk 'FILENAME == ARGV[1] { i = index($0, "|"); got[substr($0, i + 1)] = 1; next } !(substr($0, index($0, "|") + 1) in got) { print substr($0, index($0, "|") + 1) }' "$TMP/$1.sums.fresh" "$TMP/$1.fresh" > "$TMP/$1.unread"
  cat "$TMP/$1.sums"
}
# manifest DIR SIDE LISTING: the sorted manifest of DIR: per entry (the root too) its type, owner,
# group, mode (setuid, setgid, sticky), mtime to the nanosecond, size (not a directory's) and device
# numbers; its hard-link group (the first of its names); each symlink's target; each regular file's
# sha256; with getfattr, every xattr (ACLs among them, as system.posix_acl_*; SELinux labels, as
# security.selinux). Both sides alike, so equal digests mean equal trees.
manifest() (
  cd "$1"
  {
    awk -F'|' "$AWKLIB"'{ dev = ($3 ~ /special/) ? $11 : "-"; print "E|" after($0, 12) "|" $3 "|" $4 "|" $5 "|" $6 "|" $7 "|" ($3 == "directory" ? "-" : $8) "|" dev }' "$3"
    awk -F'|' "$AWKLIB"'$3 != "directory" && $9 > 1 { e = after($0, 12); if (!($10 in first) || e < first[$10]) first[$10] = e; n[e] = $10 } END { for (e in n) print "H|" e "|" first[n[e]] }' "$3"
    awk -F'|' "$AWKLIB"'$3 == "symbolic link" { print after($0, 12) }' "$3" | nul | stat0 '%N' | sed 's/^/L|/'
    hashes "$2" "$3" | sed 's/^/C|/'
    if [ -n "$XATTRS" ]; then
      awk -F'|' "$AWKLIB"'{ print after($0, 12) }' "$3" | nul | xargs -0 -r getfattr -h -d -m - -e hex 2> "$TMP/$2.xattr.err" |
        awk '/^# file: / { f = substr($0, 9); next } /=/ { print "X|" f "|" $0 }' || true
    fi
  } | sort
)
case "${"${"}MODE:-}" in
measure)
  report "{\"bytes\":$(($(du -sk "$SRC" | awk '{ print $1 }') * 1024))}"
  ;;
copy)
  since=$(date +%s)
  # An interrupted earlier copy is all the new volume holds, but its own lost+found.
  find "$DST" -mindepth 1 -maxdepth 1 ! -name lost+found -exec rm -rf {} +
  need=$(du -sk "$SRC" | awk '{ print $1 }')
  free=$(df -Pk "$DST" | awk 'NR == 2 { print $4 }')
  [ "$need" -le "$free" ] || fail "the data takes $((need * 1024)) bytes and the new volume has $((free * 1024)) bytes free: choose a larger size"
  t0=$(uptime_s)
  # The replica still writes: a file gone before it was read (24) is taken by the final copy; any other error stops.
  rc=0; rs --delete "$SRC/" "$DST/" 2> "$TMP/rsync.err" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 24 ] || fail "rsync failed (exit $rc): $(tail -n 3 "$TMP/rsync.err")"
  sync
  seconds=$(took "$t0")
  # The hashes of both sides while the pod still runs: the final copy reads again only what changed.
  t1=$(uptime_s)
  (cd "$SRC" && stamps src "$TMP/src.cache") &
  a=$!
  (cd "$DST" && stamps dst "$TMP/dst.cache") &
  b=$!
  wait "$a"
  wait "$b"
  mkdir "$DST/$CACHE"
  cp "$TMP/src.cache" "$DST/$CACHE/src"
  cp "$TMP/dst.cache" "$DST/$CACHE/dst"
  cp "$TMP/dst.cache.blocks" "$DST/$CACHE/dst.blocks"
  sync
  report "{\"since\":$since,\"bytes\":$((need * 1024)),\"seconds\":$seconds,\"hashSeconds\":$(took "$t1")}"
  ;;
sync)
  [ -n "${"${"}SINCE:-}" ] || fail "SINCE is not set: the first copy did not report when it began"
  # Waiting, nothing read yet, until SIGTERM (the pod deleted: the go); the trap runs once a sleep ends.
  if [ -n "${"${"}WAIT:-}" ]; then go=; trap 'go=1' TERM; while [ -z "$go" ]; do sleep 0.05; done; trap '' TERM; fi
  from=$((SINCE - 1))
  t0=$(uptime_s)
  for f in src dst dst.blocks; do if [ -f "$DST/$CACHE/$f" ]; then cp "$DST/$CACHE/$f" "$TMP/cache.$f"; else : > "$TMP/cache.$f"; fi; done
  : > "$TMP/src.big"; : > "$TMP/dst.big"; : > "$TMP/delta.log"
  # The source, listed once: the replica is stopped and nothing else writes it, so this listing is
  # what is copied and, at the end, its side of the verification.
  (cd "$SRC" && listing) > "$TMP/src.listing"
  # What changed since the first copy began (its change time, which no program can set back): a
  # large file brought up to date block by block; any other entry but a directory removed from the
  # new volume, for rsync to copy it whole (rsync alone would trust a size and a time).
  # Candidates for block by block: large regular files of one link, not sparse, plain names; the rest
  # of what changed is removed in one batch (a directory there is left to rsync).
  : > "$TMP/changed.large"
  awk -F'|' -v from="$from" -v big="$BIG" -v stx="$STX" -v cand="$TMP/changed.large" "$AWKLIB"'
    $2 + 0 >= from + 0 && $3 != "directory" { e = after($0, 12)
      if ($3 ~ /^regular/ && $8 + 0 > big && $9 == 1 && $12 * 512 >= $8 + 0 && !index(e, stx) && !index(e, "\\")) print e > cand; else print e }
  ' "$TMP/src.listing" > "$TMP/changed"
  cd "$SRC"
  while IFS= read -r e; do
    if deltable "$e"; then delta "$e"; else echo "$e" >> "$TMP/changed"; fi
  done < "$TMP/changed.large"
  nul < "$TMP/changed" | (cd "$DST" && xargs -0 -r rm -f 2> /dev/null) || true
  cd /
  rm -rf "${"${"}DST:?}/$CACHE"
  rc=0; rs --delete "$SRC/" "$DST/" 2> "$TMP/rsync.err" || rc=$?
  [ "$rc" = 0 ] || fail "rsync failed (exit $rc): $(tail -n 3 "$TMP/rsync.err")"
  sync
  copied=$(took "$t0")
  t1=$(uptime_s)
  manifest "$SRC" src "$TMP/src.listing" > "$TMP/src.manifest" &
  a=$!
  ( (cd "$DST" && listing) > "$TMP/dst.listing" && manifest "$DST" dst "$TMP/dst.listing") > "$TMP/dst.manifest" &
  b=$!
  # rsync's own comparison of every attribute it keeps (a dry run lists any difference).
  rs -n -i --delete "$SRC/" "$DST/" > "$TMP/rsync.check" 2>&1 || echo "rsync's comparison failed (exit $?)" >> "$TMP/rsync.check"
  wait "$a"
  wait "$b"
  for side in src dst; do
    if [ -s "$TMP/$side.unread" ]; then fail "could not read $(wc -l < "$TMP/$side.unread") file(s) of the $side volume, among them $(head -n 1 "$TMP/$side.unread" | tr '\002' ' '): $(head -n 1 "$TMP/sums.$side.err")"; fi
  done
  # A sparse file must stay sparse: the new volume's file may not take more room than the source's
  # (1 MiB and 1% of its size of slack, for file systems of other block sizes and their extents).
  awk -F'|' "$AWKLIB"'FILENAME == ARGV[1] { if ($3 ~ /^regular/) b[after($0, 12)] = $12; next } $3 ~ /^regular/ && (after($0, 12) in b) && $12 * 512 > b[after($0, 12)] * 512 + 1048576 + $8 / 100 { print "sparse file filled: " after($0, 12) }' "$TMP/src.listing" "$TMP/dst.listing" > "$TMP/filled"
  # Whatever rsync's comparison or the sparse check found is the new volume's difference: its digest then differs.
  sed 's/^/R|/' "$TMP/rsync.check" >> "$TMP/dst.manifest"
  sed 's/^/S|/' "$TMP/filled" >> "$TMP/dst.manifest"
  sync
  s=$(sha256sum < "$TMP/src.manifest" | cut -d' ' -f1)
  d=$(sha256sum < "$TMP/dst.manifest" | cut -d' ' -f1)
  counts=$(awk -F'|' '$3 ~ /^regular/ { n++; b += $8 } END { printf "%d,%.0f", n, b }' "$TMP/src.listing")
  blocks=$(awk -F'|' '{ n += $NF } END { print n + 0 }' "$TMP/delta.log")
  head="\"files\":${"${"}counts%,*},\"bytes\":${"${"}counts#*,},\"blockFiles\":$(wc -l < "$TMP/delta.log"),\"blocks\":$blocks,\"xattrs\":\"${"${"}XATTRS:-rsync}\",\"src\":\"$s\",\"dst\":\"$d\",\"seconds\":$copied,\"verifySeconds\":$(took "$t1")"
  if [ "$s" = "$d" ]; then report "{$head}"; exit 0; fi
  diff=$(diff "$TMP/src.manifest" "$TMP/dst.manifest" | grep '^[-+][^-+]' | head -n 4 | tr -d '"\\' | tr '\n\t\001\002' '    ' | cut -c 1-600 || true)
  report "{$head,\"diff\":\"$diff\"}"
  exit 2
  ;;
*) fail "MODE must be copy, sync or measure" ;;
esac
`;
