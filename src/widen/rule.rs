//! Rule and family identity: `RuleId` and `Family`, closed enums that serialise to the
//! kebab-case ids the output has always used (`rust-integer-widened`,
//! `check-removed`). A finding carries a `RuleId`, so looking its rule up is an index,
//! not a search by string, and a misspelt id does not compile.
//!
//! Adding a rule: one line in the `rule_ids!` list below (in its language's group),
//! its `RuleDef` beside the code that emits it, and its fixtures under
//! `fixtures/<rule-id>/`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::RuleDef;

macro_rules! rule_ids {
    ($($(#[$doc:meta])* $variant:ident => $id:literal,)*) => {
        /// A rule of the catalogue, by identity.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum RuleId {
            $($(#[$doc])* $variant,)*
        }

        impl RuleId {
            /// Every rule id, in declaration order.
            pub(crate) const ALL: &'static [RuleId] = &[$(RuleId::$variant,)*];

            /// The stable kebab-case id, as the output and `premerge.toml` spell it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $id,)*
                }
            }
        }
    };
}

rule_ids! {
    // Rust
    RustAssertRemoved => "rust-assert-removed",
    RustCheckedArithmeticRemoved => "rust-checked-arithmetic-removed",
    RustDenyUnknownFieldsRemoved => "rust-deny-unknown-fields-removed",
    RustEnumToString => "rust-enum-to-string",
    RustEnumVariantAdded => "rust-enum-variant-added",
    RustFieldMadePublic => "rust-field-made-public",
    RustFnMadePublic => "rust-fn-made-public",
    RustForbidUnsafeRemoved => "rust-forbid-unsafe-removed",
    RustGenericBoundRemoved => "rust-generic-bound-removed",
    RustGuardRemoved => "rust-guard-removed",
    RustIntegerWidened => "rust-integer-widened",
    RustNonExhaustiveRemoved => "rust-non-exhaustive-removed",
    RustNewtypeUncheckedConstructor => "rust-newtype-unchecked-constructor",
    RustNonzeroDropped => "rust-nonzero-dropped",
    RustOptionWidened => "rust-option-widened",
    RustStaticMadeMut => "rust-static-made-mut",
    RustTypeErased => "rust-type-erased",
    RustUnwrapRemoved => "rust-unwrap-removed",
    RustUnsafeIntroduced => "rust-unsafe-introduced",
    // Rust: serde defaults and `validator` attributes
    RustSerdeDefaultAdded => "rust-serde-default-added",
    RustValidateBoundLoosened => "rust-validate-bound-loosened",
    RustValidateCheckRemoved => "rust-validate-check-removed",
    // Rust: diesel `table!` schema declarations
    RustDieselNullableAdded => "rust-diesel-nullable-added",
    RustDieselMaxLengthRaised => "rust-diesel-max-length-raised",
    // TypeScript and JavaScript
    TsEnumErased => "ts-enum-erased",
    TsInvariantRemoved => "ts-invariant-removed",
    TsLiteralUnionErased => "ts-literal-union-erased",
    TsNullableWidened => "ts-nullable-widened",
    TsPrivateMadePublic => "ts-private-made-public",
    TsPropertyMadeOptional => "ts-property-made-optional",
    TsReadonlyRemoved => "ts-readonly-removed",
    TsThrowGuardRemoved => "ts-throw-guard-removed",
    TsTypeErased => "ts-type-erased",
    // TypeScript and JavaScript: zod schemas
    TsZodBoundLoosened => "ts-zod-bound-loosened",
    TsZodCoerceAdded => "ts-zod-coerce-added",
    TsZodEnumWidened => "ts-zod-enum-widened",
    TsZodFormatRemoved => "ts-zod-format-removed",
    TsZodOptionalAdded => "ts-zod-optional-added",
    TsZodRefinementRemoved => "ts-zod-refinement-removed",
    TsZodStrictRemoved => "ts-zod-strict-removed",
    // TypeScript and JavaScript: class-validator decorators
    TsClassValidatorBoundLoosened => "ts-class-validator-bound-loosened",
    TsClassValidatorEnumWidened => "ts-class-validator-enum-widened",
    TsClassValidatorFormatRemoved => "ts-class-validator-format-removed",
    TsClassValidatorNotEmptyRemoved => "ts-class-validator-not-empty-removed",
    TsClassValidatorOptionalAdded => "ts-class-validator-optional-added",
    // Python
    PyAssertRemoved => "py-assert-removed",
    PyConstrainedTypeErased => "py-constrained-type-erased",
    PyContainerWidened => "py-container-widened",
    PyFinalRemoved => "py-final-removed",
    PyFrozenDataclassUnfrozen => "py-frozen-dataclass-unfrozen",
    PyLiteralErased => "py-literal-erased",
    PyOptionalWidened => "py-optional-widened",
    PyRaiseGuardRemoved => "py-raise-guard-removed",
    PyTypeErased => "py-type-erased",
    // Python: pydantic models
    PyPydanticBoundLoosened => "py-pydantic-bound-loosened",
    PyPydanticExtraAllowed => "py-pydantic-extra-allowed",
    PyPydanticFrozenRemoved => "py-pydantic-frozen-removed",
    PyPydanticOptionalAdded => "py-pydantic-optional-added",
    PyPydanticValidatorRemoved => "py-pydantic-validator-removed",
    // Python: Django models and migrations
    PyDjangoBoundLoosened => "py-django-bound-loosened",
    PyDjangoChoicesWidened => "py-django-choices-widened",
    PyDjangoConstraintRemoved => "py-django-constraint-removed",
    PyDjangoNullAllowed => "py-django-null-allowed",
    PyDjangoValidatorRemoved => "py-django-validator-removed",
    // Python: SQLAlchemy models and alembic revisions
    PySqlalchemyConstraintRemoved => "py-sqlalchemy-constraint-removed",
    PySqlalchemyLengthWidened => "py-sqlalchemy-length-widened",
    PySqlalchemyNullableAllowed => "py-sqlalchemy-nullable-allowed",
    PySqlalchemyNumberWidened => "py-sqlalchemy-number-widened",
    // Python: marshmallow schemas
    PyMarshmallowOptionalAdded => "py-marshmallow-optional-added",
    PyMarshmallowValidatorRemoved => "py-marshmallow-validator-removed",
    // Go
    GoConstMadeVar => "go-const-made-var",
    GoEnumErased => "go-enum-erased",
    GoErrorGuardRemoved => "go-error-guard-removed",
    GoIntWidened => "go-int-widened",
    GoPanicRemoved => "go-panic-removed",
    GoPointerWidened => "go-pointer-widened",
    GoTypeErased => "go-type-erased",
    // Go: validation struct tags
    GoTagBoundLoosened => "go-tag-bound-loosened",
    GoTagCheckRemoved => "go-tag-check-removed",
    GoTagOneofWidened => "go-tag-oneof-widened",
    GoTagRequiredRemoved => "go-tag-required-removed",
    // SQL
    SqlCheckRemoved => "sql-check-removed",
    SqlEnumToText => "sql-enum-to-text",
    SqlForeignKeyDropped => "sql-foreign-key-dropped",
    SqlNotNullDropped => "sql-not-null-dropped",
    SqlPrimaryKeyDropped => "sql-primary-key-dropped",
    SqlUniqueDropped => "sql-unique-dropped",
    SqlVarcharWidened => "sql-varchar-widened",
    SqlNumericWidened => "sql-numeric-widened",
    SqlTypeToText => "sql-type-to-text",
    SqlUniqueIndexDropped => "sql-unique-index-dropped",
    SqlConstraintDropped => "sql-constraint-dropped",
    // Prisma schemas
    PrismaEnumValueAdded => "prisma-enum-value-added",
    PrismaFieldMadeOptional => "prisma-field-made-optional",
    PrismaIdChanged => "prisma-id-changed",
    PrismaUniqueRemoved => "prisma-unique-removed",
    PrismaVarcharWidened => "prisma-varchar-widened",
    PrismaNumberWidened => "prisma-number-widened",
    PrismaRelationRemoved => "prisma-relation-removed",
    // JSON Schema, OpenAPI
    SchemaAdditionalPropertiesAllowed => "schema-additional-properties-allowed",
    SchemaConstDropped => "schema-const-dropped",
    SchemaEnumWidened => "schema-enum-widened",
    SchemaItemCountLoosened => "schema-item-count-loosened",
    SchemaLengthLoosened => "schema-length-loosened",
    SchemaMultipleOfRemoved => "schema-multiple-of-removed",
    SchemaNullableAdded => "schema-nullable-added",
    SchemaPatternRemoved => "schema-pattern-removed",
    SchemaRangeLoosened => "schema-range-loosened",
    SchemaRequiredRemoved => "schema-required-removed",
    SchemaTypeWidened => "schema-type-widened",
    SchemaAlternativeAdded => "schema-alternative-added",
    SchemaAllOfMemberRemoved => "schema-all-of-member-removed",
    SchemaContainsLoosened => "schema-contains-loosened",
    SchemaDependencyRemoved => "schema-dependency-removed",
    SchemaConditionalRemoved => "schema-conditional-removed",
    SchemaStructureRemoved => "schema-structure-removed",
    SchemaSecurityRemoved => "schema-security-removed",
    // Shapes from the enriched sample (issue #30 part 2)
    TsEarlyReturnRemoved => "ts-early-return-removed",
    GoEarlyReturnRemoved => "go-early-return-removed",
    PyEarlyReturnRemoved => "py-early-return-removed",
    TsGenericConstraintLoosened => "ts-generic-constraint-loosened",
    TsLiteralUnionWidened => "ts-literal-union-widened",
    PyLiteralWidened => "py-literal-widened",
    PyUnionWidened => "py-union-widened",
    // TypeScript and JavaScript: yup schemas
    TsYupBoundLoosened => "ts-yup-bound-loosened",
    TsYupCheckRemoved => "ts-yup-check-removed",
    TsYupEnumWidened => "ts-yup-enum-widened",
    TsYupOptionalAdded => "ts-yup-optional-added",
    TsYupStrictRemoved => "ts-yup-strict-removed",
    // TypeScript and JavaScript: valibot schemas
    TsValibotBoundLoosened => "ts-valibot-bound-loosened",
    TsValibotCheckRemoved => "ts-valibot-check-removed",
    TsValibotEnumWidened => "ts-valibot-enum-widened",
    TsValibotOptionalAdded => "ts-valibot-optional-added",
    TsValibotStrictRemoved => "ts-valibot-strict-removed",
    // Go: ozzo-validation rules
    GoOzzoBoundLoosened => "go-ozzo-bound-loosened",
    GoOzzoInWidened => "go-ozzo-in-widened",
    GoOzzoRequiredRemoved => "go-ozzo-required-removed",
    GoOzzoRuleRemoved => "go-ozzo-rule-removed",
    // Python: attrs validators
    PyAttrsBoundLoosened => "py-attrs-bound-loosened",
    PyAttrsInstanceOfWidened => "py-attrs-instance-of-widened",
    PyAttrsOptionalAdded => "py-attrs-optional-added",
    PyAttrsValidatorRemoved => "py-attrs-validator-removed",
}

impl RuleId {
    /// The rule with this kebab-case id.
    pub fn parse(id: &str) -> Option<RuleId> {
        // Looked up once per finding read back (the scan cache, the moved-check pass): a
        // table, not a walk over every rule.
        static BY_ID: std::sync::LazyLock<foldhash::HashMap<&'static str, RuleId>> =
            std::sync::LazyLock::new(|| RuleId::ALL.iter().map(|r| (r.as_str(), *r)).collect());
        BY_ID.get(id).copied()
    }

    /// The rule's definition in the catalogue.
    pub fn def(self) -> &'static RuleDef {
        super::catalogue::def(self)
    }

    /// The rule's family.
    pub fn family(self) -> Family {
        self.def().family
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Ordered by id, byte-wise: the order findings have always been sorted in.
impl Ord for RuleId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().as_bytes().cmp(other.as_str().as_bytes())
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for RuleId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read back by its id (a stored inventory); an id of no rule is an error.
impl<'de> Deserialize<'de> for RuleId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RuleId, D::Error> {
        let id = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        RuleId::parse(&id).ok_or_else(|| serde::de::Error::custom(format!("unknown rule id `{id}`")))
    }
}

/// What kind of invariant a rule's constraint kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// A value that had to be present may now be absent.
    Optionality,
    /// A numeric range, length or count grew.
    NumericRange,
    /// A closed set of values became open.
    EnumErasure,
    /// A precise type became a catch-all.
    TypeErasure,
    /// Something private, read-only or closed became public, writable or open.
    MutabilityExposure,
    /// A runtime check was removed.
    CheckRemoved,
    /// Unchecked code was introduced or allowed.
    Unsafe,
}

impl Family {
    /// Every family, in the catalogue's order.
    #[cfg(test)]
    pub(crate) const ALL: &'static [Family] = &[
        Family::Optionality,
        Family::NumericRange,
        Family::EnumErasure,
        Family::TypeErasure,
        Family::MutabilityExposure,
        Family::CheckRemoved,
        Family::Unsafe,
    ];

    /// The kebab-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Family::Optionality => "optionality",
            Family::NumericRange => "numeric-range",
            Family::EnumErasure => "enum-erasure",
            Family::TypeErasure => "type-erasure",
            Family::MutabilityExposure => "mutability-exposure",
            Family::CheckRemoved => "check-removed",
            Family::Unsafe => "unsafe",
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_serialise_as_kebab_case() {
        for &r in RuleId::ALL {
            assert_eq!(RuleId::parse(r.as_str()), Some(r));
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{}\"", r.as_str()));
        }
        for &f in Family::ALL {
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{}\"", f.as_str()));
        }
        assert_eq!(RuleId::parse("rust-no-such-rule"), None);
    }
}
