//! Which column type changes loosen what a column accepts: a character bound raised
//! or removed, an enum opened to free text, a number type made wider, and any other
//! known type made text.

use sqlparser::ast::{CharacterLength, DataType, ExactNumberInfo};

use super::sql_model::object_key;

/// How a type change loosens a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TypeLoosening {
    /// `VARCHAR(n)` to a larger n, unbounded, or text.
    CharacterBound,
    /// An enum type to free text.
    EnumToText,
    /// A number type that admits more values (`INT` to `BIGINT`, `NUMERIC(10,2)` to
    /// `NUMERIC(12,2)`, an integer to a fraction-carrying type).
    Numeric,
    /// A known non-character type (number, date, boolean, uuid, json...) to text.
    ToText,
}

/// Which loosening, if any, a column type change from `old` to `new` is.
pub(super) fn type_loosening(
    old: &DataType,
    new: &DataType,
    is_enum: impl Fn(String) -> bool,
) -> Option<TypeLoosening> {
    let was_enum = match old {
        DataType::Enum(..) => true,
        DataType::Custom(name, _) => is_enum(object_key(name)),
        _ => false,
    };
    if was_enum {
        return text_bound(new).map(|_| TypeLoosening::EnumToText);
    }
    if let Some(old_bound) = text_bound(old) {
        let old_bound = old_bound?;
        return match text_bound(new)? {
            None => Some(TypeLoosening::CharacterBound),
            Some(n) if n > old_bound => Some(TypeLoosening::CharacterBound),
            Some(_) => None,
        };
    }
    if let (Some(o), Some(n)) = (number(old), number(new)) {
        return number_widened(o, n).then_some(TypeLoosening::Numeric);
    }
    // A type the model does not know (a domain, a composite) may itself be text.
    if matches!(old, DataType::Custom(..) | DataType::Unspecified) || !known(old) {
        return None;
    }
    text_bound(new).map(|_| TypeLoosening::ToText)
}

/// For a character type: `Some(Some(n))` when bounded by n, `Some(None)` when unbounded;
/// `None` for any other type.
pub(super) fn text_bound(t: &DataType) -> Option<Option<u64>> {
    let len = |l: &Option<CharacterLength>| match l {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length),
        _ => None,
    };
    Some(match t {
        DataType::Varchar(l) | DataType::CharacterVarying(l) | DataType::CharVarying(l) | DataType::Nvarchar(l) => {
            len(l)
        }
        // CHAR without a length is CHAR(1) in the standard.
        DataType::Char(l) | DataType::Character(l) => len(l).or(Some(1)),
        DataType::String(n) => *n,
        DataType::Text | DataType::TinyText | DataType::MediumText | DataType::LongText | DataType::Clob(_) => None,
        DataType::Custom(name, _) if object_key(name) == "citext" => None,
        _ => return None,
    })
}

/// Types whose values text admits strictly more of: their change to text is a loosening.
fn known(t: &DataType) -> bool {
    number(t).is_some()
        || matches!(
            t,
            DataType::Boolean
                | DataType::Bool
                | DataType::Uuid
                | DataType::Date
                | DataType::Time(..)
                | DataType::Datetime(..)
                | DataType::Timestamp(..)
                | DataType::Interval
                | DataType::JSON
                | DataType::JSONB
                | DataType::Bytea
        )
}

/// A number type: an integer of a byte width, an exact decimal, or a float of a width.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Number {
    Integer(u8),
    /// Precision and scale; `None` precision is unbounded (PostgreSQL's bare NUMERIC).
    Exact(Option<u64>, u64),
    Float(u8),
}

