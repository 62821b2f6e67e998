//! The stop gate's SQLite tables (`sql/003_gate.sql`): sessions, continue counts,
//! stuck state, operator controls, the authority's breaker, events, annotations and
//! the daily aggregate.
//!
//! The enums the gate stores (mode, decision, failure kind) go in and out as the
//! same text their serde form has (`enforce`, `force_allow`, `breaker_open`), so the
//! `CHECK` constraints of the schema, `gate log --format json` and the rows agree.

use anyhow::{Context as _, Result, bail};
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::Mode;
use crate::gate::breaker::Breaker;
use crate::gate::{Decision, FailureKind};

/// The stored text of a unit enum: its serde name.
fn enum_to_sql<T: Serialize>(v: &T) -> rusqlite::Result<ToSqlOutput<'static>> {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => Ok(ToSqlOutput::from(s)),
        Ok(other) => Err(rusqlite::Error::ToSqlConversionFailure(format!("not a unit enum: {other}").into())),
        Err(e) => Err(rusqlite::Error::ToSqlConversionFailure(Box::new(e))),
    }
}

/// A unit enum back from its stored text; any other text is a conversion error
/// naming the value (the schema's `CHECK` keeps such rows out).
fn enum_from_sql<T: DeserializeOwned>(v: ValueRef<'_>) -> FromSqlResult<T> {
    let s = v.as_str()?;
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|e| FromSqlError::Other(Box::new(e)))
}

macro_rules! sql_enum {
    ($($t:ty),*) => {$(
        impl ToSql for $t {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                enum_to_sql(self)
            }
        }
        impl FromSql for $t {
            fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
                enum_from_sql(v)
            }
        }
    )*};
}

sql_enum!(Mode, Decision, FailureKind);

/// Settings for the gate's connection, which a hook opens on every stop (each best
/// effort: a database that refuses one still works).
///
/// WAL with NORMAL sync: a power loss may drop the newest event, never corrupt the
/// database or break the counter's atomicity; it saves an fsync per statement.
///
/// No checkpoint when the connection closes: SQLite's last connection checkpoints the
/// WAL into the database and deletes it (two fsyncs), and the next evaluation creates
/// it again (two more, of the WAL header and the directory). Every stop paid four
/// fsyncs for it, tens of milliseconds on a busy disk. The WAL stays and is
/// checkpointed when it grows past [`HOOK_WAL_CHECKPOINT_PAGES`], which other premerge
/// commands' connections also do when they close.
pub(crate) fn tune_for_hook(conn: &Connection) {
    let _ = conn.pragma_update(None, "synchronous", "NORMAL");
    let _ = conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    let _ = conn.pragma_update(None, "wal_autocheckpoint", HOOK_WAL_CHECKPOINT_PAGES);
}

/// The WAL size (pages) past which a hook's connection checkpoints it. The first
/// connection to open the database rebuilds the WAL's index by reading and
/// checksumming every valid frame, and each stop opens it afresh: at SQLite's default
/// (1,000 pages) that was up to 4 MiB read on every stop, about 2 MiB on average. An
/// evaluation writes about 7 pages, so 128 pages checkpoint once in about 18 stops (two
/// fsyncs then) and keep the read under 512 KiB.
pub(crate) const HOOK_WAL_CHECKPOINT_PAGES: i64 = 128;

/// The stored operator controls.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Control {
    pub mode: Option<Mode>,
    pub kill_switch: bool,
}

pub(crate) fn control(conn: &Connection) -> Result<Control> {
    let row = conn
        .query_row("SELECT mode, kill_switch FROM gate_control WHERE id = 1", [], |r| {
            Ok((r.get::<_, Option<Mode>>(0)?, r.get::<_, i64>(1)?))
        })
        .optional()?;
    Ok(match row {
        Some((mode, kill)) => Control { mode, kill_switch: kill == 1 },
        None => Control::default(),
    })
}

