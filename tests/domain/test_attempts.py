"""The one reason text of a failed attempt (``domain.attempts.failure_reason``)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from scheduler_emulator.domain.attempts import REASON_WIDTH, Attempt, failure_reason
from scheduler_emulator.wire import cloud_run_job_of

JOB = "projects/my-project/locations/us-central1/jobs/hourly"
FAILED = Attempt(
    1, JOB, 1, 1, None, datetime(2026, 1, 1, tzinfo=UTC), {"url": "http://h/_triggers/timer/cleanup"},
    response_status=500, code="INTERNAL",
)  # fmt: skip


def test_a_long_answer_is_cut_and_the_hint_after_it_is_whole() -> None:
    attempt = replace(FAILED, response_excerpt='{"error": "' + "x" * 500 + '"}')
    assert len(attempt.hint) > 40  # the route is not the job's name: the emulator says so
    answer, _, shown_hint = failure_reason(attempt).partition(" — emulator's hint: ")
    assert len(answer) == REASON_WIDTH and answer.endswith("…")
    assert shown_hint == " ".join(attempt.hint.split())


def test_an_empty_answer_says_so_beside_the_hint() -> None:
    reason = failure_reason(FAILED)
    assert reason.startswith("empty body — emulator's hint: timer route 'cleanup'")
    assert not reason.endswith("…")


def test_no_hint_guesses_at_an_in_process_apps_own_exception() -> None:
    raised = replace(FAILED, debug_info="URL_ERROR-ERROR_OTHER. The app raised KeyError: 'DB_URL'")
    assert FAILED.hint and raised.hint == ""  # the cause is known: no router refused the run


def test_the_routers_answer_to_a_raising_handler_says_where_the_exception_is() -> None:
    """Trial 88: the reason read "Internal Server Error: The server could not complete this
    request." and named nothing; the exception is in the service's log only."""
    body = (
        '{"detail":"The server could not complete this request.","type":"urn:hardened:problem:'
        'internal-server-error","title":"Internal Server Error","status":500}'
    )
    raised = replace(FAILED, job=JOB.replace("hourly", "cleanup"), response_excerpt=body)
    assert failure_reason(raised) == (
        "Internal Server Error: The server could not complete this request. — emulator's hint: "
        "a timer router answers so when its handler failed: its log names the error"
    )
    assert replace(raised, response_excerpt='{"detail": "nope"}').hint == ""  # another 500


def test_a_404_for_a_timer_route_under_another_segment_names_the_segment() -> None:
    """Trial 210: a functions-framework function's name kept in the job's URI gave a bare 404."""
    url = "http://fn.test/timers/_triggers/timer/hourly"
    missed = replace(FAILED, request={"url": url}, response_status=404, code="NOT_FOUND")
    assert missed.hint == (
        "the path has '/timers' before '/_triggers/timer/': a timer router serves its routes "
        "from the service's root unless given a prefix (a functions-framework function's name is "
        "not part of its URL)"
    )
    routerless = replace(missed, request={"url": "http://fn.test/_triggers/timer/hourly"})
    assert routerless.hint == (  # (trial 218: router.init_app(app) forgotten)
        "no timer router answered /_triggers/timer/: the app's own 404 (is its TimerRouter in "
        "front of it? router.init_app(app))"
    )


def test_a_success_has_no_reason() -> None:
    assert failure_reason(replace(FAILED, response_status=200, code="OK")) == ""


RUN_URL = "https://run.googleapis.com/v2/projects/my-project/locations/us-central1/jobs/nightly:run"


def test_a_cloud_run_401_shows_googles_message_and_what_to_give_the_job() -> None:
    from scheduler_emulator.runtime.cloud_run.admin_api import unauthenticated

    body = json.dumps(unauthenticated(None, "google.cloud.run.v2.Jobs.RunJob"))
    attempt = replace(
        FAILED, request={"url": RUN_URL}, response_status=401, code="UNAUTHENTICATED",
        response_excerpt=body,
    )  # fmt: skip
    answer, _, hint = failure_reason(attempt).partition(" — emulator's hint: ")
    assert answer.startswith("UNAUTHENTICATED: Request is missing required authentication")
    assert hint.endswith("give the job's httpTarget an oauthToken (an oidcToken is refused)")


def test_a_cloud_run_404_keeps_its_hint_whole_after_a_long_message() -> None:
    defined = ", ".join(f"projects/my-project/locations/us-central1/jobs/job{i}" for i in range(9))
    message = f"Resource 'nightly' of kind 'JOB' does not exist. (defined: {defined})."
    body = json.dumps({"error": {"code": 404, "message": message, "status": "NOT_FOUND"}})
    attempt = replace(
        FAILED, request={"url": RUN_URL}, response_status=404, code="NOT_FOUND",
        response_excerpt=body,
    )  # fmt: skip
    answer, _, hint = failure_reason(attempt).partition(" — emulator's hint: ")
    assert answer.startswith("NOT_FOUND: Resource 'nightly'") and answer.endswith("…")
    assert REASON_WIDTH - 20 <= len(answer) <= REASON_WIDTH
    assert hint.endswith("check the project, region and job in the job's URI")