fn number(t: &DataType) -> Option<Number> {
    use DataType as D;
    let exact = |i: &ExactNumberInfo| match i {
        ExactNumberInfo::None => Number::Exact(None, 0),
        ExactNumberInfo::Precision(p) => Number::Exact(Some(*p), 0),
        ExactNumberInfo::PrecisionAndScale(p, s) => Number::Exact(Some(*p), *s),
    };
    Some(match t {
        D::TinyInt(_) | D::TinyIntUnsigned(_) => Number::Integer(1),
        D::Int2(_) | D::Int2Unsigned(_) | D::SmallInt(_) | D::SmallIntUnsigned(_) | D::Int16 => Number::Integer(2),
        D::MediumInt(_) | D::MediumIntUnsigned(_) => Number::Integer(3),
        D::Int(_)
        | D::Int4(_)
        | D::Integer(_)
        | D::IntUnsigned(_)
        | D::Int4Unsigned(_)
        | D::IntegerUnsigned(_)
        | D::Int32 => Number::Integer(4),
        D::Int8(_) | D::BigInt(_) | D::BigIntUnsigned(_) | D::Int8Unsigned(_) | D::Int64 => Number::Integer(8),
        D::Int128 => Number::Integer(16),
        D::Int256 => Number::Integer(32),
        D::Numeric(i) | D::Decimal(i) | D::Dec(i) => exact(i),
        D::Real | D::Float4 | D::Float32 => Number::Float(4),
        D::Float8 | D::Float64 | D::DoublePrecision | D::Double(_) => Number::Float(8),
        // FLOAT(p): single precision up to 24 bits of mantissa.
        D::Float(Some(p)) if *p <= 24 => Number::Float(4),
        D::Float(_) => Number::Float(8),
        D::Custom(name, _) => match object_key(name).as_str() {
            "smallserial" | "serial2" => Number::Integer(2),
            "serial" | "serial4" => Number::Integer(4),
            "bigserial" | "serial8" => Number::Integer(8),
            _ => return None,
        },
        _ => return None,
    })
}

fn number_widened(old: Number, new: Number) -> bool {
    match (old, new) {
        (Number::Integer(a), Number::Integer(b)) => b > a,
        // Fractions, or more digits than the integer held.
        (Number::Integer(_), Number::Float(_)) => true,
        (Number::Integer(a), Number::Exact(p, s)) => s > 0 || p.is_none_or(|p| p > integer_digits(a)),
        (Number::Exact(p, s), Number::Exact(p2, s2)) => match (p, p2) {
            (Some(_), None) => true,
            (None, _) => false,
            // More digits before the point, or after it.
            (Some(p), Some(p2)) => s2 > s || p2.saturating_sub(s2) > p.saturating_sub(s),
        },
        (Number::Exact(..), Number::Float(_)) => true,
        (Number::Float(a), Number::Float(b)) => b > a,
        // Fractions or range lost the other way: a change, not a loosening.
        _ => false,
    }
}

/// Decimal digits an integer of `bytes` width can hold in full.
fn integer_digits(bytes: u8) -> u64 {
    match bytes {
        1 => 2,
        2 => 4,
        3 => 6,
        4 => 9,
        8 => 18,
        _ => 38,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn ty(s: &str) -> DataType {
        Parser::new(&PostgreSqlDialect {}).try_with_sql(s).and_then(|mut p| p.parse_data_type()).expect("a type")
    }

    fn judge(a: &str, b: &str) -> Option<TypeLoosening> {
        type_loosening(&ty(a), &ty(b), |n| n == "mood")
    }

    #[test]
    fn number_types_widen_by_range_and_fractions() {
        use TypeLoosening::*;
        for (a, b) in [
            ("SMALLINT", "INTEGER"),
            ("INT", "BIGINT"),
            ("INTEGER", "NUMERIC"),
            ("INT", "DOUBLE PRECISION"),
            ("NUMERIC(10,2)", "NUMERIC(12,2)"),
            ("NUMERIC(10,2)", "NUMERIC(10,4)"),
            ("NUMERIC(10,2)", "NUMERIC"),
            ("REAL", "DOUBLE PRECISION"),
            ("serial", "bigint"),
        ] {
            assert_eq!(judge(a, b), Some(Numeric), "{a} -> {b}");
        }
        for (a, b) in [
            ("BIGINT", "INT"),
            ("NUMERIC(12,2)", "NUMERIC(10,2)"),
            ("NUMERIC", "NUMERIC(10,2)"),
            ("DOUBLE PRECISION", "INT"),
            ("INT", "INTEGER"),
            ("BIGINT", "bigserial"),
        ] {
            assert_eq!(judge(a, b), None, "{a} -> {b}");
        }
    }

    #[test]
    fn to_text_is_reported_only_from_known_types() {
        assert_eq!(judge("INT", "TEXT"), Some(TypeLoosening::ToText));
        assert_eq!(judge("UUID", "VARCHAR(64)"), Some(TypeLoosening::ToText));
        assert_eq!(judge("TIMESTAMP", "TEXT"), Some(TypeLoosening::ToText));
        assert_eq!(judge("mood", "TEXT"), Some(TypeLoosening::EnumToText));
        assert_eq!(judge("VARCHAR(10)", "TEXT"), Some(TypeLoosening::CharacterBound));
        // A domain or other user type may already be text.
        assert_eq!(judge("email_address", "TEXT"), None);
        assert_eq!(judge("TEXT", "INT"), None);
    }
}