/// Store the operator's mode; `None` clears it, so configuration decides again.
pub(crate) fn set_mode(conn: &Connection, mode: Option<Mode>, now: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO gate_control (id, mode, kill_switch, updated_at) VALUES (1, ?1, 0, ?2)
         ON CONFLICT (id) DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at",
        params![mode, now],
    )?;
    Ok(())
}

pub(crate) fn set_kill_switch(conn: &Connection, on: bool, now: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO gate_control (id, mode, kill_switch, updated_at) VALUES (1, NULL, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET kill_switch = excluded.kill_switch, updated_at = excluded.updated_at",
        params![on as i64, now],
    )?;
    Ok(())
}

/// A session's recorded start.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub start_head: Option<String>,
}

/// Record a session's start unless it is known (the first record wins: a compaction
/// or resume keeps the original start), and return the stored start.
pub(crate) fn ensure_session(
    conn: &Connection,
    id: &str,
    now: &str,
    head: Option<&str>,
    recorded_by: &str,
    source: Option<&str>,
) -> Result<Session> {
    conn.execute(
        "INSERT INTO gate_sessions (session_id, started_at, start_head, recorded_by, source)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (session_id) DO NOTHING",
        params![id, now, head, recorded_by, source],
    )?;
    Ok(conn.query_row("SELECT start_head FROM gate_sessions WHERE session_id = ?1", [id], |r| {
        Ok(Session { start_head: r.get(0)? })
    })?)
}

pub(crate) fn is_stuck(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.query_row("SELECT EXISTS (SELECT 1 FROM gate_stuck WHERE session_id = ?1)", [id], |r| r.get(0))?)
}

/// Count one more `continue` for the session and return the new count. A single
/// statement, so two concurrent evaluations of one session get different counts.
pub(crate) fn increment_continue(conn: &Connection, id: &str) -> Result<u32> {
    let n: i64 = conn.query_row(
        "INSERT INTO gate_continue_counts (session_id, count) VALUES (?1, 1)
         ON CONFLICT (session_id) DO UPDATE SET count = count + 1 RETURNING count",
        [id],
        |r| r.get(0),
    )?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

pub(crate) fn set_stuck(conn: &Connection, id: &str, now: &str, reason: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO gate_stuck (session_id, stuck_at, reason) VALUES (?1, ?2, ?3) ON CONFLICT (session_id) DO NOTHING",
        params![id, now, reason],
    )?;
    Ok(())
}

pub(crate) fn breaker(conn: &Connection, authority: &str) -> Result<Breaker> {
    let row = conn
        .query_row("SELECT consecutive_failures, open_until FROM gate_breaker WHERE authority = ?1", [authority], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?))
        })
        .optional()?;
    Ok(row
        .map(|(n, open_until)| Breaker { consecutive_failures: u32::try_from(n).unwrap_or(u32::MAX), open_until })
        .unwrap_or_default())
}

pub(crate) fn save_breaker(conn: &Connection, authority: &str, b: Breaker) -> Result<()> {
    conn.execute(
        "INSERT INTO gate_breaker (authority, consecutive_failures, open_until) VALUES (?1, ?2, ?3)
         ON CONFLICT (authority) DO UPDATE SET consecutive_failures = excluded.consecutive_failures,
         open_until = excluded.open_until",
        params![authority, b.consecutive_failures as i64, b.open_until],
    )?;
    Ok(())
}

/// One evaluation, as stored and as printed by `gate log --format json`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct EventRow {
    pub id: i64,
    pub ts: String,
    pub session_id: Option<String>,
    pub mode: Mode,
    pub decision: Decision,
    pub rule: Option<String>,
    pub failure_kind: Option<FailureKind>,
    pub short_circuit: Option<String>,
    pub blocked: bool,
    pub stop_hook_active: bool,
    pub stop_reason_source: String,
    pub stop_reason: Option<String>,
    pub authority: String,
    pub rationale: Option<String>,
    pub detail: Option<String>,
    pub evidence: Option<String>,
    pub reminder: Option<String>,
    pub latency_ms: u64,
}

