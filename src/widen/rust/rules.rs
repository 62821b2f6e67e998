//! The Rust rules, as data.

use super::super::{Family, Language, RuleDef, RuleId, Severity};

const RUST: &[Language] = &[Language::Rust];

pub(crate) const OPTION_WIDENED: RuleId = RuleId::RustOptionWidened;
pub(crate) const INTEGER_WIDENED: RuleId = RuleId::RustIntegerWidened;
pub(crate) const NONZERO_DROPPED: RuleId = RuleId::RustNonzeroDropped;
pub(crate) const ENUM_TO_STRING: RuleId = RuleId::RustEnumToString;
pub(crate) const TYPE_ERASED: RuleId = RuleId::RustTypeErased;
pub(crate) const BOUND_REMOVED: RuleId = RuleId::RustGenericBoundRemoved;
pub(crate) const ASSERT_REMOVED: RuleId = RuleId::RustAssertRemoved;
pub(crate) const GUARD_REMOVED: RuleId = RuleId::RustGuardRemoved;
pub(crate) const DENY_UNKNOWN_FIELDS_REMOVED: RuleId = RuleId::RustDenyUnknownFieldsRemoved;
pub(crate) const NON_EXHAUSTIVE_REMOVED: RuleId = RuleId::RustNonExhaustiveRemoved;
pub(crate) const FIELD_MADE_PUBLIC: RuleId = RuleId::RustFieldMadePublic;
pub(crate) const FN_MADE_PUBLIC: RuleId = RuleId::RustFnMadePublic;
pub(crate) const STATIC_MADE_MUT: RuleId = RuleId::RustStaticMadeMut;
pub(crate) const UNSAFE_INTRODUCED: RuleId = RuleId::RustUnsafeIntroduced;
pub(crate) const FORBID_UNSAFE_REMOVED: RuleId = RuleId::RustForbidUnsafeRemoved;
pub(crate) const ENUM_VARIANT_ADDED: RuleId = RuleId::RustEnumVariantAdded;

