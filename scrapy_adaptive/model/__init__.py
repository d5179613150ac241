"""A URL's record: everything the crawl knows about one URL, across visits.

The frontier is the only writer.  Evaluators (change detection, wait
policies, validators) read the record as the URL was issued (through the
frontier's services) and answer with a :class:`Visit` verdict; the frontier
folds the verdict into the record in one atomic write together with the
URL's new queue position.

Stored as compact JSON (never pickle: a state folder must not be able to run
code).  Short keys keep a million records small on disk.

The verdict's parts are :mod:`.verdict`, the record :mod:`.record`, the
user's read-only view of it :mod:`.view`, the stored form :mod:`.codec`.
"""

from .record import RecordError, UrlRecord
from .verdict import (
    NEVER_MS,
    NOT_CONTENT,
    PARKED,
    SIGNAL_UNREADABLE,
    SOFT_404,
    VALIDATOR_LIE,
    ChangeState,
    FetchResult,
    Outcome,
    Plan,
    Visit,
    answers_with_page,
    delivers_content,
    transient,
)
from .view import RecordView

__all__ = [
    "NEVER_MS",
    "NOT_CONTENT",
    "PARKED",
    "SIGNAL_UNREADABLE",
    "SOFT_404",
    "VALIDATOR_LIE",
    "ChangeState",
    "FetchResult",
    "Outcome",
    "Plan",
    "RecordError",
    "RecordView",
    "UrlRecord",
    "Visit",
    "answers_with_page",
    "delivers_content",
    "transient",
]
