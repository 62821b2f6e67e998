//! Django migrations judged against the app's earlier migrations, and the field type
//! changes that loosen a Django field.
//!
//! A new migration (`0107_alter_x.py`) rarely shows the field it alters: its
//! `AlterField(model_name="page", name="name", field=models.TextField())` is judged
//! against the field as the app's earlier migrations left it. The command hands in the
//! texts of the same `migrations/` directory at the base revision, in name order
//! (`widen::migrations`, within its named caps of files and bytes, plus
//! [`MAX_REPLAY_FILES`] and [`MAX_REPLAY_BYTES`] here); this module replays them:
//! `CreateModel` fields and options (`unique_together`, `constraints`), `AddField`,
//! `AlterField`, `RenameField`, `AlterUniqueTogether`, `AddConstraint`, one file after
//! the other, each parsed once, no recursion. Only the files naming a model the change
//! needs (a substring test on the lower-cased text) are parsed.
//!
//! Judged against the replayed state: an `AlterField` whose old field the file does
//! not show, an `AlterUniqueTogether` whose old sets the file does not show (a set no
//! longer enforced: removed, or gaining a column such as `deleted_at`), and a
//! `RemoveConstraint` (named by the constraint's first value field where the replay
//! knows its fields). Without the replay (no base revision, history not read) an
//! `AlterUniqueTogether` is judged only when it empties the sets.
//!
//! Not replayed: `RenameModel`, `DeleteModel`, `RemoveField` (a field removed and never
//! re-added cannot be altered later, so its stale entry is never read), `RunPython`
//! and `RunSQL` (what they do to the schema is not read), other apps' migrations.

use std::collections::{BTreeMap, BTreeSet};

use super::RuleId;
use super::py_django::{FieldDecl, Found, Inventory, pick_field, sets_shown, weakened_set};

/// Most earlier migration files of one app parsed per judged migration: an app's
/// history past this (never seen: the largest measured had a few hundred) is left
/// unread from the newest on, as `widen::migrations` keeps the earliest files (where
/// models are created).
pub(crate) const MAX_REPLAY_FILES: usize = 1000;

/// Most bytes of earlier migrations parsed per judged migration: 8 MiB, so that a
/// change of many new migrations in one large app stays within a scan's usual memory
/// and time (each file is parsed and dropped before the next).
pub(crate) const MAX_REPLAY_BYTES: usize = 8 << 20;

/// The state an app's earlier migrations leave, as far as the judged operations need.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Fields by `model.field` (lower-case model).
    pub(super) fields: BTreeMap<String, FieldDecl>,
    /// `unique_together` sets by lower-case model.
    together: BTreeMap<String, BTreeSet<String>>,
    /// Constraint fields by (lower-case model, constraint name).
    constraints: BTreeMap<(String, String), Vec<String>>,
}

/// The lower-case models whose earlier state `new` needs and its own versions do not
/// show.
fn wanted(old: &Inventory, new: &Inventory) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (key, _, _) in &new.open_alters {
        if !old.migrated.contains_key(key)
            && let Some((model, _)) = key.split_once('.')
        {
            out.insert(model.to_string());
        }
    }
    if new.open_together.is_empty() && new.open_removed.is_empty() {
        return out;
    }
    // The old version's open operations are judged too, to leave out what it had.
    for inv in [old, new] {
        out.extend(inv.open_together.iter().map(|(lower, _, _, _)| lower.clone()));
        out.extend(inv.open_removed.iter().map(|(lower, _, _, _, _)| lower.clone()));
    }
    out
}

/// Replay `earlier` for the models `new` needs; `None` when it needs none.
pub(super) fn replay(old: &Inventory, new: &Inventory, earlier: &[&str]) -> Option<State> {
    let models = wanted(old, new);
    if models.is_empty() || earlier.is_empty() {
        return None;
    }
    // Both quotings of a model's name, lower-cased (`name="Page"`, `model_name='page'`).
    let needles: Vec<String> = models.iter().flat_map(|m| [format!("\"{m}\""), format!("'{m}'")]).collect();
    let mut state = State::default();
    let mut bytes = 0usize;
    for text in earlier.iter().take(MAX_REPLAY_FILES) {
        bytes += text.len();
        if bytes > MAX_REPLAY_BYTES {
            break;
        }
        let lower = text.to_ascii_lowercase();
        if !needles.iter().any(|n| memchr::memmem::find(lower.as_bytes(), n.as_bytes()).is_some()) {
            continue;
        }
        let Some((inv, _)) = super::syntax::both_versions(&super::py_decl::grammar(), text, "", Inventory::build)
        else {
            continue;
        };
        for (from, to) in &inv.renamed {
            if let Some(decl) = state.fields.remove(from) {
                state.fields.insert(to.clone(), decl);
            }
        }
        state.fields.extend(inv.migrated);
        state.together.extend(inv.migrated_together);
        state.constraints.extend(inv.constraint_fields);
    }
    Some(state)
}

