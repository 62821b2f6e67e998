-- 003_gate: the stop gate's sessions, continue counts, stuck state, operator
-- controls, external-authority breaker, evaluation events, annotations and a
-- daily aggregate. Events are written with plain INSERT: a collision is an error.

CREATE TABLE IF NOT EXISTS gate_sessions (
    session_id  TEXT PRIMARY KEY NOT NULL,
    started_at  TEXT NOT NULL,
    start_head  TEXT,
    -- who recorded the start: the SessionStart hook, or the first evaluation
    recorded_by TEXT NOT NULL CHECK (recorded_by IN ('session-start', 'evaluate')),
    source      TEXT
) STRICT;

CREATE TABLE IF NOT EXISTS gate_continue_counts (
    session_id TEXT PRIMARY KEY NOT NULL,
    count      INTEGER NOT NULL CHECK (count >= 0)
) STRICT;

CREATE TABLE IF NOT EXISTS gate_stuck (
    session_id TEXT PRIMARY KEY NOT NULL,
    stuck_at   TEXT NOT NULL,
    reason     TEXT NOT NULL
) STRICT;

-- One row: the operator's mode (NULL: use configuration) and kill switch.
CREATE TABLE IF NOT EXISTS gate_control (
    id          INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    mode        TEXT CHECK (mode IS NULL OR mode IN ('off', 'shadow', 'enforce')),
    kill_switch INTEGER NOT NULL DEFAULT 0 CHECK (kill_switch IN (0, 1)),
    updated_at  TEXT NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS gate_breaker (
    authority            TEXT PRIMARY KEY NOT NULL,
    consecutive_failures INTEGER NOT NULL CHECK (consecutive_failures >= 0),
    open_until           INTEGER
) STRICT;

CREATE TABLE IF NOT EXISTS gate_events (
    id                 INTEGER PRIMARY KEY NOT NULL,
    ts                 TEXT NOT NULL,
    session_id         TEXT,
    mode               TEXT NOT NULL CHECK (mode IN ('off', 'shadow', 'enforce')),
    decision           TEXT NOT NULL CHECK (decision IN ('continue', 'allow', 'escalate', 'force_allow')),
    rule               TEXT CHECK (rule IS NULL OR rule IN (
        'U1_DURABLE_ARTIFACT_CONTINUATION_SAFE', 'U2_PLAN_FILE_NEXT_STEP_EXPLICIT',
        'U3_RECENT_COMMIT_PROVES_INCREMENTAL', 'U_LEGIT_DESIGN_QUESTION', 'U_LEGIT_MISSING_INFO',
        'U_LEGIT_ERROR', 'U_LEGIT_COMPLETION', 'U_META_SELF_REFERENCE', 'U_AMBIGUOUS_INSUFFICIENT_SIGNAL')),
    failure_kind       TEXT CHECK (failure_kind IS NULL OR failure_kind IN (
        'malformed_payload', 'timeout', 'malformed', 'invalid_rule', 'invalid_evidence',
        'missing_pointer', 'authority_unavailable', 'breaker_open', 'database_error',
        'evidence_unavailable', 'config_error')),
    -- why the authority was not asked: kill_switch, mode_off, ceiling, stuck
    short_circuit      TEXT CHECK (short_circuit IS NULL OR short_circuit IN ('kill_switch', 'mode_off', 'ceiling', 'stuck')),
    blocked            INTEGER NOT NULL CHECK (blocked IN (0, 1)),
    stop_hook_active   INTEGER NOT NULL CHECK (stop_hook_active IN (0, 1)),
    stop_reason_source TEXT NOT NULL CHECK (stop_reason_source IN ('payload', 'transcript', 'none')),
    stop_reason        TEXT,
    authority          TEXT NOT NULL CHECK (authority IN ('builtin', 'external', 'none')),
    -- the authority's free text: logged here, never shown to the agent
    rationale          TEXT,
    detail             TEXT,
    evidence           TEXT,
    reminder           TEXT,
    latency_ms         INTEGER NOT NULL CHECK (latency_ms >= 0)
) STRICT;

CREATE INDEX IF NOT EXISTS gate_events_session ON gate_events (session_id);

CREATE TABLE IF NOT EXISTS gate_annotations (
    id         INTEGER PRIMARY KEY NOT NULL,
    event_id   INTEGER NOT NULL REFERENCES gate_events (id),
    verdict    TEXT NOT NULL CHECK (verdict IN ('correct', 'incorrect')),
    rationale  TEXT NOT NULL CHECK (length(trim(rationale)) > 0),
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS gate_daily (
    day      TEXT NOT NULL,
    mode     TEXT NOT NULL CHECK (mode IN ('off', 'shadow', 'enforce')),
    decision TEXT NOT NULL CHECK (decision IN ('continue', 'allow', 'escalate', 'force_allow')),
    failures INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    count    INTEGER NOT NULL CHECK (count >= 0),
    PRIMARY KEY (day, mode, decision)
) STRICT;

-- A plan file's latest and introducing commits as computed at commit `at_commit`:
-- an evaluation walks only the commits made since, not the whole history again.
CREATE TABLE IF NOT EXISTS gate_path_cache (
    path        TEXT PRIMARY KEY NOT NULL,
    at_commit   TEXT NOT NULL,
    latest      TEXT,
    introducing TEXT
) STRICT;

-- Verified ancestry between two commits (ancestor, descendant). Commits are
-- immutable, so a verified pair stays true; the post-verifier reuses it instead of
-- walking a long history on every stop.
CREATE TABLE IF NOT EXISTS gate_ancestry (
    ancestor   TEXT NOT NULL,
    descendant TEXT NOT NULL,
    PRIMARY KEY (ancestor, descendant)
) STRICT;