impl Default for EventRow {
    /// An evaluation before anything is known: enforce mode, the stop allowed.
    fn default() -> EventRow {
        EventRow {
            id: 0,
            ts: String::new(),
            session_id: None,
            mode: Mode::Enforce,
            decision: Decision::Allow,
            rule: None,
            failure_kind: None,
            short_circuit: None,
            blocked: false,
            stop_hook_active: false,
            stop_reason_source: String::new(),
            stop_reason: None,
            authority: String::new(),
            rationale: None,
            detail: None,
            evidence: None,
            reminder: None,
            latency_ms: 0,
        }
    }
}

/// Insert an event (plain INSERT) and count it in the daily aggregate, atomically.
pub(crate) fn insert_event(conn: &mut Connection, e: &EventRow) -> Result<i64> {
    super::tx::immediate(conn, |tx| {
        tx.execute(
            "INSERT INTO gate_events (ts, session_id, mode, decision, rule, failure_kind, short_circuit, blocked,
               stop_hook_active, stop_reason_source, stop_reason, authority, rationale, detail, evidence, reminder, latency_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            params![
                e.ts,
                e.session_id,
                e.mode,
                e.decision,
                e.rule,
                e.failure_kind,
                e.short_circuit,
                e.blocked as i64,
                e.stop_hook_active as i64,
                e.stop_reason_source,
                e.stop_reason,
                e.authority,
                e.rationale,
                e.detail,
                e.evidence,
                e.reminder,
                i64::try_from(e.latency_ms).unwrap_or(i64::MAX),
            ],
        )?;
        let id = tx.last_insert_rowid();
        let day = e.ts.get(..10).unwrap_or(&e.ts);
        tx.execute(
            "INSERT INTO gate_daily (day, mode, decision, failures, count) VALUES (?1, ?2, ?3, ?4, 1)
             ON CONFLICT (day, mode, decision) DO UPDATE SET count = count + 1, failures = failures + excluded.failures",
            params![day, e.mode, e.decision, e.failure_kind.is_some() as i64],
        )?;
        Ok(id)
    })
}

/// The last `tail` events, oldest first.
pub(crate) fn events(conn: &Connection, tail: usize) -> Result<Vec<EventRow>> {
    let mut st = conn.prepare(&format!("SELECT {EVENT_COLUMNS} FROM gate_events ORDER BY id DESC LIMIT ?1"))?;
    let rows = st.query_map([i64::try_from(tail).unwrap_or(i64::MAX)], event_row)?;
    let mut out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    out.reverse();
    Ok(out)
}

/// The columns [`event_row`] reads, in its order.
const EVENT_COLUMNS: &str = "id, ts, session_id, mode, decision, rule, failure_kind, short_circuit, blocked, \
    stop_hook_active, stop_reason_source, stop_reason, authority, rationale, detail, evidence, reminder, latency_ms";

fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
    {
        Ok(EventRow {
            id: r.get(0)?,
            ts: r.get(1)?,
            session_id: r.get(2)?,
            mode: r.get(3)?,
            decision: r.get(4)?,
            rule: r.get(5)?,
            failure_kind: r.get(6)?,
            short_circuit: r.get(7)?,
            blocked: r.get::<_, i64>(8)? == 1,
            stop_hook_active: r.get::<_, i64>(9)? == 1,
            stop_reason_source: r.get(10)?,
            stop_reason: r.get(11)?,
            authority: r.get(12)?,
            rationale: r.get(13)?,
            detail: r.get(14)?,
            evidence: r.get(15)?,
            reminder: r.get(16)?,
            latency_ms: u64::try_from(r.get::<_, i64>(17)?).unwrap_or(0),
        })
    }
}

/// An annotation whose dwell is known and shorter than this is recorded but does not
/// count towards suggesting enforce: fifteen seconds is about the least it takes to
/// read a stop reason and its evidence, so a faster verdict is a rubber stamp.
pub(crate) const MIN_DWELL_MS: i64 = 15_000;

