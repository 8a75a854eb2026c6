"""Copy and move tasks of Mooncake's reference, a mixin of
MooncakeDistributedStore:

    task_id, rc = store.create_copy_task("k", [other.get_hostname()])
    response, rc = store.query_task(task_id)   # response.status: TaskStatus
    task_id, rc = store.create_move_task("k", store.get_hostname(), other.get_hostname())

The master records the task (its id a UUID, Mooncake's (hi, lo) pair of
ints); this store is the task's executor: a thread of its own reads the
object and writes it into a new replica on each target segment, then the
master attaches the copies (a move then drops the replica on its source).
Return codes are Mooncake's; docs/python.md "Copy and move tasks" lists the
rules and differences.
"""

import concurrent.futures
import enum
import threading

_INVALID_PARAMS = -600
_NIL = (0, 0)


class TaskType(enum.IntEnum):
    REPLICA_COPY = 0
    REPLICA_MOVE = 1


class TaskStatus(enum.IntEnum):
    PENDING = 0
    PROCESSING = 1
    SUCCESS = 2
    FAILED = 3


def _mooncake(code):
    from mooncake.store import _c  # the store module is loaded by the time of a call
    return _c(code)


def _pair(text):
    """A UUID's canonical text as Mooncake's (hi, lo) pair of ints."""
    digits = text.replace("-", "")
    return (int(digits[:16], 16), int(digits[16:], 16))


def _text(task_id):
    """Mooncake's (hi, lo) pair as the UUID's canonical text; None when it
    is not a pair of unsigned 64-bit ints."""
    try:
        hi, lo = task_id
    except (TypeError, ValueError):
        return None
    if not all(isinstance(v, int) and 0 <= v < 1 << 64 for v in (hi, lo)):
        return None
    d = "%016x%016x" % (hi, lo)
    return "%s-%s-%s-%s-%s" % (d[:8], d[8:12], d[12:16], d[16:20], d[20:])


class QueryTaskResponse:
    """A task as the master holds it: id, type, status, created_at_ms_epoch,
    last_updated_at_ms_epoch, assigned_client (this store's client id, as a
    (hi, lo) pair), message ("" unless FAILED: the error's name)."""

    def __init__(self, info):
        self.id = _pair(info["id"])
        self.type = TaskType(info["type"])
        self.status = TaskStatus(info["status"])
        self.created_at_ms_epoch = info["created_at_ms_epoch"]
        self.last_updated_at_ms_epoch = info["last_updated_at_ms_epoch"]
        self.assigned_client = _pair(info["assigned_client"])
        self.message = info["message"]

    def __repr__(self):
        return "QueryTaskResponse(id=%r, type=%s, status=%s, message=%r)" % (
            self.id, self.type.name, self.status.name, self.message)


class TasksMixin:
    """Needs the host class's _store (a NativeStore); the host's close()
    calls _stop_tasks() first."""

    _tasks_lock = threading.Lock()  # guards each store's _task_runner (one lock for all: rarely taken)

    def create_copy_task(self, key, targets):
        """(task id, 0), or ((0, 0), code): -600 for targets that are not a
        non-empty list of distinct segment names, -101 for a name no mounted
        segment has, -704 for a missing key, -705 when a target holds a
        replica already, -1401 when the master holds too many unfinished
        tasks."""
        if isinstance(targets, str):
            return _NIL, _INVALID_PARAMS
        try:
            targets = list(targets)
        except TypeError:
            return _NIL, _INVALID_PARAMS
        if not all(isinstance(t, str) for t in targets):
            return _NIL, _INVALID_PARAMS
        return self._submit(int(TaskType.REPLICA_COPY), key, "", targets)

    def create_move_task(self, key, source, target):
        """(task id, 0), or ((0, 0), code): create_copy_task's codes, and
        -704 when `source` holds no readable replica of the key."""
        if not isinstance(source, str) or not isinstance(target, str):
            return _NIL, _INVALID_PARAMS
        return self._submit(int(TaskType.REPLICA_MOVE), key, source, [target])

    def query_task(self, task_id):
        """(QueryTaskResponse, 0), or (None, code): -1400 TASK_NOT_FOUND for
        an unknown id (or a finished task the master no longer keeps), -600
        for an id that is not a (hi, lo) pair."""
        text = _text(task_id)
        if text is None:
            return None, _INVALID_PARAMS
        rc, info = self._store.query_task(text)
        if rc != 0:
            return None, _mooncake(rc)
        return QueryTaskResponse(info), 0

    def _submit(self, task_type, key, source, targets):
        if not isinstance(key, str):
            return _NIL, _INVALID_PARAMS
        rc, text = self._store.create_task(task_type, key, source, targets)
        if rc != 0:
            return _NIL, _mooncake(rc)
        with self._tasks_lock:
            if getattr(self, "_task_runner", None) is None:
                self._task_runner = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="mooncake-tasks")
            # The outcome is the task's status at the master (query_task).
            self._task_runner.submit(self._store.run_task, text)
        return _pair(text), 0

    def _stop_tasks(self):
        """Waits for the tasks this store runs (before close)."""
        with self._tasks_lock:
            runner, self._task_runner = getattr(self, "_task_runner", None), None
        if runner is not None:
            runner.shutdown(wait=True)
