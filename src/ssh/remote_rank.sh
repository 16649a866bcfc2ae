# rigaudit's remote rank wrapper. Fixed text, reviewed with src/replay/remote.rs: nothing of a
# page is ever pasted into it; the page's argv and environment reach it only as its arguments.
#
#   sh -c "$WRAPPER" rigaudit-rank GRACE [NAME=VALUE ...] -- PROGRAM [ARG ...]
#
# Exports each NAME=VALUE, starts PROGRAM in a session (and process group) of its own with stdin
# from /dev/null, and watches its own stdin, which is the ssh channel: at end of file (rigaudit
# closed it to stop the rank, or the connection dropped) the group gets SIGTERM, GRACE seconds,
# then SIGKILL. When PROGRAM ends by itself, what it left in its group is stopped the same way and
# the wrapper exits with PROGRAM's status. It writes one line (the group id) and nothing after,
# so a closed connection cannot stop it with SIGPIPE before the group is gone.
grace=$1
shift
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
    export "$1" || exit 125
    shift
done
if [ "$#" -lt 2 ]; then
    echo "rigaudit-remote: no program to run" >&2
    exit 125
fi
shift
if ! command -v setsid >/dev/null 2>&1; then
    echo "rigaudit-remote: setsid is not installed on $(uname -n)" >&2
    exit 127
fi
exec 3<&0
setsid "$@" </dev/null 3<&- &
pid=$!
echo "rigaudit-remote: rank started on $(uname -n) as process group $pid" >&2
stop_group() {
    kill -TERM "-$pid" 2>/dev/null || return 0
    n=0
    while kill -0 "-$pid" 2>/dev/null && [ "$n" -lt "$((grace * 10))" ]; do
        sleep 0.1
        n=$((n + 1))
    done
    kill -KILL "-$pid" 2>/dev/null
    return 0
}
(
    while read -r _ <&3; do :; done
    stop_group
) </dev/null &
watcher=$!
exec 3<&-
wait "$pid"
status=$?
kill "$watcher" 2>/dev/null
stop_group
exit "$status"
