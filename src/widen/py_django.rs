//! Django models, forms and migrations: the constraints a model or form field declares
//! (`models.CharField(max_length=64, unique=True, validators=[...], choices=...)`), a
//! model's `Meta` (`constraints`, `unique_together`), and the operations of a migration
//! (`AlterField`, `RemoveConstraint`, `AlterUniqueTogether`), compared between the two
//! versions of a file.
//!
//! A pass of its own beside the Python detector, run only where both versions mention
//! `django`, `models.` or `rest_framework` (a substring test), or where an added file holds a migration
//! operation this pass judges ([`added_may_fire`]). A model is a class deriving
//! `models.Model` (or `Model`, Django's abstract user classes), or a class of the same
//! file that is a model; a form is a class deriving `forms.Form` or `forms.ModelForm`
//! (or a form of the same file), read like a model (its fields add `required=False`,
//! `min_value`/`max_value`, `min_length`). A class deriving any base named `...Form`
//! or `...Serializer` (a project's import form, a REST framework serializer) is read
//! the same way, whatever builds its fields; a serializer's fields add `allow_null`
//! and `allow_blank`, and a nested serializer is one of its fields. Symbols are `Model.field` (a migration's lower-case
//! `model_name` is spelt as the `CreateModel` of the same file names it, when there is
//! one) and `Model` for a `Meta` constraint.
//!
//! A migration's `AlterField` is judged against the field as the same file defined it
//! before that operation (a `CreateModel`, `AddField` or `AlterField` earlier in its
//! operations) or, failing that, as the file's old version left it; an `AlterField`
//! whose old field neither shows is not judged. An `AddField` is never a loosening (a
//! new column constrains nothing yet, `null=True` or not). Findings the old version
//! already had are not reported again.
//!
//! Not findings: a model, field or migration removed, a bound given by a constant
//! changed (only its removal is judged), a validator or constraint rewritten under the
//! same name (what the new one admits cannot be told), narrowing and formatting.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::py_decl::{self, Bound, Call, bound_loosened, call, is_true, number, string};
use super::py_django_migrations::{self, State};
use super::syntax::{compact, field, kind_of, line, named_children, one_line, text};
use super::{DetectError, Family, Language, RawFinding, RuleDef, RuleId, Severity};

const PY: &[Language] = &[Language::Python];

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: RuleId::PyDjangoBoundLoosened,
        languages: PY,
        family: Family::NumericRange,
        description: "A Django model or form field admits more: `max_length`, `max_digits` or `decimal_places` (or a form's `max_value`) raised or removed, a form's `min_length`/`min_value` lowered or removed, a `MinValueValidator`/`MinLengthValidator` lowered or removed, a `MaxValueValidator`/`MaxLengthValidator` raised or removed (in a model, a `forms.Form`/`ModelForm`, or a migration's `AlterField`).",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside the old bounds: `{before}` became `{after}`",
        invariant: "Stored values and lengths stayed within the field's declared bounds, which the column, forms and consumers rely on.",
    },
    RuleDef {
        id: RuleId::PyDjangoNullAllowed,
        languages: PY,
        family: Family::Optionality,
        description: "A Django model or form field accepts an empty value it refused: `null=True` or `blank=True` added (in a model, or in a migration's `AlterField`), or `required=False` added to a form field or a REST framework serializer field (or `allow_null=True`/`allow_blank=True` added to the latter); `AddField(null=True)` is not a loosening.",
        severity: Severity::High,
        message: "{symbol} may now be empty: `{before}` became `{after}`",
        invariant: "Every stored row had a value for this field, so code reading it never handled None or an empty string.",
    },
    RuleDef {
        id: RuleId::PyDjangoConstraintRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "A Django uniqueness or check constraint is removed: `unique=True` taken from a field, a `UniqueConstraint`/`CheckConstraint` taken from `Meta.constraints`, `unique_together` losing a set of fields, or a migration's `RemoveConstraint`, `AlterUniqueTogether` dropping a set, or `AlterField` dropping `unique`; also `auto_now`/`auto_now_add` dropped from a field (its value was always the save time, now any value given).",
        severity: Severity::High,
        message: "{symbol}: the constraint `{before}` was removed or loosened to `{after}`",
        invariant: "The database refused rows that broke the constraint, so code could rely on it holding for every stored row.",
    },
    RuleDef {
        id: RuleId::PyDjangoValidatorRemoved,
        languages: PY,
        family: Family::CheckRemoved,
        description: "A validator is taken from a Django model or form field's `validators=[...]` (or the list removed) with no other validator added to the field, or a field type that checks its value's shape (`URLField`, `EmailField`, `SlugField`, `IntegerField`...) replaced by one taking any text (`CharField`, `TextField`, `Field`); bounds (`MinValueValidator`...) are `py-django-bound-loosened`.",
        severity: Severity::Medium,
        message: "{symbol}: the validator `{before}` was removed",
        invariant: "Every value saved through model validation passed the removed validator.",
    },
    RuleDef {
        id: RuleId::PyDjangoChoicesWidened,
        languages: PY,
        family: Family::EnumErasure,
        description: "A Django field's `choices` admits more: the list (inline, a constant of the same file, or a `TextChoices`/`IntegerChoices` class of the same file) gains a member, or `choices` is removed.",
        severity: Severity::Medium,
        message: "{symbol} accepts values outside its old choices: `{before}` became `{after}`",
        invariant: "The stored value was one of a closed set of choices, so every consumer could handle each case.",
    },
];

/// The bases that make a class a Django model, or a Django form (whose fields declare
/// the same bounds, validators and choices, checked on every submission).
const BASES: &[&str] = &["Model", "AbstractUser", "AbstractBaseUser", "Form", "ModelForm"];

