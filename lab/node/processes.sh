# Sourced by the lab's scripts that start and stop the node's processes (kubelet.sh, runtime.sh,
# nodes.sh, host.sh, lab/cluster): stopping a process from its pid file, and taking away a cgroup
# with whatever still runs in it.
# shellcheck shell=bash

# stop_pidfile FILE: stops the process whose pid FILE holds (TERM, then KILL after 10 s) and
# removes FILE. Nothing to stop when FILE is missing or its process is gone.
stop_pidfile() {
  local f=$1 pid i
  [[ -f "$f" ]] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# remove_cgroup DIR: kills every process in cgroup DIR and the cgroups below it (containers whose
# shim is gone), then removes them, deepest first; for up to 2 s, as a killed process leaves its
# cgroup a moment later.
remove_cgroup() {
  local cg=$1 pid
  find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [[ -d "$cg" ]] || break
    sleep 0.2
  done
}

# daemon PIDFILE LOGFILE CMD...: starts CMD in the background in a session of its own (a Ctrl-C in
# the caller's terminal does not reach it), stdin /dev/null, stdout and stderr to LOGFILE, and no
# other file descriptor of the caller: a lock the caller holds (flock on a test's lock file) or a
# pipe a test reads would otherwise stay open in CMD until it stops. PIDFILE gets CMD's own pid
# (the subshell execs setsid, which execs CMD, as the subshell leads no process group).
daemon() {
  local pidfile=$1 logfile=$2; shift 2
  (
    local fd
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid "$@" >"$logfile" 2>&1 </dev/null
  ) &
  echo $! > "$pidfile"
}
