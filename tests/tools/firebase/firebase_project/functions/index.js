// Scheduled functions the scheduler emulator's firebase bridge fires (tests/test_firebase.py).
// Each run appends one JSON line to $FIXTURE_LOG_DIR/<function>.jsonl: the function's own log.
const fs = require("fs");
const path = require("path");
// The v1 Pub/Sub provider alone: `firebase-functions/v1` also loads the Firestore provider,
// which needs firebase-admin's optional @google-cloud/firestore.
const v1pubsub = require("firebase-functions/v1/pubsub");
const { onSchedule } = require("firebase-functions/v2/scheduler");

const logDir = process.env.FIXTURE_LOG_DIR || path.join(__dirname, "..", "runs");

function record(fn, entry) {
  fs.mkdirSync(logDir, { recursive: true });
  fs.appendFileSync(path.join(logDir, `${fn}.jsonl`), JSON.stringify(entry) + "\n");
}

exports.v1sched = v1pubsub
  .schedule("every 30 minutes")
  .timeZone("Europe/Berlin")
  .onRun((context) => {
    record("v1sched", { timestamp: context.timestamp, eventType: context.eventType, resource: context.resource, eventId: context.eventId });
    return null;
  });

exports.v2sched = onSchedule(
  { schedule: "0 9 * * 1-5", timeZone: "America/New_York", retryCount: 2, minBackoffSeconds: 5 },
  async (event) => {
    const failFile = path.join(logDir, "v2sched.fail-once");
    const failing = fs.existsSync(failFile);
    record("v2sched", { scheduleTime: event.scheduleTime, jobName: event.jobName, failed: failing });
    if (failing) {
      fs.unlinkSync(failFile);
      throw new Error("v2sched made to fail once");
    }
  },
);

// In europe-west1, once a year (no run in the tests' week): firebase deploy puts the v1 one's job
// in the project's App Engine location (us-central1 here) and the v2 one's in europe-west1.
// (`require("firebase-functions/v1").region("europe-west1").pubsub.schedule(…)` in an app; its
// builder loads every v1 provider, which takes the Functions emulator's 10 s load limit on a busy
// machine, so the Pub/Sub provider's own call that region() makes is used here.)
exports.v1eu = v1pubsub
  ._scheduleWithOptions("0 0 1 1 *", { regions: ["europe-west1"] })
  .onRun(() => {
    record("v1eu", {});
    return null;
  });

exports.v2eu = onSchedule({ schedule: "0 0 1 1 *", region: "europe-west1" }, async () =>
  record("v2eu", {}),
);
