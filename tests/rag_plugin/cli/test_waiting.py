"""Waiting for jobs: the pacer's intervals and deadline, and which jobs each poll asks about."""

from __future__ import annotations

import pytest

from rag_plugin.cli.errors import ApiError
from rag_plugin.cli.job import Job
from rag_plugin.cli.waiting import JobWatch, Pacer
from tests.rag_plugin.cli.conftest import FakeTime


def test_pacer_doubles_its_interval_up_to_its_most(fake_time: FakeTime) -> None:
    pacer = Pacer()

    assert all(pacer.wait() for _ in range(8))
    assert fake_time.sleeps == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


def test_pacer_looks_last_at_the_deadline_then_stops_without_sleeping(
    fake_time: FakeTime,
) -> None:
    pacer = Pacer(1.0)

    looks = 0
    while pacer.wait():
        looks += 1

    assert looks == 5
    assert fake_time.sleeps == [0.05, 0.1, 0.2, 0.4, 0.25]
    assert fake_time.now == 1001.0
    assert pacer.wait() is False
    assert len(fake_time.sleeps) == 5


def test_pacer_with_a_smaller_most(fake_time: FakeTime) -> None:
    pacer = Pacer(most=0.1)

    for _ in range(3):
        pacer.wait()

    assert fake_time.sleeps == [0.05, 0.1, 0.1]


def job(job_id: str, state: str) -> Job:
    return Job.from_json({"id": job_id, "state": state})


class Script:
    """A fetch that answers each job from a list of states (or errors), one per ask."""

    def __init__(self, answers: dict[str, list[str | ApiError]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, job_id: str) -> Job:
        self.asked.append(job_id)
        answer = self.answers[job_id].pop(0)
        if isinstance(answer, ApiError):
            raise answer
        return job(job_id, answer)


def test_a_poll_asks_about_running_jobs_and_the_three_oldest_others() -> None:
    script = Script(
        {
            "j1": ["running", "running", "succeeded"],
            "j2": ["queued", "queued", "running"],
            "j3": ["queued", "queued", "queued"],
            "j4": ["queued", "queued"],
            "j5": [],
        }
    )
    watch = JobWatch(script)
    watch.add(["j1", "j2", "j3", "j4", "j5"])

    assert watch.poll() == []
    assert script.asked == ["j1", "j2", "j3"]
    script.asked.clear()

    assert watch.poll() == []
    # j1 runs: asked first; then the three oldest of the rest.
    assert script.asked == ["j1", "j2", "j3", "j4"]
    script.asked.clear()

    ended = watch.poll()
    assert [(job_id, answer.state) for job_id, answer in ended if isinstance(answer, Job)] == [
        ("j1", "succeeded")
    ]
    assert script.asked == ["j1", "j2", "j3", "j4"]
    assert watch.pending == ["j2", "j3", "j4", "j5"]


@pytest.mark.parametrize("status", [None, 429, 500, 502, 503])
def test_an_error_that_may_pass_keeps_the_job_pending(status: int | None) -> None:
    watch = JobWatch(Script({"j1": [ApiError("busy", status=status), "succeeded"]}))
    watch.add(["j1"])

    assert watch.poll() == []
    assert watch.pending == ["j1"]
    assert [job_id for job_id, _ in watch.poll()] == ["j1"]
    assert watch.pending == []


def test_a_missing_job_leaves_the_watch_with_its_error() -> None:
    missing = ApiError("Job not found.", status=404, code="NOT_FOUND")
    watch = JobWatch(Script({"j1": [missing], "j2": ["queued"]}))
    watch.add(["j1", "j2"])

    assert watch.poll() == [("j1", missing)]
    assert watch.pending == ["j2"]


@pytest.mark.parametrize("status", [400, 401, 403])
def test_any_other_error_is_raised(status: int) -> None:
    watch = JobWatch(Script({"j1": [ApiError("no", status=status)]}))
    watch.add(["j1"])

    with pytest.raises(ApiError) as caught:
        watch.poll()

    assert caught.value.status == status
    assert watch.pending == ["j1"]


def test_adding_a_job_twice_watches_it_once() -> None:
    watch = JobWatch(Script({}))
    watch.add(["j1", "j2"])
    watch.add(["j1"])

    assert watch.pending == ["j1", "j2"]