/// Whether a base names a form or a Django REST framework serializer of any module
/// (`NetBoxModelImportForm`, `serializers.ModelSerializer`): such a class's fields
/// are input rules whatever constructor builds them (`CSVChoiceField(...)`, a nested
/// `ProviderSerializer(...)`), so they are read even when none is written
/// `forms.`-qualified.
fn is_input_base(base: &str) -> bool {
    let last = py_decl::last_segment(base);
    (last.ends_with("Form") || last.ends_with("Serializer")) && !last.ends_with("Field")
}

/// Field types that check their value's shape (a form's `URLField` refuses what is no
/// URL, a model's `EmailField` validates as an e-mail address): replaced by one of
/// [`LAX_TYPES`], the check is gone.
const STRICT_TYPES: &[&str] = &[
    "EmailField",
    "URLField",
    "SlugField",
    "GenericIPAddressField",
    "IPAddressField",
    "UUIDField",
    "RegexField",
    "IntegerField",
    "DecimalField",
    "FloatField",
    "DateField",
    "DateTimeField",
    "TimeField",
    "JSONField",
];

/// Field types taking any text: what a strict type loosens to.
const LAX_TYPES: &[&str] = &["CharField", "TextField", "Field"];

/// The bases of a choices enumeration.
const CHOICES_BASES: &[&str] = &["TextChoices", "IntegerChoices", "Choices"];

/// Longest `before`/`after` rendering of a declaration.
const MAX_RENDER: usize = 160;

/// The operations of a migration that can loosen something when a file is added.
const ADDED_OPERATIONS: &[&str] = &["RemoveConstraint", "AlterUniqueTogether", "AlterField"];

fn mentions(s: &str) -> bool {
    // A REST framework serializer module may name neither (`from rest_framework
    // import serializers`).
    py_decl::both_mention(s, s, &["django", "models.", "rest_framework"])
}

/// Whether both versions may hold a Django model or migration (the pass's prefilter);
/// an added file is read only where [`added_may_fire`] says so.
pub(crate) fn may_hold(before: &str, after: &str) -> bool {
    mentions(after) && (mentions(before) || (before.is_empty() && added_may_fire(after)))
}

/// Whether an added file may yield a finding: a migration with an operation this pass
/// judges.
pub(crate) fn added_may_fire(after: &str) -> bool {
    py_decl::both_mention(after, after, &["migrations."]) && py_decl::both_mention(after, after, ADDED_OPERATIONS)
}

/// The Django findings of a Python file. A version that does not parse gives none (the
/// Python detector reports the error).
pub(crate) fn detect(before: &str, after: &str) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let Some((old, new)) = super::syntax::both_versions(&py_decl::grammar(), before, after, Inventory::build) else {
        return Ok(Vec::new());
    };
    Ok(compare(&old, &new, None))
}

/// [`detect`] for a migration applied after `earlier` (the texts of the same app's
/// earlier migrations, in order): an `AlterField`, `AlterUniqueTogether` or
/// `RemoveConstraint` whose old state the file does not show is judged against the
/// state those migrations leave (see `py_django_migrations`).
pub(crate) fn detect_after(before: &str, after: &str, earlier: &[&str]) -> Result<Vec<RawFinding>, DetectError> {
    if !may_hold(before, after) {
        return Ok(Vec::new());
    }
    let Some((old, new)) = super::syntax::both_versions(&py_decl::grammar(), before, after, Inventory::build) else {
        return Ok(Vec::new());
    };
    let state = py_django_migrations::replay(&old, &new, earlier);
    Ok(compare(&old, &new, state.as_ref()))
}

/// What one field declares.
#[derive(Debug, Default, Clone)]
pub(super) struct FieldDecl {
    line: u32,
    shown: String,
    /// The field type's last segment (`CharField`).
    pub(super) kind: String,
    null: bool,
    blank: bool,
    unique: bool,
    /// A form field's `required=False`: the form accepts the field left empty.
    optional: bool,
    /// `auto_now=True` or `auto_now_add=True`: the value is the save time, never input.
    auto_now: bool,
    /// `max_length`, `max_digits`, `decimal_places`, a form's `max_value`,
    /// `MaxValueValidator`, `MaxLengthValidator`, by name.
    upper: BTreeMap<&'static str, Bound>,
    /// A form's `min_length`/`min_value`, `MinValueValidator`, `MinLengthValidator`.
    lower: BTreeMap<&'static str, Bound>,
    /// Every other validator, compacted.
    validators: BTreeSet<String>,
    /// The members `choices` admits (`None`: no choices; an empty set: choices that
    /// could not be read, never judged).
    choices: Option<BTreeSet<String>>,
    choices_shown: String,
}

/// A finding found within one version (a migration's `AlterField` against the field
/// before it, a `RemoveConstraint`).
pub(super) type Found = (RuleId, String, String, String, u32);

