//! Migration sequences: which `.sql` (and Django `.py`) files are migrations, which sequence each one
//! belongs to, and the order its tool applies them in, so a new migration can be
//! judged against the schema the earlier ones built (see `sql::detect_after`).
//!
//! Pure: the command reads the files (at the base revision) and hands them in.
//!
//! Conventions recognised, by file and directory name alone:
//! - sqlx: `migrations/<version>_<name>.sql`, or `.up.sql` / `.down.sql` pairs;
//! - golang-migrate: `<version>_<name>.up.sql` (the `.down.sql` half is never replayed);
//! - Flyway: `V<version>__<name>.sql`, version parts split by `.` or `_` (`V1_2__x`);
//!   undo (`U…`) and repeatable (`R__…`) scripts are not part of the sequence;
//! - diesel: `migrations/<yyyy-mm-dd-hhmmss>_<name>/up.sql`;
//! - Prisma: `prisma/migrations/<timestamp>_<name>/migration.sql`;
//! - any other `<digits>…_name.sql` (dbmate, goose, hand-rolled numbering).
//!
//! Django's `<app>/migrations/<digits>_<name>.py` are sequences too, replayed by the
//! Django pass (`py_django_migrations`), never by the SQL one: a directory holding both
//! kinds gives each file the earlier files of its own kind. Rails (`db/migrate/*.rb`)
//! is not replayed; its `db/structure.sql` or `schema.sql` dump is read as an ordinary
//! SQL file (an edit to a `CREATE TABLE` there is compared directly).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::sql::is_down_migration;

/// Most earlier migration files replayed per sequence. The largest real histories
/// measured (docs/scan.md) have a few hundred; past this, replaying costs more than
/// the scan of the change itself, and the earliest files (where tables are created)
/// are the ones kept.
pub(crate) const MAX_HISTORY_FILES: usize = 2000;

/// Most bytes of earlier migrations read per scan: 16 MiB, sixteen times
/// `scan.max_file_bytes`' default, so history never dominates a scan's memory.
pub(crate) const MAX_HISTORY_BYTES: u64 = 16 << 20;

/// Where a migration file sits: the directory holding its sequence, and its order key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The sequence's directory (`migrations`, `prisma/migrations`, `db/migration`).
    pub set: String,
    pub order: OrderKey,
}

/// A migration's place in its sequence: the numeric parts of its version, then the
/// name (byte order) to break ties deterministically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderKey {
    version: Vec<u64>,
    name: String,
}

impl Ord for OrderKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.version.cmp(&other.version).then_with(|| self.name.as_bytes().cmp(other.name.as_bytes()))
    }
}

impl PartialOrd for OrderKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The slot of a repository path, or `None` when it is no up-migration of a sequence.
pub fn slot(path: &str) -> Option<Slot> {
    if path.ends_with(".py") {
        return django_slot(path);
    }
    if !path.to_ascii_lowercase().ends_with(".sql") || is_down_migration(path) {
        return None;
    }
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    // diesel and Prisma: one directory per migration, the version in its name.
    if name == "up.sql" || name == "migration.sql" {
        let (set, unit) = dir.rsplit_once('/').unwrap_or(("", dir));
        let version = leading_version(unit, false)?;
        return Some(Slot { set: set.to_string(), order: OrderKey { version, name: unit.to_string() } });
    }
    let flyway = name.starts_with('V') && name[1..].starts_with(|c: char| c.is_ascii_digit()) && name.contains("__");
    let version = if flyway { leading_version(&name[1..], true)? } else { leading_version(name, false)? };
    Some(Slot { set: dir.to_string(), order: OrderKey { version, name: name.to_string() } })
}

/// A Django migration: `<app>/migrations/<digits>_<name>.py`, ordered by its number
/// then its name (Django's own order is its dependency graph, which numbered names
/// follow in all but merge migrations; `__init__.py` is no migration). Replayed by the
/// Django pass (`py_django_migrations`), never by the SQL one.
fn django_slot(path: &str) -> Option<Slot> {
    let (dir, name) = path.rsplit_once('/')?;
    if dir.rsplit('/').next() != Some("migrations") {
        return None;
    }
    let version = leading_version(name.strip_suffix(".py")?, false)?;
    Some(Slot { set: dir.to_string(), order: OrderKey { version, name: name.to_string() } })
}

