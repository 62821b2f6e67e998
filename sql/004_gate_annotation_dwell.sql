-- 004_gate_annotation_dwell: how long an operator looked at an evaluation before
-- annotating it. `gate show` records when an event was last shown; `gate annotate`
-- stores the time since then (or the dwell a review tool measured itself). NULL: the
-- event was annotated without being shown, so the dwell is unknown.
ALTER TABLE gate_annotations ADD COLUMN dwell_ms INTEGER CHECK (dwell_ms IS NULL OR dwell_ms >= 0);

CREATE TABLE IF NOT EXISTS gate_event_views (
    event_id    INTEGER PRIMARY KEY NOT NULL REFERENCES gate_events (id),
    -- unix milliseconds of the latest `gate show` of the event
    shown_at_ms INTEGER NOT NULL CHECK (shown_at_ms >= 0)
) STRICT;