pub(crate) const RULES: &[RuleDef] = &[
    RuleDef {
        id: OPTION_WIDENED,
        languages: RUST,
        family: Family::Optionality,
        description: "A field, parameter, return or alias type `T` became `Option<T>`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; the value may now be absent",
        invariant: "The value was always present; code written since may assume it still is.",
    },
    RuleDef {
        id: INTEGER_WIDENED,
        languages: RUST,
        family: Family::NumericRange,
        description: "An integer type became one whose range strictly contains the old one (`u8` to `u64`, `u32` to `i64`).",
        severity: Severity::Medium,
        message: "{symbol}: `{before}` became `{after}`; values outside the old range are now representable",
        invariant: "The value fitted the old type's range, which bounded sizes, loops and allocations.",
    },
    RuleDef {
        id: NONZERO_DROPPED,
        languages: RUST,
        family: Family::NumericRange,
        description: "A `NonZero*` type (`NonZeroU32`, `NonZero<u32>`) became a plain integer.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; zero is now a valid value",
        invariant: "The value was never zero (safe divisor, non-empty count, valid id).",
    },
    RuleDef {
        id: ENUM_TO_STRING,
        languages: RUST,
        family: Family::EnumErasure,
        description: "A value typed by an enum declared in the file became a `String` or `&str`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; any string is now accepted",
        invariant: "The value was one of the enum's variants, checked by the compiler in every match.",
    },
    RuleDef {
        id: TYPE_ERASED,
        languages: RUST,
        family: Family::TypeErasure,
        description: "A concrete type became `serde_json::Value` or a `dyn Any`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; the shape is no longer checked by the compiler",
        invariant: "The value had a known, compiler-checked shape.",
    },
    RuleDef {
        id: BOUND_REMOVED,
        languages: RUST,
        family: Family::TypeErasure,
        description: "A trait bound on a generic parameter was removed (`T: Ord` to `T`), inline or in a `where` clause.",
        severity: Severity::Medium,
        message: "{symbol}: bound `{before}` became `{after}`",
        invariant: "Every type argument implemented the removed trait, which the item's callers and body could rely on.",
    },
    RuleDef {
        id: ASSERT_REMOVED,
        languages: RUST,
        family: Family::CheckRemoved,
        description: "An `assert!`, `assert_eq!`, `assert_ne!` or `debug_assert*!` was removed from a function that still exists.",
        severity: Severity::Medium,
        message: "{symbol}: the check `{before}` was removed",
        invariant: "The asserted condition held whenever the function ran past the check.",
    },
    RuleDef {
        id: GUARD_REMOVED,
        languages: RUST,
        family: Family::CheckRemoved,
        description: "An `ensure!` or an `if` guard that bails, panics or returns `Err` was removed from a function that still exists.",
        severity: Severity::Medium,
        message: "{symbol}: the guard `{before}` was removed",
        invariant: "Inputs failing the guard were rejected before the rest of the function ran.",
    },
    RuleDef {
        id: DENY_UNKNOWN_FIELDS_REMOVED,
        languages: RUST,
        family: Family::MutabilityExposure,
        description: "`#[serde(deny_unknown_fields)]` was removed from a type.",
        severity: Severity::Medium,
        message: "{symbol}: `{before}` was removed; unknown fields are now silently accepted",
        invariant: "Input with unexpected fields (typos, wrong versions) was rejected instead of half-read.",
    },
    RuleDef {
        id: NON_EXHAUSTIVE_REMOVED,
        languages: RUST,
        family: Family::MutabilityExposure,
        description: "`#[non_exhaustive]` was removed from a type or variant.",
        severity: Severity::Low,
        message: "{symbol}: `{before}` was removed; other crates may now match or build it exhaustively",
        invariant: "Other crates could not construct or exhaustively match the type, so it could grow safely.",
    },
    RuleDef {
        id: FIELD_MADE_PUBLIC,
        languages: RUST,
        family: Family::MutabilityExposure,
        description: "A struct field became more visible (private to `pub(crate)`, `pub(crate)` to `pub`).",
        severity: Severity::Medium,
        message: "{symbol}: `{before}` became `{after}`; code outside the module can now set it directly",
        invariant: "Only the type's own module wrote the field, so its constructors and setters upheld its invariants.",
    },
    RuleDef {
        id: FN_MADE_PUBLIC,
        languages: RUST,
        family: Family::MutabilityExposure,
        description: "A function or method became more visible (private to `pub(crate)`, `pub(crate)` to `pub`).",
        severity: Severity::Low,
        message: "{symbol}: `{before}` became `{after}`; code outside its old reach can now call it",
        invariant: "Only the code it was visible to called the function, so what those callers checked before the call was its whole contract.",
    },
    RuleDef {
        id: STATIC_MADE_MUT,
        languages: RUST,
        family: Family::MutabilityExposure,
        description: "A `static` became `static mut`.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`",
        invariant: "The value never changed after initialisation, so reading it needed no synchronisation.",
    },
    RuleDef {
        id: UNSAFE_INTRODUCED,
        languages: RUST,
        family: Family::Unsafe,
        description: "An `unsafe` block, function or impl appeared in a function, type or module that had none.",
        severity: Severity::High,
        message: "{symbol}: `unsafe` introduced: `{after}`",
        invariant: "The code was memory-safe by construction, checked by the compiler.",
    },
    RuleDef {
        id: FORBID_UNSAFE_REMOVED,
        languages: RUST,
        family: Family::Unsafe,
        description: "The crate-level `#![forbid(unsafe_code)]` was removed or weakened.",
        severity: Severity::High,
        message: "{symbol}: `{before}` became `{after}`; the crate may now contain `unsafe` code",
        invariant: "No `unsafe` code could appear anywhere in the crate.",
    },
    RuleDef {
        id: ENUM_VARIANT_ADDED,
        languages: RUST,
        family: Family::EnumErasure,
        description: "A public enum without `#[non_exhaustive]` gained a variant.",
        severity: Severity::Medium,
        message: "{symbol}: `{before}` became `{after}`; exhaustive matches elsewhere were written for fewer values",
        invariant: "The enum held one of the listed variants, and every exhaustive match handled each of them.",
    },
    super::checked::RULE,
    super::unwrap::RULE,
    super::newtype::RULE,
];