/// Record that event `event` was shown to an operator at `now_ms` (unix ms); the
/// dwell of its next annotation is measured from the latest showing.
pub(crate) fn record_view(conn: &Connection, event: i64, now_ms: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO gate_event_views (event_id, shown_at_ms) VALUES (?1, ?2)
         ON CONFLICT (event_id) DO UPDATE SET shown_at_ms = excluded.shown_at_ms",
        params![event, now_ms],
    )?;
    Ok(())
}

/// Store an annotation. Its dwell is `dwell_ms` when the caller measured it, else the
/// time since the event was last shown (`gate show`), else unknown. Returns the
/// annotation's id and its dwell.
pub(crate) fn annotate(
    conn: &Connection,
    event: i64,
    verdict: &str,
    rationale: &str,
    now: &str,
    now_ms: i64,
    dwell_ms: Option<i64>,
) -> Result<(i64, Option<i64>)> {
    let exists: bool =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM gate_events WHERE id = ?1)", [event], |r| r.get(0))?;
    if !exists {
        bail!("gate annotate: event {event} does not exist (see `premerge gate log`)");
    }
    let dwell = match dwell_ms {
        Some(d) => Some(d),
        None => conn
            .query_row("SELECT shown_at_ms FROM gate_event_views WHERE event_id = ?1", [event], |r| r.get::<_, i64>(0))
            .optional()?
            // A clock that went back gives no dwell rather than a negative one.
            .and_then(|shown| now_ms.checked_sub(shown).filter(|d| *d >= 0)),
    };
    conn.execute(
        "INSERT INTO gate_annotations (event_id, verdict, rationale, created_at, dwell_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![event, verdict, rationale, now, dwell],
    )
    .context("gate annotate: cannot store the annotation")?;
    Ok((conn.last_insert_rowid(), dwell))
}

/// One annotation as `gate show` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct AnnotationRow {
    pub id: i64,
    pub verdict: String,
    pub rationale: String,
    pub created_at: String,
    pub dwell_ms: Option<i64>,
}

/// The annotations of one event, oldest first.
pub(crate) fn annotations(conn: &Connection, event: i64) -> Result<Vec<AnnotationRow>> {
    let mut st = conn.prepare(
        "SELECT id, verdict, rationale, created_at, dwell_ms FROM gate_annotations WHERE event_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map([event], |r| {
        Ok(AnnotationRow {
            id: r.get(0)?,
            verdict: r.get(1)?,
            rationale: r.get(2)?,
            created_at: r.get(3)?,
            dwell_ms: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// One event by id.
pub(crate) fn event(conn: &Connection, id: i64) -> Result<Option<EventRow>> {
    let mut st = conn.prepare(&format!("SELECT {EVENT_COLUMNS} FROM gate_events WHERE id = ?1"))?;
    Ok(st.query_map([id], event_row)?.next().transpose()?)
}

/// Counts for `gate status`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Counts {
    pub sessions: i64,
    pub stuck_sessions: i64,
    pub events: i64,
    pub annotations: i64,
    /// Today's events by decision.
    pub today: std::collections::BTreeMap<String, i64>,
}

pub(crate) fn counts(conn: &Connection, day: &str) -> Result<Counts> {
    let one = |sql: &str| -> Result<i64> { Ok(conn.query_row(sql, [], |r| r.get(0))?) };
    let mut today = std::collections::BTreeMap::new();
    let mut st = conn.prepare("SELECT decision, SUM(count) FROM gate_daily WHERE day = ?1 GROUP BY decision")?;
    for row in st.query_map([day], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (d, n) = row?;
        today.insert(d, n);
    }
    Ok(Counts {
        sessions: one("SELECT COUNT(*) FROM gate_sessions")?,
        stuck_sessions: one("SELECT COUNT(*) FROM gate_stuck")?,
        events: one("SELECT COUNT(*) FROM gate_events")?,
        annotations: one("SELECT COUNT(*) FROM gate_annotations")?,
        today,
    })
}

/// Up to `per_file` guard memories for each file, from the embedded memory store.
pub(crate) fn guard_memories(conn: &Connection, files: &[String], per_file: usize) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for f in files {
        let found = super::memory_db::search_by_files(conn, std::slice::from_ref(f))?;
        out.extend(found.into_iter().take(per_file).map(|m| (f.clone(), m.content.clone())));
    }
    Ok(out)
}

/// The cached history answer of a plan path and the commit it was computed at.
pub(crate) fn path_cache(conn: &Connection, path: &str) -> Result<Option<(String, crate::git::PathCommits)>> {
    Ok(conn
        .query_row("SELECT at_commit, latest, introducing FROM gate_path_cache WHERE path = ?1", [path], |r| {
            let pc = crate::git::PathCommits { latest: r.get(1)?, introducing: r.get(2)?, truncated: false };
            Ok((r.get(0)?, pc))
        })
        .optional()?)
}

pub(crate) fn save_path_cache(
    conn: &Connection,
    path: &str,
    at: &str,
    latest: Option<&str>,
    introducing: Option<&str>,
) -> Result<()> {
    conn.execute(
        "INSERT INTO gate_path_cache (path, at_commit, latest, introducing) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (path) DO UPDATE SET at_commit = excluded.at_commit, latest = excluded.latest,
         introducing = excluded.introducing",
        params![path, at, latest, introducing],
    )?;
    Ok(())
}

pub(crate) fn ancestry_known(conn: &Connection, ancestor: &str, descendant: &str) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM gate_ancestry WHERE ancestor = ?1 AND descendant = ?2)",
        [ancestor, descendant],
        |r| r.get(0),
    )?)
}

