"""A Python scheduled function (firebase-functions from PyPI) for
tests/tools/firebase/test_firebase_emulator.py.

Each run appends one JSON line to $FIXTURE_LOG_DIR/pysched.jsonl: the function's own log.
"""

import json
import os

from firebase_functions import scheduler_fn


@scheduler_fn.on_schedule(
    schedule="0 9 * * 1-5", timezone=scheduler_fn.Timezone("America/New_York"), retry_count=1
)
def pysched(event: scheduler_fn.ScheduledEvent) -> None:
    entry = {"scheduleTime": event.schedule_time.isoformat(), "jobName": event.job_name}
    with open(os.path.join(os.environ["FIXTURE_LOG_DIR"], "pysched.jsonl"), "a") as log:
        log.write(json.dumps(entry) + "\n")