/// The findings of `new`'s `AlterUniqueTogether`s and `RemoveConstraint`s whose old
/// state the file does not show, judged against the replayed `state`, less those the
/// old version of the file gave the same way (a migration edited in place: its
/// operations reordered, one added).
pub(super) fn judge_open(old: &Inventory, new: &Inventory, state: Option<&State>) -> Vec<Found> {
    let had: BTreeSet<(RuleId, String, String, String)> =
        open_findings(old, new, state).into_iter().map(|(r, s, b, a, _)| (r, s, b, a)).collect();
    open_findings(new, old, state)
        .into_iter()
        .filter(|(r, s, b, a, _)| !had.contains(&(*r, s.clone(), b.clone(), a.clone())))
        .collect()
}

/// One version's open operations judged against `state` (`other`: the other version of
/// the file, whose own `AddConstraint`s also name a removed constraint's fields).
fn open_findings(inv: &Inventory, other: &Inventory, state: Option<&State>) -> Vec<Found> {
    let mut out = Vec::new();
    let kind = |lower: &str, f: &str| {
        let key = format!("{lower}.{f}");
        inv.migrated.get(&key).or_else(|| state.and_then(|s| s.fields.get(&key))).map(|d| d.kind.clone())
    };
    let named =
        |model: &str, field: &str| if field.is_empty() { model.to_string() } else { format!("{model}.{field}") };
    for (lower, model, now, line) in &inv.open_together {
        match state.and_then(|s| s.together.get(lower)) {
            Some(was) => {
                if let Some(weakened) = weakened_set(was, now) {
                    let fields: Vec<String> = weakened.split(", ").map(str::to_string).collect();
                    let field = pick_field(&fields, |f| kind(lower, f)).unwrap_or("");
                    out.push((
                        RuleId::PyDjangoConstraintRemoved,
                        named(model, field),
                        sets_shown(was),
                        sets_shown(now),
                        *line,
                    ));
                }
            }
            // Emptied: makemigrations writes that only where a set was declared.
            None if now.is_empty() => out.push((
                RuleId::PyDjangoConstraintRemoved,
                model.clone(),
                "unique_together".to_string(),
                sets_shown(now),
                *line,
            )),
            None => {}
        }
    }
    for (lower, model, name, shown, line) in &inv.open_removed {
        let key = (lower.clone(), name.clone());
        let fields = other.constraint_fields.get(&key).or_else(|| state.and_then(|s| s.constraints.get(&key)));
        let field = fields.and_then(|f| pick_field(f, |x| kind(lower, x))).unwrap_or("");
        out.push((RuleId::PyDjangoConstraintRemoved, named(model, field), shown.clone(), String::new(), *line));
    }
    out
}

/// The values an integer field type stores: (least, greatest), Django's documented
/// ranges (the database's column types behind them).
fn integer_range(kind: &str) -> Option<(i128, i128)> {
    Some(match kind {
        "PositiveSmallIntegerField" => (0, i16::MAX as i128),
        "SmallIntegerField" => (i16::MIN as i128, i16::MAX as i128),
        "PositiveIntegerField" => (0, i32::MAX as i128),
        "IntegerField" => (i32::MIN as i128, i32::MAX as i128),
        "PositiveBigIntegerField" => (0, i64::MAX as i128),
        "BigIntegerField" => (i64::MIN as i128, i64::MAX as i128),
        _ => return None,
    })
}

/// Types holding a fraction: an integer field made one of these accepts `0.5`.
const FRACTIONAL: &[&str] = &["FloatField", "DecimalField"];

/// Fields that reference another row: the database checks the referenced row exists.
const RELATIONAL: &[&str] = &["ForeignKey", "OneToOneField"];