def test_a_cloud_run_404_to_another_method_than_post_names_the_method() -> None:
    """Trial 108: a job that sent GET to jobs/J:run was told to define the job, which was
    defined."""
    attempt = replace(
        FAILED, request={"url": RUN_URL, "method": "GET"}, response_status=404, code="NOT_FOUND",
        response_excerpt='{"error": {"code": 404, "message": "Not found.", "status": "NOT_FOUND"}}',
    )  # fmt: skip
    assert attempt.hint == "the Cloud Run Admin API's jobs/J:run takes POST; this job sends GET"
    assert "--cloud-run-jobs" in replace(attempt, request={"url": RUN_URL}).hint  # POST: as before


def test_a_cloud_run_404_to_a_path_that_is_not_the_run_method_has_no_hint_to_define_the_job() -> (
    None
):
    """Trial 139: ``/v1/namespaces/P/jobs/J:run`` (no ``/apis/run.googleapis.com``) was told to
    define the job in --cloud-run-jobs; the Admin API's own answer says which paths it serves."""
    malformed = "https://run.googleapis.com/v1/namespaces/my-project/jobs/nightly:run"
    attempt = replace(
        FAILED, request={"url": malformed}, response_status=404, code="NOT_FOUND",
        response_excerpt='{"error": {"code": 404, "message": "Not found.", "status": "NOT_FOUND"}}',
    )  # fmt: skip
    assert attempt.hint == ""
    v1 = "https://us-central1-run.googleapis.com/apis/run.googleapis.com/v1/namespaces/p/jobs/j:run"
    assert [cloud_run_job_of(uri) for uri in (malformed, v1, RUN_URL)] == [None, "j", "nightly"]


def test_an_answer_that_is_not_a_google_error_body_is_shown_as_it_is() -> None:
    for text in ('{"error": "locked"}', '{"error": {"code": 3}}', '{"error": {"message": "x"'):
        assert failure_reason(replace(FAILED, response_excerpt=text)).startswith(text)


def test_the_emulators_own_instructions_are_not_cut() -> None:
    from scheduler_emulator.runtime.delivery.pubsub import NOT_CONFIGURED

    attempt = replace(
        FAILED, request={"pubsubTopic": "projects/p/topics/tick"}, response_status=None,
        code="FAILED_PRECONDITION", debug_info=NOT_CONFIGURED,
    )  # fmt: skip
    assert len(NOT_CONFIGURED) > REASON_WIDTH
    assert failure_reason(attempt) == " ".join(NOT_CONFIGURED.split())
    long = replace(attempt, debug_info="EMULATOR_ERROR. " + "x" * 5 * REASON_WIDTH)
    assert len(failure_reason(long)) == 4 * REASON_WIDTH
    # a trial's views cut the command that creates a missing topic
    topic = "projects/my-project/topics/restock"
    missing = (
        f"PUBSUB_ERROR. Publishing to {topic} failed: Topic not found (Pub/Sub emulator at "
        f"127.0.0.1:18810); create it with: curl -X PUT http://127.0.0.1:18810/v1/{topic}"
    )
    assert len(missing) > REASON_WIDTH
    assert failure_reason(replace(attempt, code="NOT_FOUND", debug_info=missing)) == missing


def test_a_frameworks_html_error_page_reads_as_its_text() -> None:
    """Flask's and Django's error pages: the text, not the markup, and no style sheet."""
    flask = (
        "<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n"
        "<h1>Internal Server Error</h1>\n<p>The server encountered an internal error.</p>\n"
    )
    django = (
        '<!DOCTYPE html><html lang="en"><head><title>ZeroDivisionError at /_triggers/x</title>'
        '<style type="text/css">html * { padding:0; margin:0; }</style></head><body>'
        '<h1>ZeroDivisionError</h1><pre class="exception_value">division by zero</pre><table'
    )  # cut inside a tag, as an excerpt may be
    reasons = [failure_reason(replace(FAILED, response_excerpt=page)) for page in (flask, django)]
    assert reasons[0].startswith("Internal Server Error: The server encountered")
    assert reasons[1].startswith("ZeroDivisionError: division by zero — emulator's hint")
    assert not any(c in reason for reason in reasons for c in "<>{}")


