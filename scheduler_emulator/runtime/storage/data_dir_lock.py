"""One daemon per data directory (docs/behaviour.md: "One daemon per data directory"): an
exclusive ``fcntl.flock`` on the directory itself (no file in it can be deleted to break it) and
on ``DIR/daemon.lock`` (which earlier releases lock), held for the daemon's life and dropped by
the operating system however the process ends; ``daemon.lock`` names the holder's pid and port::

    lock = DataDirLock(Path("~/.local/share/scheduler-emulator/x").expanduser())
    lock.acquire()          # raises DataDirInUse naming the other daemon's pid and port
    lock.note_port(8095)    # once the server listens
    lock.release()
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from pathlib import Path
from typing import IO

from ...domain.errors import ConfigurationError

#: The errors of a directory this user cannot write: no permission, or a read-only mount.
_CANNOT_WRITE = (errno.EACCES, errno.EPERM, errno.EROFS)
#: What decides whether a file or directory can be written, for messages.
WRITABLE = "its owner and mode, an immutable flag (lsattr), a read-only mount"


class DataDirInUse(ConfigurationError):
    """Another daemon holds the data directory; the message names its pid and port."""


class DataDirLock:
    """The exclusive lock of one data directory (created if missing).

    :param data_dir: the daemon's data directory.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "daemon.lock"
        self._file: IO[str] | None = None
        self._dir_fd: int | None = None
        #: The outermost directory :meth:`acquire` made (the data directory or an ancestor),
        #: for a failed start to remove; ``None`` when the data directory existed.
        self.made: Path | None = None

    def acquire(self) -> None:
        """Take the lock without waiting and write this process's pid into the lock file.

        :raises DataDirInUse: when another process holds the directory (naming its pid and
            port when its lock file still says).
        :raises ConfigurationError: when a directory has the lock file's name, or a file the
            data directory's, naming it.
        :raises OSError: when the directory or the lock file cannot be created, opened or
            locked otherwise (no permission, no locks on its file system).
        """
        missing = [d for d in (self.path.parent, *self.path.parent.parents) if not d.exists()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.made = missing[-1] if missing else None
        except (FileExistsError, NotADirectoryError) as exc:  # a file has its name, or a parent's
            raise ConfigurationError(
                f"--data-dir {self.path.parent} is a file or lies under one: pass a directory, "
                "or a path where one can be made."
            ) from exc
        except OSError as exc:  # (trial 176: /proc/xx read "[Errno 2] No such file …")
            if exc.errno in _CANNOT_WRITE:
                raise self._unwritable(f"{exc.strerror}: {exc.filename}") from exc
            raise ConfigurationError(
                f"--data-dir {self.path.parent}: cannot make it ({exc.strerror})."
            ) from exc
        if not os.access(self.path.parent, os.W_OK | os.X_OK):  # (its files are made later)
            read_only = os.statvfs(self.path.parent).f_flag & os.ST_RDONLY  # (trial 187)
            where = "it is on a read-only mount" if read_only else "this user cannot write in it"
            raise self._unwritable(where)
        dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        handle = None
        try:  # every failure lets go of what was taken
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            handle = open(self.path, "a+")  # noqa: SIM115 - held for the daemon's lifetime
            # (a daemon of an earlier release locks only this file)
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BaseException as exc:
            if handle is not None:
                handle.close()
            os.close(dir_fd)
            if isinstance(exc, BlockingIOError):
                raise self._in_use() from None
            if isinstance(exc, IsADirectoryError):
                raise ConfigurationError(
                    f"the data directory's lock file {self.path} is a directory: the daemon "
                    "keeps its pid in that file. Remove the directory, or pass another "
                    "--data-dir."
                ) from exc
            if isinstance(exc, OSError) and exc.errno in _CANNOT_WRITE:
                raise self._unwritable(f"{exc.strerror}: {exc.filename}") from exc
            raise
        self._dir_fd, self._file = dir_fd, handle
        self.note_port(None)

    def _unwritable(self, why: str) -> ConfigurationError:
        """The refusal of a directory this user cannot write, naming --data-dir and ``why``
        (trial 74: a bare "[Errno 1] Operation not permitted")."""
        return ConfigurationError(
            f"--data-dir {self.path.parent} cannot be written ({why}): make it writable by "
            f"this user ({WRITABLE}), or pass another --data-dir."
        )

    def _in_use(self) -> DataDirInUse:
        try:
            data = json.loads(self.path.read_text())
            port = data.get("port")
            holder = f"pid {data.get('pid')}, " + (f"port {port}" if port else "port not bound yet")
        except OSError:  # the lock file was deleted: the directory's lock still holds
            holder = "pid unknown: its daemon.lock file was deleted"
        except ValueError:
            holder = "pid unknown"
        return DataDirInUse(
            f"data directory {self.path.parent} is in use by another scheduler-emulator "
            f"({holder}). Stop it, or pass another --data-dir."
        )

    def note_port(self, port: int | None) -> None:
        """Record the port the daemon listens on (``None``: not yet), for the message a second
        daemon prints."""
        if self._file is not None:
            with contextlib.suppress(OSError):  # informative only (a full disk must not stop it)
                self._file.seek(0)
                self._file.truncate(0)
                self._file.write(json.dumps({"pid": os.getpid(), "port": port}) + "\n")
                self._file.flush()

    def release(self) -> None:
        """Drop the lock (the process ending drops it too). Idempotent."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.truncate(0)
            with contextlib.suppress(OSError):  # (closes the descriptor even if flush fails)
                self._file.close()  # closing the descriptor releases the flock
            self._file = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None