pub(crate) fn save_ancestry(conn: &Connection, ancestor: &str, descendant: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO gate_ancestry (ancestor, descendant) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        [ancestor, descendant],
    )?;
    Ok(())
}

/// Counts of one period for `gate status`.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Period {
    /// Evaluations by decision.
    pub decisions: std::collections::BTreeMap<String, i64>,
    /// Shadow `continue` decisions: stops enforce would have blocked.
    pub would_block: i64,
    /// Stops enforce did block.
    pub blocked: i64,
    /// Fail-open evaluations by failure kind.
    pub failures: std::collections::BTreeMap<String, i64>,
}

/// Operators' annotations of the gate's decisions.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Annotated {
    pub correct: i64,
    pub incorrect: i64,
    /// Of them, annotations of shadow decisions (what the suggestion to enforce reads).
    pub shadow_correct: i64,
    pub shadow_incorrect: i64,
    /// Of them, annotations of shadow would-blocks.
    pub would_block_correct: i64,
    pub would_block_incorrect: i64,
    /// Latest annotations given within [`MIN_DWELL_MS`] of showing the event: not counted above.
    pub hasty: i64,
}

/// Counts of the evaluations whose day (`ts[..10]`) is at least `from_day`.
pub(crate) fn period(conn: &Connection, from_day: &str) -> Result<Period> {
    let mut p = Period::default();
    let mut st =
        conn.prepare("SELECT decision, COUNT(*) FROM gate_events WHERE substr(ts, 1, 10) >= ?1 GROUP BY decision")?;
    for row in st.query_map([from_day], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (d, n) = row?;
        p.decisions.insert(d, n);
    }
    let mut st = conn.prepare(
        "SELECT failure_kind, COUNT(*) FROM gate_events
         WHERE substr(ts, 1, 10) >= ?1 AND failure_kind IS NOT NULL GROUP BY failure_kind",
    )?;
    for row in st.query_map([from_day], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (k, n) = row?;
        p.failures.insert(k, n);
    }
    p.would_block = conn.query_row(
        "SELECT COUNT(*) FROM gate_events WHERE substr(ts, 1, 10) >= ?1 AND mode = 'shadow' AND decision = 'continue'",
        [from_day],
        |r| r.get(0),
    )?;
    p.blocked = conn.query_row(
        "SELECT COUNT(*) FROM gate_events WHERE substr(ts, 1, 10) >= ?1 AND blocked = 1",
        [from_day],
        |r| r.get(0),
    )?;
    Ok(p)
}

