# capped SECONDS CMD...: run CMD in its own process group and end the whole group at SECONDS.
# `timeout` ends only its child: the processes of migrations cut that way went on loading the GPU
# machine and spoiled the eighteenth session's CPU timings. Sourced by the device scripts.
capped() {
    local lim=$1; shift
    setsid "$@" & local pid=$!
    for _ in $(seq "$lim"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -- -"$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}