/// The digit groups a name starts with: `20240101_x` is `[20240101]`,
/// `2024-01-01-000000_x` is `[2024, 1, 1, 0]`, Flyway's `1_2__x` is `[1, 2]`.
fn leading_version(name: &str, flyway: bool) -> Option<Vec<u64>> {
    let end = if flyway { name.find("__")? } else { name.len() };
    let mut parts = Vec::new();
    let mut digits = String::new();
    for c in name[..end].chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if digits.is_empty() {
            break;
        }
        // Versions longer than u64 (never seen) compare as the largest.
        parts.push(digits.parse().unwrap_or(u64::MAX));
        digits.clear();
        let separator = c == '.' || c == '-' || (flyway && c == '_');
        if !separator {
            break;
        }
    }
    if !digits.is_empty() {
        parts.push(digits.parse().unwrap_or(u64::MAX));
    }
    (!parts.is_empty()).then_some(parts)
}

/// One earlier migration file the command may read: its path and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: String,
    pub bytes: u64,
}

/// Which candidates to read, in sequence order, and how many were left out, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub read: Vec<String>,
    pub dropped: BTreeMap<&'static str, usize>,
}

/// Pick the files to read within the caps: sequences in path order, each from its
/// first migration on (the tables are created early; a replay missing its start
/// knows nothing).
pub fn select(mut candidates: Vec<Candidate>) -> Selection {
    let mut keyed: Vec<(Slot, Candidate)> =
        candidates.drain(..).filter_map(|c| slot(&c.path).map(|s| (s, c))).collect();
    keyed.sort_by(|(a, _), (b, _)| a.set.as_bytes().cmp(b.set.as_bytes()).then_with(|| a.order.cmp(&b.order)));
    let mut out = Selection::default();
    let mut bytes = 0u64;
    let mut per_set: BTreeMap<String, usize> = BTreeMap::new();
    for (slot, c) in keyed {
        let n = per_set.entry(slot.set).or_default();
        if *n >= MAX_HISTORY_FILES {
            *out.dropped.entry("over-max-history-files").or_default() += 1;
            continue;
        }
        if bytes + c.bytes > MAX_HISTORY_BYTES {
            *out.dropped.entry("over-max-history-bytes").or_default() += 1;
            continue;
        }
        *n += 1;
        bytes += c.bytes;
        out.read.push(c.path);
    }
    out
}

/// The earlier migrations of a change: every file of each sequence it touches, as of
/// the base revision with the change's own new versions laid over.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Per sequence directory: (order, path, text), sorted by order.
    sets: BTreeMap<String, Vec<(OrderKey, String, String)>>,
}