/// Annotation counts over all time (the latest annotation of an event counts).
pub(crate) fn annotated(conn: &Connection) -> Result<Annotated> {
    let mut a = Annotated::default();
    let mut st = conn.prepare(
        "SELECT a.verdict, e.mode, e.decision, a.dwell_ms FROM gate_annotations a JOIN gate_events e ON e.id = a.event_id
         WHERE a.id = (SELECT MAX(id) FROM gate_annotations b WHERE b.event_id = a.event_id)",
    )?;
    let rows = st.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, Option<i64>>(3)?))
    })?;
    for row in rows {
        let (verdict, mode, decision, dwell) = row?;
        // A verdict given faster than anyone reads the event is kept but not counted.
        if dwell.is_some_and(|d| d < MIN_DWELL_MS) {
            a.hasty += 1;
            continue;
        }
        let correct = verdict == "correct";
        let bump = |c: &mut i64, i: &mut i64| if correct { *c += 1 } else { *i += 1 };
        bump(&mut a.correct, &mut a.incorrect);
        if mode == "shadow" {
            bump(&mut a.shadow_correct, &mut a.shadow_incorrect);
            if decision == "continue" {
                bump(&mut a.would_block_correct, &mut a.would_block_incorrect);
            }
        }
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open_db(&dir.path().join("premerge.db")).unwrap();
        (dir, conn)
    }

    #[test]
    fn every_failure_kind_mode_and_decision_is_stored_as_its_serde_text_and_read_back() {
        let (_d, mut conn) = db();
        let decisions = [Decision::Continue, Decision::Allow, Decision::Escalate, Decision::ForceAllow];
        for (i, kind) in FailureKind::ALL.into_iter().enumerate() {
            let row = EventRow {
                ts: "2026-01-02T03:04:05Z".into(),
                mode: [Mode::Off, Mode::Shadow, Mode::Enforce][i % 3],
                decision: decisions[i % 4],
                failure_kind: Some(kind),
                stop_reason_source: "none".into(),
                authority: "none".into(),
                ..EventRow::default()
            };
            insert_event(&mut conn, &row).unwrap();
            // The text in the row is what serde (and `gate log --format json`) says,
            // so the schema's CHECK constraint accepted it.
            let stored: (String, String, String) = conn
                .query_row("SELECT mode, decision, failure_kind FROM gate_events ORDER BY id DESC LIMIT 1", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap();
            assert_eq!(stored.0, row.mode.as_str());
            assert_eq!(stored.1, row.decision.as_str());
            assert_eq!(stored.2, kind.as_str());
            let back = events(&conn, 1).unwrap().pop().unwrap();
            assert_eq!((back.mode, back.decision, back.failure_kind), (row.mode, row.decision, Some(kind)));
        }
    }

    #[test]
    fn the_operator_mode_round_trips_and_clears() {
        let (_d, conn) = db();
        assert_eq!(control(&conn).unwrap().mode, None);
        for m in [Mode::Off, Mode::Shadow, Mode::Enforce] {
            set_mode(&conn, Some(m), "t").unwrap();
            assert_eq!(control(&conn).unwrap().mode, Some(m));
        }
        set_mode(&conn, None, "t").unwrap();
        assert_eq!(control(&conn).unwrap().mode, None);
    }

    #[test]
    fn a_stored_text_that_is_no_variant_is_an_error_not_a_default() {
        let (_d, conn) = db();
        let v: rusqlite::Result<Mode> = conn.query_row("SELECT 'enforcing'", [], |r| r.get(0));
        assert!(v.is_err());
        let v: rusqlite::Result<FailureKind> = conn.query_row("SELECT 'BreakerOpen'", [], |r| r.get(0));
        assert!(v.is_err());
    }
}