def test_a_problem_details_answer_reads_as_its_title_and_detail() -> None:
    """The timer router's own 500 (RFC 9457 problem details), not its JSON."""
    body = (
        '{"detail":"The server could not complete this request.",'
        '"type":"urn:hardened:problem:internal-server-error",'
        '"title":"Internal Server Error","status":500}'
    )
    reason = failure_reason(replace(FAILED, request={"url": "http://h/x"}, response_excerpt=body))
    assert reason == "Internal Server Error: The server could not complete this request."


def test_a_long_answer_is_cut_between_words() -> None:
    words = "The ledger is locked by the nightly exporter; " * 10
    answer = failure_reason(replace(FAILED, request={"url": "http://h/x"}, response_excerpt=words))
    assert answer.endswith("…") and REASON_WIDTH - 20 <= len(answer) <= REASON_WIDTH
    assert words.startswith(answer[:-1] + " ")


URL = "http://127.0.0.1:8000/tasks/nightly?x=1"


@pytest.mark.parametrize(
    ("audience", "said"),
    [
        (URL, f"{URL!r} (the job sets none: its whole URI)"),
        ("https://svc.test", "'https://svc.test'"),
    ],
)
def test_a_401_to_an_oidc_token_names_its_audience_and_email(audience: str, said: str) -> None:
    """A trial: a job with no audience failed 401 at a service expecting its own URL; only the
    service's log said why (the audience is then the job's whole URI, query included). The
    next trial: naming only the audience blamed it when the service refused the email."""
    from scheduler_emulator import ManualClock
    from scheduler_emulator.runtime.delivery.tokens import TokenAuthority

    tokens = TokenAuthority(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))
    token = tokens.id_token("sa@my-project.iam.gserviceaccount.com", audience)
    headers = {"authorization": f"Bearer {token}"}
    attempt = replace(
        FAILED, request={"url": URL, "headers": headers}, response_status=401,
        code="UNAUTHENTICATED",
    )  # fmt: skip
    assert attempt.hint == (  # and when it is valid: a trial's had expired (trial 73)
        f"the OIDC token sent has audience {said} and email "
        "'sa@my-project.iam.gserviceaccount.com', valid 2026-01-01T00:00:00Z to "
        "2026-01-01T01:00:00Z: a service refuses a token whose audience or email it does not "
        "expect, that is not valid on its own clock (a daemon on a manual clock stamps it "
        "with that clock: --token-time real for a service on real time), or that another key "
        "signed (each --in-memory daemon makes its own: a service reads this one's at its "
        "/_emulator/oidc/certs, or the pytest fixture's at cloud_scheduler.certs_url)"  # (138)
    )
    assert failure_reason(attempt).endswith(attempt.hint)
    # a token stamped with real time (--token-time real) gets no advice about the clock
    later = replace(attempt, start_time=datetime(2026, 6, 1, tzinfo=UTC)).hint  # (trial 185)
    assert "on its own clock" not in later and later.endswith(
        "or that another key signed (each "
        "--in-memory daemon makes its own: a service reads this one's at its "
        "/_emulator/oidc/certs, or the pytest fixture's at cloud_scheduler.certs_url)"  # (205)
    )
    opaque = {"url": URL, "headers": {"Authorization": "Bearer ya29.opaque-access-token"}}
    assert replace(attempt, request=opaque).hint == ""
    tokenless = replace(attempt, request={"url": URL, "headers": {}}).hint  # (trial 196)
    assert tokenless.startswith("the job sends no token: a service that checks")
    # trial 212: the service said why (a TokenError's text), cut, before the whole general hint
    answer = (
        "The token was signed with key '7a92c0ffee', which is not among the keys at "
        "http://127.0.0.1:9955/_emulator/oidc/certs: it was minted by another issuer or another "
        "emulator instance"
    )
    diagnosed = replace(attempt, response_excerpt=answer)
    assert diagnosed.hint == (
        f"the OIDC token sent has audience {said} and email "
        "'sa@my-project.iam.gserviceaccount.com', valid 2026-01-01T00:00:00Z to "
        "2026-01-01T01:00:00Z"
    )
    assert failure_reason(diagnosed) == f"{answer} — emulator's hint: {diagnosed.hint}"
    assert replace(attempt, response_status=404, code="NOT_FOUND").hint == ""


def test_an_app_engine_503_says_it_does_not_count_against_the_retry_count() -> None:
    """Trial 215: TRIES 4/5 under retryCount 1 puzzled; nothing said why at the 503 rows."""
    request = {"url": "http://127.0.0.1:9/w", "appEngineHost": "w.p.appspot.com"}
    busy = replace(FAILED, request=request, response_status=503, code="UNAVAILABLE")
    assert busy.hint == (
        "an App Engine target's 503 is retried without counting against the retry count"
    )
    assert replace(busy, request={"url": "http://127.0.0.1:9/w"}).hint == ""  # an HTTP target's
