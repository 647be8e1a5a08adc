"""When a job that held a queue lock ends and a job of the same lock is waiting, wake the
workers as a new job would (procrastinate's own ``job_inserted`` notification).

A collection's jobs share a lock, so they run one after another (portal/rag/job_runner.py,
``lock_key``). procrastinate fetches a job when one is inserted (its trigger notifies the
workers) or every polling interval; a job that waited behind its lock is inserted before the
lock frees, so it waited for the next poll: with ``rag_worker --concurrency 2`` a user's
second job started up to 2 s (the interval) after the first ended, measured 1.3-1.7 s (issue
31's bench). This trigger sends the notification when the lock frees, in the transaction that
frees it, so a worker with a free slot fetches the waiting job at once.

The queue's tables are in the public schema only; a tenant schema has nothing to change.
"""

from typing import Any

from django.db import migrations
from django_tenants.utils import get_public_schema_name

CREATE = """
CREATE FUNCTION rag_notify_lock_released() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    waiting procrastinate_jobs;
    payload text;
BEGIN
    SELECT * INTO waiting FROM procrastinate_jobs
     WHERE lock = NEW.lock AND status = 'todo'
     ORDER BY priority DESC, id LIMIT 1;
    IF FOUND THEN
        payload := json_build_object('type', 'job_inserted', 'job_id', waiting.id)::text;
        PERFORM pg_notify('procrastinate_queue_v1#' || waiting.queue_name, payload);
        PERFORM pg_notify('procrastinate_any_queue_v1', payload);
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER rag_notify_lock_released
    AFTER UPDATE OF status ON procrastinate_jobs
    FOR EACH ROW
    WHEN (OLD.status = 'doing' AND NEW.status <> 'doing' AND NEW.lock IS NOT NULL)
    EXECUTE FUNCTION rag_notify_lock_released();
"""

DROP = """
DROP TRIGGER IF EXISTS rag_notify_lock_released ON procrastinate_jobs;
DROP FUNCTION IF EXISTS rag_notify_lock_released();
"""


def _in_public(sql: str) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.schema_name == get_public_schema_name():
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0013_write_marks"),
        ("procrastinate", "0041_post_retry_failed_job"),
    ]

    operations = [migrations.RunPython(_in_public(CREATE), _in_public(DROP))]