#[derive(Debug, Default)]
pub(super) struct Inventory {
    /// Model fields, by `Model.field`.
    fields: BTreeMap<String, FieldDecl>,
    /// Meta constraints, by `Model` then by name (or text).
    constraints: BTreeMap<String, BTreeMap<String, String>>,
    /// `unique_together`, by `Model`: each set of fields sorted and joined.
    together: BTreeMap<String, (BTreeSet<String>, String)>,
    /// The line of a model's `unique_together`, by `Model`.
    together_line: BTreeMap<String, u32>,
    /// A migration's fields as its operations leave them, by `model.field` (lower-case model).
    pub(super) migrated: BTreeMap<String, FieldDecl>,
    /// A migration's `unique_together`s as its operations leave them, by lower-case model.
    pub(super) migrated_together: BTreeMap<String, BTreeSet<String>>,
    /// `AlterField`s whose old field the same version does not show: judged against
    /// the other version's `migrated`: (key, symbol, the new field).
    pub(super) open_alters: Vec<(String, String, FieldDecl)>,
    /// Fields a migration's `CreateModel`s and `AddField`s create, by `model.field`
    /// (lower-case model): (symbol, the field as created). A migration edited in place
    /// that creates a field laxer than its old version did loosens the schema it builds.
    created: BTreeMap<String, (String, FieldDecl)>,
    /// A migration's `RenameField`s, in order: (old key, new key), lower-case model.
    pub(super) renamed: Vec<(String, String)>,
    /// What the migration's own operations loosen.
    found: Vec<Found>,
    /// The fields of a migration's constraints as its own operations add them
    /// (`AddConstraint`, `CreateModel(options={"constraints": ...})`), by (lower-case
    /// model, constraint name).
    pub(super) constraint_fields: BTreeMap<(String, String), Vec<String>>,
    /// `AlterUniqueTogether`s whose old sets the same version does not show: (lower-case
    /// model, symbol of the model, the new sets, line), judged against the earlier
    /// migrations when they are replayed, else only when emptied.
    pub(super) open_together: Vec<(String, String, BTreeSet<String>, u32)>,
    /// `RemoveConstraint`s whose constraint the same version does not define: (lower-case
    /// model, symbol of the model, constraint name, shown, line).
    pub(super) open_removed: Vec<(String, String, String, String, u32)>,
    /// A model's `Meta.constraints`' fields, by `Model` then constraint key.
    meta_fields: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

/// The choices lists and choices classes of a module, by name, read first so that a
/// field can refer to one declared after it.
type ChoiceSets = BTreeMap<String, BTreeSet<String>>;

impl Inventory {
    pub(super) fn build(root: Node, src: &str) -> Inventory {
        let mut inv = Inventory::default();
        let classes = py_decl::classes(root, src);
        let mut sets: ChoiceSets = BTreeMap::new();
        // Constants at module and class level holding a list or tuple literal.
        let mut consts: Vec<Node> = named_children(root);
        for c in &classes {
            consts.extend(c.body.iter().copied());
            if c.derives(CHOICES_BASES) {
                let members = c
                    .body
                    .iter()
                    .filter_map(|s| py_decl::assignment(*s, src))
                    .filter_map(|(_, _, v)| v)
                    .map(|v| member(v, src))
                    .collect();
                let name = py_decl::last_segment(&c.symbol).to_string();
                sets.insert(format!("{name}.choices"), members);
            }
        }
        for s in consts {
            if let Some((name, _, Some(v))) = py_decl::assignment(s, src)
                && matches!(kind_of(v), "list" | "tuple")
            {
                sets.insert(name, list_members(v, src));
            }
        }
        let mut model_names: BTreeSet<String> = BTreeSet::new();
        for c in &classes {
            // A project's own base (`class Issue(ProjectBaseModel)`, defined in another
            // module) is known by what the class declares: a `models.`/`forms.` field.
            let input = c.bases.iter().any(|b| is_input_base(b));
            let is_model = c.derives(BASES) && !c.derives(CHOICES_BASES)
                || c.bases.iter().any(|b| model_names.contains(py_decl::last_segment(b)))
                || input
                || !c.derives(CHOICES_BASES) && c.body.iter().any(|s| declares_django_field(*s, src));
            if !is_model {
                continue;
            }
            // A serializer's nested serializer is one of its fields (`account =
            // AccountSerializer(required=False)`).
            let serializer = c.bases.iter().any(|b| py_decl::last_segment(b).ends_with("Serializer"));
            model_names.insert(py_decl::last_segment(&c.symbol).to_string());
            for stmt in &c.body {
                if kind_of(*stmt) == "class_definition" && field(*stmt, "name").is_some_and(|n| text(n, src) == "Meta")
                {
                    inv.meta(&c.symbol, *stmt, src);
                    continue;
                }
                let Some((name, _, Some(value))) = py_decl::assignment(*stmt, src) else { continue };
                let Some(c_) = call(value, src).filter(|c| is_field(c) || serializer && c.name.ends_with("Serializer"))
                else {
                    continue;
                };
                inv.fields.insert(format!("{}.{name}", c.symbol), field_decl(&c_, *stmt, src, &sets));
            }
        }
        inv.migration(root, src, &sets);
        inv
    }

    fn meta(&mut self, model: &str, meta: Node, src: &str) {
        for s in field(meta, "body").map(named_children).unwrap_or_default() {
            let Some((name, _, Some(value))) = py_decl::assignment(s, src) else { continue };
            match name.as_str() {
                "constraints" => {
                    let list = self.constraints.entry(model.to_string()).or_default();
                    for item in named_children(value) {
                        if let Some(c) = call(item, src) {
                            let key = c
                                .keyword("name")
                                .and_then(|n| string(n, src))
                                .unwrap_or_else(|| compact(text(item, src)));
                            list.insert(key.clone(), cap(one_line(text(item, src))));
                            self.meta_fields
                                .entry(model.to_string())
                                .or_default()
                                .insert(key, constraint_fields(&c, src));
                        }
                    }
                }
                "unique_together" => {
                    self.together_line.insert(model.to_string(), line(s));
                    self.together.insert(model.to_string(), (together(value, src), cap(one_line(text(s, src)))));
                }
                _ => {}
            }
        }
    }

