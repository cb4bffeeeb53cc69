"""The pools a woken snapshot mends: executors whose threads or processes it did not keep.

A snapshot is a fork (see `snapshot`): of the worker's threads only the main one
is in it, and the worker's child processes died with its process group when it
was lost. Pools that kept their workers there still count on them, and would
wait for them for ever: a ThreadPoolExecutor queues a task for threads that no
longer exist (`submit(...).result()` never returns), a process pool writes to
pipes the snapshot released. What is done depends on what the pool is made of:

- a ThreadPoolExecutor's threads are interchangeable and started on demand (each
  runs the pool's initializer): with none left, it is a pool that has not started
  any yet, a state it knows. It is repaired, not broken: its next `submit` starts
  new threads and the tasks waiting in its queue run. Breaking it would fail code
  that can work, and nothing of its state is lost but the threads (and the tasks
  they were running, below);
- a process pool (the standard library's, joblib's loky) has lost its processes,
  its queues' pipes and the thread that ran them: nothing is left to repair in
  place. It is marked broken, saying why, so that `submit` raises
  BrokenProcessPool at once (its `shutdown` still works); joblib's reusable
  executor is also forgotten, so that joblib's next parallel call starts a new
  one, as it does after any broken pool; a multiprocessing Pool is closed (its
  apply and map raise ValueError: "Pool not running");
- a task that was running in a thread or process when the snapshot was taken
  never finishes: its future fails, saying so, instead of never being done; so
  does a result a multiprocessing Pool owed (`get()`, or the next item of an
  `imap`, raises instead of waiting for ever).

Which pools the snapshot holds is told at the fork, from its threads (`pool_kinds`,
cheap: the threads are listed anyway); the mending runs only once a snapshot is
woken, as the worker (`mend`, a walk over the objects the collector tracks).
"""

from __future__ import annotations

import sys

from pyrelune.wire.events import RESUMED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from threading import Thread

#: What is said of each kind of pool (see `supervisor.snapshots.resumed`).
THREAD_POOL = "ThreadPoolExecutor"
PROCESS_POOL = "ProcessPoolExecutor"
LOKY = "joblib"
MULTIPROCESSING = "multiprocessing"
#: The pools whose threads run a function of theirs, by its module.
_TARGETS = {"concurrent.futures.thread": THREAD_POOL, "multiprocessing.pool": MULTIPROCESSING}
#: Modules of the process pools, whose ProcessPoolExecutor is broken at a wake.
_PROCESS_MODULES = ("concurrent.futures.process", "joblib.externals.loky.process_executor",
                    "loky.process_executor")
#: joblib's reusable executor: forgotten at a wake, so that the next call starts another.
_REUSABLE_MODULES = ("joblib.externals.loky.reusable_executor", "loky.reusable_executor")
#: The resource trackers of multiprocessing and loky, processes that pools start.
_TRACKER_MODULES = ("multiprocessing.resource_tracker",
                    "joblib.externals.loky.backend.resource_tracker",
                    "loky.backend.resource_tracker")
LOST_TASK = (f"{RESUMED}: this task was running in a thread or process of the lost worker, "
             "which the snapshot did not keep, so it never finished")
BROKEN_POOL = (f"{RESUMED}: this pool's worker processes were children of the lost worker "
               "and died with it; start a new pool (joblib starts one by itself)")


def pool_kinds(threads: Iterable[Thread]) -> list[str]:
    """The kinds of pool (THREAD_POOL, PROCESS_POOL, LOKY, MULTIPROCESSING) whose threads
    these are."""
    kinds: set[str] = set()
    for thread in threads:
        module = getattr(getattr(thread, "_target", None), "__module__", None)
        if module in _TARGETS:
            kinds.add(_TARGETS[module])
            continue
        module = type(thread).__module__
        if "loky" in module:
            kinds.add(LOKY)
        elif module == "concurrent.futures.process":
            kinds.add(PROCESS_POOL)
    return sorted(kinds)


def mend(kinds: list[str]) -> None:
    """In a woken snapshot, before its first cell: repair the thread pools, break the
    process pools and fail the tasks that were running (see the module's words). `kinds`:
    the pools whose threads ran at the fork (`pool_kinds`); with none, no pool had a
    worker to lose, and the objects are not walked (which takes a while in a big
    namespace: 0.3 s for 2 million)."""
    modules = sys.modules
    _restart_trackers(modules)
    if not kinds:
        return
    import gc

    threads = modules.get("concurrent.futures.thread")
    thread_pool: type = getattr(threads, "ThreadPoolExecutor", type(None))
    process_pools = tuple(pool for name in _PROCESS_MODULES
                          if isinstance(pool := getattr(modules.get(name),
                                                        "ProcessPoolExecutor", None), type))
    pool_module = modules.get("multiprocessing.pool")
    mp_pool: type = getattr(pool_module, "Pool", type(None))
    base = modules.get("concurrent.futures._base")
    future: type = getattr(base, "Future", type(None))
    for found in gc.get_objects():
        if isinstance(found, thread_pool):
            _restart(found)
        elif isinstance(found, process_pools):
            _break(found)
        elif isinstance(found, mp_pool):
            _close(found)
        elif isinstance(found, future) and getattr(found, "_state", None) == "RUNNING":
            _fail(found)
    if threads is not None:
        threads._threads_queues.clear()  # its threads, which exit joins: none is left
    for name in _PROCESS_MODULES:
        if (module := modules.get(name)) is not None:
            module._threads_wakeups.clear()  # the pools' threads, woken at exit: all gone
    for name in _REUSABLE_MODULES:
        if (module := modules.get(name)) is not None:
            vars(module).update(_executor=None, _executor_kwargs=None)


