"""Page tokens and page sizes: one codec for every paged listing.

ListJobs, ListLocations, ListOperations and the ``/_emulator/`` listings (attempts, skipped
times, runs, the jobs view, the timeline) all hand out the same kind of token: the decimal
position the next page starts from (a sequence number, a record id or an offset), which this
module writes and reads back::

    >>> token = next_page_token(40)
    >>> token, page_position(token), next_page_token(None)
    ('40', 40, '')

Any other text is refused, before it is converted, naming ``pageToken`` (a 5,000-digit token
costs nothing). Google documents its tokens as opaque, so a client cannot tell the difference.
"""

from __future__ import annotations

from .errors import InvalidArgument, show_value

__all__ = ["MAX_TOKEN_DIGITS", "bounded_page_size", "next_page_token", "page_position"]

#: Longest token, in digits: any position an SQLite integer (and so a record id) can hold.
MAX_TOKEN_DIGITS = 18


def next_page_token(position: int | None) -> str:
    """The token of the page starting at ``position``; ``""`` (the last page) for ``None``."""
    return "" if position is None else str(position)


def page_position(token: str) -> int:
    """The position a token of :func:`next_page_token` names; ``0`` for ``""`` (the first page).

    :param token: the ``pageToken`` (``page_token``) of the request.
    :raises InvalidArgument: naming ``pageToken`` and the value, for anything but 1 to
        :data:`MAX_TOKEN_DIGITS` ASCII digits.
    """
    if not token:
        return 0
    if not (token.isascii() and token.isdigit() and len(token) <= MAX_TOKEN_DIGITS):
        raise InvalidArgument(
            f"pageToken {show_value(token)} is not a page token this emulator gave: pass the "
            "nextPageToken of the page before, or none for the first page.",
            field="pageToken",
        )
    return int(token)


def bounded_page_size(size: int, *, maximum: int) -> int:
    """The page size of a v1 listing (AIP-158, as Cloud Scheduler's ListJobs documents it):
    ``0`` (not given) or less gives ``maximum``, more than ``maximum`` is clamped to it.

    :param size: the ``pageSize`` of the request (an int32 over gRPC, parsed text over REST).
    :param maximum: the listing's largest (and default) page.
    :raises InvalidArgument: naming ``pageSize`` when ``size`` is not a whole number (a
        Python caller's ``2.5`` or ``True``).
    :return: 1 to ``maximum``.
    """
    if isinstance(size, bool) or not isinstance(size, int):
        raise InvalidArgument(
            f"pageSize must be a whole number; got {show_value(size)}.", field="pageSize"
        )
    return maximum if size <= 0 or size > maximum else size