    /// A migration's `operations = [...]`, in order.
    fn migration(&mut self, root: Node, src: &str, sets: &ChoiceSets) {
        let mut ops = Vec::new();
        // `class Migration(migrations.Migration): operations = [...]`.
        for c in py_decl::classes(root, src) {
            if !c.derives(&["Migration"]) {
                continue;
            }
            for s in &c.body {
                if let Some((name, _, Some(v))) = py_decl::assignment(*s, src)
                    && name == "operations"
                {
                    ops.extend(named_children(v));
                }
            }
        }
        // Model names as `CreateModel` spells them, to name a lower-case `model_name`.
        let mut spelt: BTreeMap<String, String> = BTreeMap::new();
        for op in &ops {
            if let Some(c) = call(*op, src).filter(|c| c.name == "CreateModel")
                && let Some(n) = arg(&c, "name", 0).and_then(|n| string(n, src))
            {
                spelt.insert(n.to_lowercase(), n);
            }
        }
        let symbol = |model: &str, field: &str| {
            let m = spelt.get(&model.to_lowercase()).cloned().unwrap_or_else(|| model.to_string());
            if field.is_empty() { m } else { format!("{m}.{field}") }
        };
        for op in ops {
            let Some(c) = call(op, src) else { continue };
            let model = arg(&c, if c.name == "CreateModel" { "name" } else { "model_name" }, 0)
                .and_then(|n| string(n, src))
                .unwrap_or_default();
            let lower = model.to_lowercase();
            match c.name.as_str() {
                "CreateModel" => {
                    if let Some(fields) = arg(&c, "fields", 1) {
                        for pair in named_children(fields) {
                            let items = named_children(pair);
                            if let (Some(n), Some(f)) = (items.first().and_then(|n| string(*n, src)), items.get(1))
                                && let Some(fc) = call(*f, src)
                            {
                                let decl = field_decl(&fc, pair, src, sets);
                                self.created.insert(format!("{lower}.{n}"), (symbol(&model, &n), decl.clone()));
                                self.migrated.insert(format!("{lower}.{n}"), decl);
                            }
                        }
                    }
                    if let Some(options) = c.keyword("options") {
                        for p in named_children(options).into_iter().filter(|p| kind_of(*p) == "pair") {
                            let key = field(p, "key").and_then(|k| string(k, src));
                            let Some(v) = field(p, "value") else { continue };
                            match key.as_deref() {
                                Some("unique_together") => {
                                    self.migrated_together.insert(lower.clone(), together(v, src));
                                }
                                Some("constraints") => {
                                    for item in named_children(v) {
                                        if let Some((name, fields)) = named_constraint(item, src) {
                                            self.constraint_fields.insert((lower.clone(), name), fields);
                                        }
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                }
                "AddField" | "AlterField" => {
                    let (Some(name), Some(fc)) = (
                        arg(&c, "name", 1).and_then(|n| string(n, src)),
                        arg(&c, "field", 2).and_then(|f| call(f, src)),
                    ) else {
                        continue;
                    };
                    let key = format!("{lower}.{name}");
                    let decl = field_decl(&fc, op, src, sets);
                    if c.name == "AddField" {
                        self.created.insert(key.clone(), (symbol(&model, &name), decl.clone()));
                    }
                    if c.name == "AlterField" {
                        match self.migrated.get(&key) {
                            Some(old) => {
                                let sym = symbol(&model, &name);
                                self.found.extend(field_findings(&sym, old, &decl));
                            }
                            None => self.open_alters.push((key.clone(), symbol(&model, &name), decl.clone())),
                        }
                    }
                    self.migrated.insert(key, decl);
                }
                "RenameField" => {
                    let (Some(from), Some(to)) = (
                        arg(&c, "old_name", 1).and_then(|n| string(n, src)),
                        arg(&c, "new_name", 2).and_then(|n| string(n, src)),
                    ) else {
                        continue;
                    };
                    let (from, to) = (format!("{lower}.{from}"), format!("{lower}.{to}"));
                    if let Some(decl) = self.migrated.remove(&from) {
                        self.migrated.insert(to.clone(), decl);
                    }
                    self.renamed.push((from, to));
                }
                "AddConstraint" => {
                    if let Some((name, fields)) = arg(&c, "constraint", 1).and_then(|n| named_constraint(n, src)) {
                        self.constraint_fields.insert((lower, name), fields);
                    }
                }
                "RemoveConstraint" => {
                    let name_node = arg(&c, "name", 1);
                    let shown =
                        format!("RemoveConstraint {}", name_node.map(|n| one_line(text(n, src))).unwrap_or_default());
                    let name = name_node.and_then(|n| string(n, src)).unwrap_or_default();
                    match self.constraint_fields.get(&(lower.clone(), name.clone())) {
                        Some(fields) => {
                            let sym = symbol(&model, pick_field(fields, |_| None).unwrap_or(""));
                            self.found.push((RuleId::PyDjangoConstraintRemoved, sym, shown, String::new(), line(op)));
                        }
                        None => self.open_removed.push((lower, symbol(&model, ""), name, shown, line(op))),
                    }
                }
                "AlterUniqueTogether" => {
                    let model = arg(&c, "name", 0).and_then(|n| string(n, src)).unwrap_or_default();
                    let lower = model.to_lowercase();
                    let Some(v) = arg(&c, "unique_together", 1) else { continue };
                    let now = together(v, src);
                    match self.migrated_together.get(&lower) {
                        Some(was) => {
                            let kinds = |f: &str| self.migrated.get(&format!("{lower}.{f}")).map(|d| d.kind.clone());
                            if let Some(weakened) = weakened_set(was, &now) {
                                let fields: Vec<String> = weakened.split(", ").map(str::to_string).collect();
                                let sym = symbol(&model, pick_field(&fields, kinds).unwrap_or(""));
                                self.found.push((
                                    RuleId::PyDjangoConstraintRemoved,
                                    sym,
                                    sets_shown(was),
                                    sets_shown(&now),
                                    line(op),
                                ));
                            }
                        }
                        None => self.open_together.push((lower.clone(), symbol(&model, ""), now.clone(), line(op))),
                    }
                    self.migrated_together.insert(lower, now);
                }
                _ => {}
            }
        }
    }
}

/// The first of `was`'s unique sets that no set of `now` still enforces: a set of `now`
/// over a subset of its fields enforces it (fewer columns: stricter), one over more
/// columns (a `deleted_at` added) does not: duplicates may differ in the added column.
pub(super) fn weakened_set<'s>(was: &'s BTreeSet<String>, now: &BTreeSet<String>) -> Option<&'s String> {
    let cols = |s: &str| -> BTreeSet<String> { s.split(", ").filter(|c| !c.is_empty()).map(str::to_string).collect() };
    was.iter().find(|w| {
        let w_cols = cols(w);
        !now.iter().any(|n| cols(n).is_subset(&w_cols))
    })
}

/// The field a constraint over `fields` is reported on: the first that holds a value of
/// the row's own (a name, a url), before one that scopes it (a foreign key) or marks a
/// soft delete; `kind` tells a field's type where known (`ForeignKey`).
pub(super) fn pick_field(fields: &[String], kind: impl Fn(&str) -> Option<String>) -> Option<&str> {
    let relational = |k: &str| matches!(k, "ForeignKey" | "OneToOneField" | "ManyToManyField");
    let rank = |f: &str| match kind(f) {
        _ if f == "deleted_at" => 3,
        Some(k) if relational(&k) => 2,
        Some(_) => 0,
        None => 1,
    };
    fields.iter().min_by_key(|f| rank(f)).map(String::as_str)
}

/// A constraint call's name and fields (`UniqueConstraint(fields=["a"], name="x")`).
fn named_constraint(n: Node, src: &str) -> Option<(String, Vec<String>)> {
    let c = call(n, src)?;
    let name = c.keyword("name").and_then(|v| string(v, src))?;
    Some((name, constraint_fields(&c, src)))
}

/// The fields a constraint or index call names (`fields=[...]`), in written order.
fn constraint_fields(c: &Call, src: &str) -> Vec<String> {
    c.keyword("fields")
        .map(|l| named_children(l).into_iter().filter_map(|s| string(s, src)).collect())
        .unwrap_or_default()
}

pub(super) fn sets_shown(s: &BTreeSet<String>) -> String {
    let inner: Vec<String> = s.iter().map(|t| format!("({t})")).collect();
    format!("unique_together={{{}}}", inner.join(", "))
}

/// An argument by keyword, else by position.
fn arg<'t>(c: &Call<'t>, name: &str, position: usize) -> Option<Node<'t>> {
    c.keyword(name).or_else(|| c.positional.get(position).copied())
}

/// Whether a call builds a model field (`models.CharField(...)`, `ForeignKey(...)`).
/// Whether a class-body statement assigns a Django field written with its module
/// (`title = models.CharField(...)`, `url = forms.URLField(...)`).
fn declares_django_field(stmt: Node, src: &str) -> bool {
    let Some((_, _, Some(v))) = py_decl::assignment(stmt, src) else { return false };
    let qualified = field(v, "function").is_some_and(|f| {
        let t = text(f, src);
        t.starts_with("models.") || t.starts_with("forms.")
    });
    qualified && call(v, src).is_some_and(|c| is_field(&c))
}

fn is_field(c: &Call) -> bool {
    c.name.ends_with("Field") || matches!(c.name.as_str(), "ForeignKey" | "OneToOneField" | "ManyToManyField")
}

fn cap(s: String) -> String {
    // A call written over several lines reads as one written on one.
    let s = s.replace("( ", "(").replace(", )", ")").replace(",)", ")");
    match s.char_indices().nth(MAX_RENDER) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s,
    }
}

/// `unique_together`'s sets: `(("a", "b"),)` or a single `("a", "b")`, each sorted.
fn together(value: Node, src: &str) -> BTreeSet<String> {
    let items = named_children(value);
    let nested = items.iter().any(|i| matches!(kind_of(*i), "tuple" | "list"));
    let one = |n: Node| -> String {
        let mut names: Vec<String> = named_children(n).into_iter().filter_map(|s| string(s, src)).collect();
        names.sort();
        names.join(", ")
    };
    if nested {
        items.into_iter().filter(|i| matches!(kind_of(*i), "tuple" | "list")).map(one).collect()
    } else if items.is_empty() || kind_of(value) == "call" {
        BTreeSet::new()
    } else {
        BTreeSet::from([one(value)])
    }
}

/// A choices entry: the stored value (a pair's first item, a class member's value).
fn member(n: Node, src: &str) -> String {
    // `("open", "Open")` in a list, `OPEN = "open", "Open"` in a choices class.
    let n = if matches!(kind_of(n), "tuple" | "expression_list") { n.named_child(0).unwrap_or(n) } else { n };
    compact(text(n, src)).replace('\'', "\"")
}

fn list_members(list: Node, src: &str) -> BTreeSet<String> {
    named_children(list).into_iter().filter(|n| kind_of(*n) != "comment").map(|n| member(n, src)).collect()
}

fn field_decl(c: &Call, stmt: Node, src: &str, sets: &ChoiceSets) -> FieldDecl {
    let mut f = FieldDecl {
        line: line(stmt),
        shown: cap(one_line(text(stmt, src))),
        kind: c.name.clone(),
        ..FieldDecl::default()
    };
    let flag = |k: &str| c.keyword(k).is_some_and(|v| is_true(v, src));
    (f.null, f.blank, f.unique) = (flag("null"), flag("blank"), flag("unique") || flag("primary_key"));
    f.optional = c.keyword("required").is_some_and(|v| py_decl::is_false(v, src));
    // A REST framework serializer field's `allow_null`/`allow_blank` (no model field
    // takes them): null or the empty string accepted.
    f.null |= flag("allow_null");
    f.blank |= flag("allow_blank");
    f.auto_now = flag("auto_now") || flag("auto_now_add");
    // `max_value`/`min_value`/`min_length` are a form field's (a model field has none).
    for k in ["max_length", "max_digits", "decimal_places", "max_value"] {
        if let Some(v) = c.keyword(k) {
            f.upper.insert(k, Bound { value: number(v, src), exclusive: false });
        }
    }
    for k in ["min_length", "min_value"] {
        if let Some(v) = c.keyword(k) {
            f.lower.insert(k, Bound { value: number(v, src), exclusive: false });
        }
    }
    if let Some(list) = c.keyword("validators") {
        for item in named_children(list) {
            let Some(v) = call(item, src) else {
                f.validators.insert(compact(text(item, src)));
                continue;
            };
            let bound = v.positional.first().map(|n| Bound { value: number(*n, src), exclusive: false });
            match (v.name.as_str(), bound) {
                ("MinValueValidator", Some(b)) => drop(f.lower.insert("MinValueValidator", b)),
                ("MinLengthValidator", Some(b)) => drop(f.lower.insert("MinLengthValidator", b)),
                ("MaxValueValidator", Some(b)) => drop(f.upper.insert("MaxValueValidator", b)),
                ("MaxLengthValidator", Some(b)) => drop(f.upper.insert("MaxLengthValidator", b)),
                _ => drop(f.validators.insert(compact(text(item, src)))),
            }
        }
    }
    if let Some(ch) = c.keyword("choices") {
        let members = match kind_of(ch) {
            "list" | "tuple" => list_members(ch, src),
            _ => {
                let key = compact(text(ch, src));
                let short = key.rsplit('.').take(2).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(".");
                sets.get(&key).or_else(|| sets.get(&short)).cloned().unwrap_or_default()
            }
        };
        // A name's members shown beside it: the name alone reads the same in both versions.
        let listed: Vec<&str> = members.iter().map(String::as_str).collect();
        f.choices_shown = match kind_of(ch) {
            "list" | "tuple" => cap(format!("choices={}", one_line(text(ch, src)))),
            _ => cap(format!("choices={} ({})", one_line(text(ch, src)), listed.join(", "))),
        };
        f.choices = Some(members);
    }
    f
}

/// Whether `new`'s choices are all numbers within `old`'s value bounds (an
/// `IntegerField(min_value=0, max_value=5)` become a `TypedChoiceField` over 0 to 5):
/// the closed set bounds the value as the old bounds did.
fn choices_within(old: &FieldDecl, new: &FieldDecl) -> bool {
    let Some(members) = new.choices.as_ref().filter(|c| !c.is_empty()) else { return false };
    let values: Vec<f64> = members.iter().filter_map(|m| m.parse().ok()).collect();
    if values.len() != members.len() {
        return false;
    }
    let (lo, hi) = (old.lower.get("min_value"), old.upper.get("max_value"));
    (lo.is_some() || hi.is_some())
        && old.upper.keys().chain(old.lower.keys()).all(|k| matches!(*k, "min_value" | "max_value"))
        && values.iter().all(|v| lo.is_none_or(|b| *v >= b.value) && hi.is_none_or(|b| *v <= b.value))
}

/// What `new` loosens of `old`, one field.
fn field_findings(symbol: &str, old: &FieldDecl, new: &FieldDecl) -> Vec<Found> {
    let mut out = Vec::new();
    let mut push = |rule, before: &str, after: &str| {
        out.push((rule, symbol.to_string(), before.to_string(), after.to_string(), new.line));
    };
    let (b, a) = (old.shown.as_str(), new.shown.as_str());
    let loosened = old.upper.iter().any(|(k, o)| bound_loosened(Some(*o), new.upper.get(k).copied(), false))
        || old.lower.iter().any(|(k, o)| bound_loosened(Some(*o), new.lower.get(k).copied(), true));
    if loosened && !choices_within(old, new) {
        push(RuleId::PyDjangoBoundLoosened, b, a);
    }
    if (new.null && !old.null) || (new.blank && !old.blank) || (new.optional && !old.optional) {
        push(RuleId::PyDjangoNullAllowed, b, a);
    }
    // `auto_now` dropped: the value was always the save time, now it is whatever the
    // caller gives.
    if (old.unique && !new.unique) || (old.auto_now && !new.auto_now) {
        push(RuleId::PyDjangoConstraintRemoved, b, a);
    }
    let added = new.validators.iter().any(|v| !old.validators.contains(v));
    if let (Some(gone), false) = (old.validators.iter().find(|v| !new.validators.contains(*v)), added) {
        push(RuleId::PyDjangoValidatorRemoved, gone, "");
    } else if STRICT_TYPES.contains(&old.kind.as_str()) && LAX_TYPES.contains(&new.kind.as_str()) && !added {
        // The type's own check is the validator taken away.
        push(RuleId::PyDjangoValidatorRemoved, &old.kind, &new.kind);
    }
    // A type change that stores more (`IntegerField` to `FloatField`) or checks less
    // (`ForeignKey` to `UUIDField`).
    if let Some(rule) = py_django_migrations::type_loosened(&old.kind, &new.kind) {
        push(rule, b, a);
    }
    match (&old.choices, &new.choices) {
        (Some(o), Some(n)) if !o.is_empty() && !n.is_empty() && !n.is_subset(o) => {
            push(RuleId::PyDjangoChoicesWidened, &old.choices_shown, &new.choices_shown)
        }
        (Some(o), None) if !o.is_empty() => push(RuleId::PyDjangoChoicesWidened, &old.choices_shown, ""),
        _ => {}
    }
    out
}

/// Whether a `Meta` constraint removed was a `UniqueConstraint` over one field that
/// now declares `unique=True` itself: the same uniqueness written on the field, or a
/// stronger one where the old was partial (`condition=`: unique among some rows, now
/// among all). One over expressions (`Lower("slug")`) names no field here, and is judged.
fn unique_moved_to_field(shown: &str, fields: &[String], now: Option<&FieldDecl>) -> bool {
    fields.len() == 1 && shown.contains("UniqueConstraint") && now.is_some_and(|f| f.unique)
}

fn compare(old: &Inventory, new: &Inventory, state: Option<&State>) -> Vec<RawFinding> {
    let mut found: Vec<Found> = Vec::new();
    for (symbol, a) in &new.fields {
        if let Some(b) = old.fields.get(symbol) {
            found.extend(field_findings(symbol, b, a));
        }
    }
    let kind_in =
        |inv: &Inventory, model: &str, f: &str| inv.fields.get(&format!("{model}.{f}")).map(|d| d.kind.clone());
    for (model, now) in &new.constraints {
        let Some(was) = old.constraints.get(model) else { continue };
        for (name, shown) in was {
            if !now.contains_key(name) {
                let fields = old.meta_fields.get(model).and_then(|m| m.get(name)).cloned().unwrap_or_default();
                if unique_moved_to_field(
                    shown,
                    &fields,
                    fields.first().and_then(|f| new.fields.get(&format!("{model}.{f}"))),
                ) {
                    continue;
                }
                let line =
                    new.fields.iter().find(|(k, _)| k.starts_with(&format!("{model}."))).map_or(1, |(_, f)| f.line);
                let sym = match pick_field(&fields, |f| kind_in(old, model, f)) {
                    Some(f) => format!("{model}.{f}"),
                    None => model.clone(),
                };
                found.push((RuleId::PyDjangoConstraintRemoved, sym, shown.clone(), String::new(), line));
            }
        }
    }
    for (model, (was, shown)) in &old.together {
        let Some(model_line) =
            new.fields.iter().find(|(k, _)| k.starts_with(&format!("{model}."))).map(|(_, f)| f.line)
        else {
            continue;
        };
        let (now, now_shown) = new.together.get(model).map_or((BTreeSet::new(), ""), |(s, t)| (s.clone(), t.as_str()));
        if let Some(weakened) = weakened_set(was, &now) {
            let fields: Vec<String> = weakened.split(", ").map(str::to_string).collect();
            let sym = match pick_field(&fields, |f| kind_in(old, model, f)) {
                Some(f) => format!("{model}.{f}"),
                None => model.clone(),
            };
            // On the new `unique_together` where there is one: the line that changed.
            let line = new.together_line.get(model).copied().unwrap_or(model_line);
            found.push((RuleId::PyDjangoConstraintRemoved, sym, shown.clone(), now_shown.to_string(), line));
        }
    }
    // A migration: its own operations' findings the old version did not have, and its
    // `AlterField`s judged against the old version's fields.
    let before: BTreeSet<(RuleId, &str, &str, &str)> =
        old.found.iter().map(|(r, s, b, a, _)| (*r, s.as_str(), b.as_str(), a.as_str())).collect();
    found.extend(
        new.found.iter().filter(|(r, s, b, a, _)| !before.contains(&(*r, s.as_str(), b.as_str(), a.as_str()))).cloned(),
    );
    for (key, symbol, decl) in &new.open_alters {
        if let Some(was) = old.migrated.get(key).or_else(|| state.and_then(|s| s.fields.get(key))) {
            found.extend(field_findings(symbol, was, decl));
        }
    }
    found.extend(py_django_migrations::judge_open(old, new, state));
    // A field the migration creates, created laxer than the old version of the same
    // migration created it (`AddField(null=True)` where it said NOT NULL).
    for (key, (symbol, decl)) in &new.created {
        if let Some((_, was)) = old.created.get(key) {
            found.extend(field_findings(symbol, was, decl));
        }
    }
    let mut out: Vec<RawFinding> = found
        .into_iter()
        .map(|(rule, symbol, before, after, line)| RawFinding { line, rule, symbol, before, after, in_test: false })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(before: &str, after: &str) -> Vec<(RuleId, String)> {
        detect(before, after).unwrap().into_iter().map(|f| (f.rule, f.symbol)).collect()
    }

    const HEAD: &str =
        "from django.db import models\nfrom django.core.validators import MaxValueValidator, RegexValidator\n\n";

    #[test]
    fn each_field_loosening_is_found() {
        let before = format!(
            "{HEAD}STATUS = [(\"open\", \"Open\"), (\"closed\", \"Closed\")]\n\nclass Ticket(models.Model):\n    title = models.CharField(max_length=64, unique=True)\n    note = models.TextField()\n    score = models.IntegerField(validators=[MaxValueValidator(10)])\n    code = models.CharField(max_length=8, validators=[RegexValidator(r\"^[A-Z]+$\")])\n    status = models.CharField(max_length=8, choices=STATUS)\n\n    class Meta:\n        constraints = [models.UniqueConstraint(fields=[\"title\", \"code\"], name=\"uniq_title_code\")]\n"
        );
        let after = format!(
            "{HEAD}STATUS = [(\"open\", \"Open\"), (\"closed\", \"Closed\"), (\"held\", \"Held\")]\n\nclass Ticket(models.Model):\n    title = models.CharField(max_length=255)\n    note = models.TextField(null=True, blank=True)\n    score = models.IntegerField(validators=[MaxValueValidator(100)])\n    code = models.CharField(max_length=8)\n    status = models.CharField(max_length=8, choices=STATUS)\n\n    class Meta:\n        constraints = []\n"
        );
        let got = found(&before, &after);
        let want = [
            (RuleId::PyDjangoBoundLoosened, "Ticket.score"),
            (RuleId::PyDjangoBoundLoosened, "Ticket.title"),
            (RuleId::PyDjangoChoicesWidened, "Ticket.status"),
            // The `Meta` constraint over (title, code), named by its first field.
            (RuleId::PyDjangoConstraintRemoved, "Ticket.title"),
            (RuleId::PyDjangoConstraintRemoved, "Ticket.title"),
            (RuleId::PyDjangoNullAllowed, "Ticket.note"),
            (RuleId::PyDjangoValidatorRemoved, "Ticket.code"),
        ];
        crate::widen::testing::assert_found(&got, &want);
    }

    #[test]
    fn a_unique_constraint_moved_onto_its_field_is_no_loosening() {
        let before = format!(
            "{HEAD}class Kind(models.Model):\n    slug = models.SlugField(max_length=100)\n    code = models.CharField(max_length=8)\n\n    class Meta:\n        constraints = [\n            models.UniqueConstraint(fields=(\"slug\",), name=\"uniq_slug\"),\n            models.UniqueConstraint(fields=(\"code\",), name=\"uniq_live_code\", condition=Q(live=True)),\n        ]\n"
        );
        let after = format!(
            "{HEAD}class Kind(models.Model):\n    slug = models.SlugField(max_length=100, unique=True)\n    code = models.CharField(max_length=8, unique=True)\n\n    class Meta:\n        constraints = []\n"
        );
        assert_eq!(found(&before, &after), []);
        // The field not made unique: the constraint is gone.
        let after = format!(
            "{HEAD}class Kind(models.Model):\n    slug = models.SlugField(max_length=100)\n    code = models.CharField(max_length=8, unique=True)\n\n    class Meta:\n        constraints = []\n"
        );
        assert_eq!(found(&before, &after), [(RuleId::PyDjangoConstraintRemoved, "Kind.slug".to_string())]);
    }

    #[test]
    fn import_forms_and_serializers_of_other_modules_are_read() {
        let head = "from django import forms\nfrom rest_framework import serializers\nfrom .base import ImportForm, CSVChoiceField, NestedOwnerSerializer\n\n";
        let before = format!(
            "{head}class RouteImportForm(ImportForm):\n    kind = CSVChoiceField(choices=KINDS)\n    note = CSVChoiceField(choices=KINDS, required=False)\n\nclass RouteSerializer(serializers.ModelSerializer):\n    owner = NestedOwnerSerializer()\n    email = serializers.EmailField(allow_null=False)\n    tag = serializers.CharField()\n    seen = serializers.BooleanField(required=False)\n"
        );
        let after = format!(
            "{head}class RouteImportForm(ImportForm):\n    kind = CSVChoiceField(choices=KINDS, required=False)\n    note = CSVChoiceField(choices=KINDS)\n\nclass RouteSerializer(serializers.ModelSerializer):\n    owner = NestedOwnerSerializer(required=False, allow_null=True)\n    email = serializers.EmailField(allow_blank=True)\n    tag = serializers.CharField(help_text=\"a tag\")\n    seen = serializers.BooleanField(required=False, default=False)\n"
        );
        let want = [
            (RuleId::PyDjangoNullAllowed, "RouteImportForm.kind"),
            (RuleId::PyDjangoNullAllowed, "RouteSerializer.email"),
            (RuleId::PyDjangoNullAllowed, "RouteSerializer.owner"),
        ];
        crate::widen::testing::assert_found(&found(&before, &after), &want);
    }

    #[test]
    fn an_added_migration_is_judged_on_its_own_operations() {
        let after = "from django.db import migrations, models\n\nclass Migration(migrations.Migration):\n    operations = [\n        migrations.AddField(model_name=\"user\", name=\"bio\", field=models.TextField(null=True)),\n        migrations.AlterField(model_name=\"user\", name=\"email\", field=models.EmailField(max_length=512)),\n        migrations.RemoveConstraint(model_name=\"user\", name=\"uniq_email\"),\n    ]\n";
        assert!(added_may_fire(after));
        assert_eq!(found("", after), [(RuleId::PyDjangoConstraintRemoved, "user".to_string())]);
    }

    #[test]
    fn alter_field_is_judged_against_the_same_files_earlier_definition() {
        let before = "from django.db import migrations, models\n\nclass Migration(migrations.Migration):\n    operations = [\n        migrations.CreateModel(name=\"Shop\", fields=[(\"name\", models.CharField(max_length=64))]),\n    ]\n";
        let after = before.replace(
            "    ]\n",
            "        migrations.AlterField(model_name=\"shop\", name=\"name\", field=models.CharField(max_length=128, null=True)),\n    ]\n",
        );
        let got = found(before, &after);
        assert_eq!(
            got,
            [
                (RuleId::PyDjangoBoundLoosened, "Shop.name".to_string()),
                (RuleId::PyDjangoNullAllowed, "Shop.name".to_string())
            ]
        );
    }
}