def _restart_trackers(modules: Mapping[str, object]) -> None:
    """The resource trackers' processes were the lost worker's children: the next pool (or
    shared memory) starts another, without warning that one "died unexpectedly" (what it
    tracked for the lost worker, a semaphore or a folder of joblib's, is left behind)."""
    for name in _TRACKER_MODULES:
        tracker = getattr(modules.get(name), "_resource_tracker", None)
        if tracker is not None and getattr(tracker, "_fd", None) is not None:
            tracker._fd = tracker._pid = None


def _restart(pool: object) -> None:
    """A ThreadPoolExecutor as if it had never started a thread, its queued tasks kept."""
    import queue
    import threading

    if getattr(pool, "_shutdown", True) or getattr(pool, "_broken", True) or not getattr(
            pool, "_threads", None):
        return  # shut down (submit refuses), broken, or no thread started yet: as it is
    old = pool._work_queue  # type: ignore[attr-defined]
    waiting = type(old)()
    while True:
        try:
            waiting.put(old.get_nowait())
        except queue.Empty:
            break
    pool._work_queue = waiting  # type: ignore[attr-defined]
    pool._threads = set()  # type: ignore[attr-defined]
    pool._idle_semaphore = threading.Semaphore(0)  # type: ignore[attr-defined]


def _break(pool: object) -> None:
    """A process pool whose processes are gone: submit raises, shutdown does not write to
    the released pipe of its manager's thread."""
    flags = getattr(pool, "_flags", None)
    if flags is not None:  # loky's
        broken = sys.modules["concurrent.futures.process"].BrokenProcessPool
        flags.broken, flags.shutdown = broken(BROKEN_POOL), True
    else:
        pool._broken = BROKEN_POOL  # type: ignore[attr-defined]
    wakeup = getattr(pool, "_executor_manager_thread_wakeup", None)
    if wakeup is not None:
        wakeup._closed = True  # its pipe is released: no one is to write to it (at its end)
    pool._executor_manager_thread_wakeup = None  # type: ignore[attr-defined]
    for item in list(getattr(pool, "_pending_work_items", {}).values()):
        _fail(item.future)  # queued for processes that are gone


def _close(pool: object) -> None:
    """A multiprocessing Pool whose processes are gone: its calls raise "Pool not running",
    and the results it owed fail."""
    if getattr(pool, "_state", None) == "RUN":
        pool._state = "CLOSE"  # type: ignore[attr-defined]
    # The cache's own removal would wake the pool's handler through a released pipe: read as
    # a plain dict, and left as it is (the pool is closed).
    for owed in list(dict.values(getattr(pool, "_cache", None) or {})):
        _give_up(owed)


def _give_up(result: object) -> None:
    """A result of a multiprocessing Pool's that no process will send now: `get()` raises
    (an `imap`'s next item, after those it has), as for a task that failed."""
    error = RuntimeError(LOST_TASK)
    condition = getattr(result, "_cond", None)  # an imap's iterator
    if condition is None:  # apply_async's, map_async's, starmap_async's
        condition = result._event._cond  # type: ignore[attr-defined]
    if not condition.acquire(False):
        return  # held by a thread that is gone: touching it would wait for ever
    try:
        if hasattr(result, "_items"):
            result._items.append((False, error))
            result._length = result._index  # type: ignore[attr-defined]  # no more after it
            condition.notify_all()
            return
        result._success, result._value = False, error  # type: ignore[attr-defined]
    finally:
        condition.release()
    result._event.set()  # type: ignore[attr-defined]


def _fail(future: object) -> None:
    """A task's future that no thread or process will finish now."""
    if future._state not in ("PENDING", "RUNNING"):  # type: ignore[attr-defined]
        return  # done (asking, `done()`, would take the lock this avoids)
    condition = future._condition  # type: ignore[attr-defined]
    if not condition.acquire(False):
        return  # held by a thread that is gone: touching it would wait for ever
    condition.release()
    future.set_exception(RuntimeError(LOST_TASK))  # type: ignore[attr-defined]
