"""Whether a warm runtime can stand where its launcher stands: its sandbox, its scheduling.

A host may confine the runtime it starts (`unshare -n`, a cgroup, a seccomp
filter, dropped capabilities, another group) or lower its priority (`nice`,
`taskset`, `chrt`). The warm process was started by an earlier cell, maybe
from elsewhere: what a process cannot enter or take on (a namespace, a
cgroup, a filter, privileges) sends the cell cold (`differs`); what it can
(niceness, CPU affinity, scheduling policy, OOM score) it takes on from the
launcher (`carry_over`). Linux only, read from /proc.
"""

from __future__ import annotations

import os

#: The lines of /proc/PID/status that say what a process may do; any difference goes cold.
_STATUS = (b"Uid", b"Gid", b"Groups", b"CapInh", b"CapPrm", b"CapEff", b"CapBnd", b"CapAmb",
           b"NoNewPrivs", b"Seccomp", b"Seccomp_filters", b"Speculation_Store_Bypass")


def identity(pid: int | str = "self") -> dict[str, str]:
    """What confines process `pid`: its namespaces, cgroup, LSM label and privileges.

    Raises OSError when /proc does not let us see it (another user's, not dumpable).
    """
    found = {f"namespace {name}": os.readlink(f"/proc/{pid}/ns/{name}")
             for name in sorted(os.listdir(f"/proc/{pid}/ns"))}
    with open(f"/proc/{pid}/cgroup", "rb") as cgroup:
        found["cgroup"] = cgroup.read().decode("utf-8", "replace")
    try:
        with open(f"/proc/{pid}/attr/current", "rb") as label:
            found["security label"] = label.read().decode("utf-8", "replace")
    except OSError:
        pass  # no LSM that labels processes
    with open(f"/proc/{pid}/status", "rb") as status:
        for line in status:
            key, _, value = line.partition(b":")
            if key in _STATUS:
                found[key.decode()] = value.strip().decode("utf-8", "replace")
    return found


def differs(peer: int, mine: dict[str, str]) -> str | None:
    """Why the launcher `peer` stands somewhere this process (`mine`: its identity) cannot go."""
    try:
        theirs = identity(peer)
    except OSError as exc:
        return f"the launcher's sandbox cannot be read: {exc.strerror}"
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) != theirs.get(key):
            return f"the launcher runs in another sandbox: its {key} differs"
    return None


def carry_over(peer: int, pids: tuple[int, ...]) -> str | None:
    """Give processes `pids` the launcher's niceness, scheduling, CPU affinity and OOM score.

    None once done; else why not (lowering niceness takes a privilege the
    launcher may have had and this process lacks): the cell then runs cold.
    """
    try:
        nice = os.getpriority(os.PRIO_PROCESS, peer)
        policy = os.sched_getscheduler(peer)
        param = os.sched_getparam(peer)
        cpus = os.sched_getaffinity(peer)
        with open(f"/proc/{peer}/oom_score_adj", "rb") as adj:
            oom = adj.read().strip()
    except OSError as exc:
        return f"the launcher's scheduling cannot be read: {exc.strerror}"
    for pid in pids:
        step = "niceness"
        try:
            if os.getpriority(os.PRIO_PROCESS, pid) != nice:
                os.setpriority(os.PRIO_PROCESS, pid, nice)
            step = "scheduling policy"
            if (os.sched_getscheduler(pid), os.sched_getparam(pid)) != (policy, param):
                os.sched_setscheduler(pid, policy, param)
            step = "CPU affinity"
            if os.sched_getaffinity(pid) != cpus:
                os.sched_setaffinity(pid, cpus)
            step = "OOM score"
            with open(f"/proc/{pid}/oom_score_adj", "r+b") as adj:
                if adj.read().strip() != oom:
                    adj.seek(0)
                    adj.write(oom)
        except OSError as exc:
            return f"the launcher's {step} cannot be taken on: {exc.strerror}"
    return None