impl History {
    /// Build from file texts (non-migrations are ignored).
    pub fn new(files: impl IntoIterator<Item = (String, String)>) -> History {
        let mut sets: BTreeMap<String, Vec<(OrderKey, String, String)>> = BTreeMap::new();
        for (path, text) in files {
            if let Some(slot) = slot(&path) {
                sets.entry(slot.set).or_default().push((slot.order, path, text));
            }
        }
        for files in sets.values_mut() {
            files.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.as_bytes().cmp(b.1.as_bytes())));
            files.dedup_by(|a, b| a.1 == b.1);
        }
        History { sets }
    }

    /// The texts of the migrations applied before `path`, in order (empty when `path`
    /// is no migration or its sequence is unknown).
    pub fn earlier(&self, path: &str) -> Vec<&str> {
        let Some(slot) = slot(path) else {
            return Vec::new();
        };
        let Some(files) = self.sets.get(&slot.set) else {
            return Vec::new();
        };
        // A directory holding both SQL and Django migrations: each replays its own kind.
        let kind = |p: &str| p.ends_with(".py");
        files
            .iter()
            .filter(|(order, p, _)| *order < slot.order && p != path && kind(p) == kind(path))
            .map(|(_, _, t)| t.as_str())
            .collect()
    }

    /// Whether no sequence is known.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(path: &str) -> (String, Vec<u64>) {
        let s = slot(path).unwrap_or_else(|| panic!("{path} is a migration"));
        (s.set, s.order.version)
    }

    #[test]
    fn conventions_give_a_sequence_and_a_version() {
        assert_eq!(order("migrations/20240105090000_create.sql"), ("migrations".into(), vec![20240105090000]));
        assert_eq!(order("migrations/3_users.up.sql"), ("migrations".into(), vec![3]));
        assert_eq!(order("db/migration/V1_2__x.sql"), ("db/migration".into(), vec![1, 2]));
        assert_eq!(order("db/migration/V2.10__x.sql"), ("db/migration".into(), vec![2, 10]));
        assert_eq!(order("migrations/2024-01-01-000000_create/up.sql"), ("migrations".into(), vec![2024, 1, 1, 0]));
        assert_eq!(
            order("prisma/migrations/20230601000000_x/migration.sql"),
            ("prisma/migrations".into(), vec![20230601000000])
        );
        for p in [
            "db/schema.sql",
            "migrations/3_users.down.sql",
            "migrations/2024-01-01-000000_create/down.sql",
            "db/migration/R__views.sql",
            "db/migration/U2__undo.sql",
            "db/migrate/20240101_add_users.rb",
            "app/migrations/__init__.py",
            "app/scripts/0001_backfill.py",
        ] {
            assert_eq!(slot(p), None, "{p}");
        }
        // Django: `<app>/migrations/<digits>_<name>.py`, replayed by the Django pass.
        assert_eq!(order("shop/migrations/0012_alter_item_name.py"), ("shop/migrations".into(), vec![12]));
    }

    #[test]
    fn a_directory_of_sql_and_django_migrations_replays_each_kind_to_its_own() {
        let h = History::new([
            ("app/migrations/0001_initial.py".to_string(), "PY1".to_string()),
            ("app/migrations/0001_seed.sql".to_string(), "SQL1".to_string()),
            ("app/migrations/0002_more.py".to_string(), "PY2".to_string()),
        ]);
        assert_eq!(h.earlier("app/migrations/0003_x.py"), ["PY1", "PY2"]);
        assert_eq!(h.earlier("app/migrations/0003_x.sql"), ["SQL1"]);
    }

    #[test]
    fn versions_order_numerically_not_by_bytes() {
        let a = slot("db/migration/V2__a.sql").expect("flyway");
        let b = slot("db/migration/V10__b.sql").expect("flyway");
        assert!(a.order < b.order);
        let h = History::new([
            ("db/migration/V10__b.sql".to_string(), "B".to_string()),
            ("db/migration/V2__a.sql".to_string(), "A".to_string()),
            ("db/migration/V11__c.sql".to_string(), "C".to_string()),
            ("other/V1__z.sql".to_string(), "Z".to_string()),
        ]);
        assert_eq!(h.earlier("db/migration/V11__c.sql"), ["A", "B"]);
        assert_eq!(h.earlier("db/migration/V10__b.sql"), ["A"]);
        assert!(h.earlier("db/schema.sql").is_empty());
    }

    #[test]
    fn selection_keeps_the_start_and_counts_what_it_drops() {
        let many: Vec<Candidate> = (0..MAX_HISTORY_FILES + 3)
            .map(|i| Candidate { path: format!("migrations/{i}_m.sql"), bytes: 10 })
            .chain([Candidate { path: "README.sql".into(), bytes: 1 }])
            .collect();
        let s = select(many);
        assert_eq!(s.read.len(), MAX_HISTORY_FILES);
        assert_eq!(s.read[0], "migrations/0_m.sql");
        assert_eq!(s.dropped.get("over-max-history-files"), Some(&3));
        let big = vec![
            Candidate { path: "m/1_a.sql".into(), bytes: MAX_HISTORY_BYTES },
            Candidate { path: "m/2_b.sql".into(), bytes: 1 },
        ];
        let s = select(big);
        assert_eq!((s.read.len(), s.dropped.get("over-max-history-bytes")), (1, Some(&1)));
    }
}