/// What a field type change loosens, with the rule it is: an integer type made wider
/// or fractional (`IntegerField` to `BigIntegerField` or `FloatField`,
/// `PositiveIntegerField` to `IntegerField`) is `py-django-bound-loosened`; a foreign
/// key made a plain column (`ForeignKey` to `UUIDField`: ids of no row accepted) or a
/// `OneToOneField` made a `ForeignKey` (two rows may reference one) is
/// `py-django-constraint-removed`. A `ManyToManyField` changed is no column change and
/// is not judged.
pub(super) fn type_loosened(old: &str, new: &str) -> Option<RuleId> {
    if old == new {
        return None;
    }
    if let Some((lo, hi)) = integer_range(old) {
        if FRACTIONAL.contains(&new) {
            return Some(RuleId::PyDjangoBoundLoosened);
        }
        if let Some((nlo, nhi)) = integer_range(new) {
            return (nlo < lo || nhi > hi).then_some(RuleId::PyDjangoBoundLoosened);
        }
        return None;
    }
    if RELATIONAL.contains(&old) && new != "ManyToManyField" && (new == "ForeignKey" || !RELATIONAL.contains(&new)) {
        return Some(RuleId::PyDjangoConstraintRemoved);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widen::py_django::detect_after;

    fn found(before: &str, after: &str, earlier: &[&str]) -> Vec<(RuleId, String)> {
        detect_after(before, after, earlier).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    fn migration(ops: &str) -> String {
        format!(
            "from django.db import migrations, models\n\nclass Migration(migrations.Migration):\n    operations = [\n{ops}    ]\n"
        )
    }

    #[test]
    fn a_new_alter_field_is_judged_against_the_replayed_field() {
        let first = migration(
            "        migrations.CreateModel(name=\"Room\", fields=[(\"title\", models.CharField(max_length=40)), (\"seats\", models.IntegerField())]),\n",
        );
        let second =
            migration("        migrations.RenameField(model_name=\"room\", old_name=\"title\", new_name=\"name\"),\n");
        let other = migration(
            "        migrations.CreateModel(name=\"Desk\", fields=[(\"name\", models.CharField(max_length=9))]),\n",
        );
        let after = migration(
            "        migrations.AlterField(model_name=\"room\", name=\"name\", field=models.CharField(max_length=40, null=True)),\n        migrations.AlterField(model_name=\"room\", name=\"seats\", field=models.FloatField()),\n",
        );
        let got = found("", &after, &[&first, &other, &second]);
        assert_eq!(
            got,
            [
                (RuleId::PyDjangoNullAllowed, "room.name".to_string()),
                (RuleId::PyDjangoBoundLoosened, "room.seats".to_string()),
            ]
        );
        // Without the earlier migrations neither field's old state is known.
        assert_eq!(found("", &after, &[]), []);
    }

    #[test]
    fn unique_together_is_weakened_by_a_set_gaining_a_column_not_by_one_losing_one() {
        let first = migration(
            "        migrations.CreateModel(name=\"Room\", fields=[(\"code\", models.CharField(max_length=8)), (\"site\", models.ForeignKey(to=\"x.site\", on_delete=models.CASCADE))], options={\"unique_together\": {(\"site\", \"code\")}}),\n",
        );
        let wider = migration(
            "        migrations.AlterUniqueTogether(name=\"room\", unique_together={(\"site\", \"code\", \"deleted_at\")}),\n",
        );
        assert_eq!(found("", &wider, &[&first]), [(RuleId::PyDjangoConstraintRemoved, "room.code".to_string())]);
        let narrower =
            migration("        migrations.AlterUniqueTogether(name=\"room\", unique_together={(\"code\",)}),\n");
        assert_eq!(found("", &narrower, &[&first]), []);
    }

    #[test]
    fn integer_types_widen_by_range_and_fraction() {
        assert_eq!(type_loosened("IntegerField", "FloatField"), Some(RuleId::PyDjangoBoundLoosened));
        assert_eq!(type_loosened("IntegerField", "BigIntegerField"), Some(RuleId::PyDjangoBoundLoosened));
        assert_eq!(type_loosened("PositiveIntegerField", "IntegerField"), Some(RuleId::PyDjangoBoundLoosened));
        assert_eq!(type_loosened("BigIntegerField", "IntegerField"), None);
        assert_eq!(type_loosened("IntegerField", "PositiveSmallIntegerField"), None);
        assert_eq!(type_loosened("FloatField", "IntegerField"), None);
    }

    #[test]
    fn a_reference_made_a_plain_column_is_a_constraint_removed() {
        assert_eq!(type_loosened("ForeignKey", "UUIDField"), Some(RuleId::PyDjangoConstraintRemoved));
        assert_eq!(type_loosened("OneToOneField", "ForeignKey"), Some(RuleId::PyDjangoConstraintRemoved));
        assert_eq!(type_loosened("ForeignKey", "OneToOneField"), None);
        assert_eq!(type_loosened("UUIDField", "ForeignKey"), None);
    }
}
