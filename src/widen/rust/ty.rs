//! Rust types reduced to what direction checks need: integer ranges, `Option`,
//! strings, erased types.

use tree_sitter::Node;

use super::super::syntax::{compact, field, kind_of, text};

/// A type, reduced to what direction checks need.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Ty {
    /// A path type with generic arguments (`u8`, `Option<T>`, `serde_json::Value`).
    Named {
        name: String,
        args: Vec<Ty>,
    },
    Ref {
        mutable: bool,
        inner: Box<Ty>,
    },
    /// Anything else, by squashed text.
    Other(String),
}

/// How deep a type's arguments are read; a type nested deeper is read whole, by its
/// squashed text, from there down. No type a person writes comes near it (serde's own
/// `Option<Vec<HashMap<..>>>` nests four deep), and the bound keeps every function over
/// [`Ty`] (its reading, comparison, encoding and drop, all recursive) within a few
/// kilobytes of stack however deep a generated type nests.
const MAX_TYPE_DEPTH: usize = 64;

impl Ty {
    pub(super) fn of(n: Node, src: &str) -> Ty {
        Ty::within(n, src, 0)
    }

    /// [`Ty::of`] for a type `depth` levels inside the slot's type.
    fn within(n: Node, src: &str, depth: usize) -> Ty {
        let text = |n: Node| text(n, src).to_string();
        if depth >= MAX_TYPE_DEPTH {
            return Ty::Other(compact(&text(n)));
        }
        match kind_of(n) {
            "primitive_type" | "type_identifier" | "scoped_type_identifier" => {
                Ty::Named { name: compact(&text(n)), args: Vec::new() }
            }
            "generic_type" => {
                let name = field(n, "type").map(|t| compact(&text(t))).unwrap_or_default();
                let mut args = Vec::new();
                if let Some(ta) = field(n, "type_arguments") {
                    let mut c = ta.walk();
                    for a in ta.named_children(&mut c) {
                        if kind_of(a) != "lifetime" {
                            args.push(Ty::within(a, src, depth + 1));
                        }
                    }
                }
                Ty::Named { name, args }
            }
            "reference_type" => {
                let mut c = n.walk();
                let mutable = n.children(&mut c).any(|ch| kind_of(ch) == "mutable_specifier");
                let inner = field(n, "type").map(|t| Ty::within(t, src, depth + 1)).unwrap_or(Ty::Other(String::new()));
                Ty::Ref { mutable, inner: Box::new(inner) }
            }
            _ => Ty::Other(compact(&text(n))),
        }
    }

    /// The last path segment of a named type (`std::option::Option` -> `Option`).
    pub(super) fn base(&self) -> Option<&str> {
        match self {
            Ty::Named { name, .. } => Some(name.rsplit("::").next().unwrap_or(name)),
            _ => None,
        }
    }

    /// The last path segment of every named type in this one, arguments included.
    pub(super) fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(ty) = stack.pop() {
            match ty {
                Ty::Named { args, .. } => {
                    out.extend(ty.base());
                    stack.extend(args);
                }
                Ty::Ref { inner, .. } => stack.push(inner),
                Ty::Other(_) => {}
            }
        }
        out
    }

    pub(super) fn args(&self) -> &[Ty] {
        match self {
            Ty::Named { args, .. } => args,
            _ => &[],
        }
    }

    pub(super) fn is_option(&self) -> bool {
        self.base() == Some("Option") && self.args().len() == 1
    }

    pub(super) fn squashed(&self) -> String {
        match self {
            Ty::Named { name, args } if args.is_empty() => name.clone(),
            Ty::Named { name, args } => {
                format!("{name}<{}>", args.iter().map(Ty::squashed).collect::<Vec<_>>().join(","))
            }
            Ty::Ref { mutable, inner } => format!("&{}{}", if *mutable { "mut" } else { "" }, inner.squashed()),
            Ty::Other(s) => s.clone(),
        }
    }

    /// `(signed, bits)` of an integer type, `NonZero*` included.
    pub(super) fn int_range(&self) -> Option<(bool, u32)> {
        let base = self.base()?;
        // By the leading `i` or `u`, never by byte offset: a type name may begin with
        // any character (`x: é` once panicked here, cutting inside `é`).
        let plain = |s: &str| -> Option<(bool, u32)> {
            let (signed, rest) = match s.strip_prefix('i') {
                Some(rest) => (true, rest),
                None => (false, s.strip_prefix('u')?),
            };
            let bits = match rest {
                "size" => 64,
                b => b.parse().ok()?,
            };
            Some((signed, bits))
        };
        if let Some(rest) = base.strip_prefix("NonZero") {
            return if rest.is_empty() {
                self.args().first().and_then(Ty::int_range)
            } else {
                plain(&rest.to_ascii_lowercase())
            };
        }
        if !self.args().is_empty() || !matches!(base.len(), 2..=5) {
            return None;
        }
        plain(base).filter(|(_, b)| matches!(b, 8 | 16 | 32 | 64 | 128))
    }

    pub(super) fn is_nonzero(&self) -> bool {
        self.base().is_some_and(|b| b.starts_with("NonZero")) && self.int_range().is_some()
    }

    pub(super) fn is_stringy(&self) -> bool {
        let s = self.squashed();
        matches!(s.as_str(), "String" | "std::string::String" | "Box<str>" | "Arc<str>" | "Rc<str>")
            || (s.starts_with('&') && s.ends_with("str") && !s.contains('<'))
            || (s.starts_with("Cow<") && s.ends_with("str>"))
    }

    pub(super) fn is_erased(&self, value_imported: bool) -> bool {
        let s = self.squashed();
        s == "serde_json::Value"
            || (s == "Value" && value_imported)
            || s.contains("dynAny")
            || s.contains("dynstd::any::Any")
    }
}

/// Whether `new` holds every value of `old` and more (integer ranges).
pub(super) fn strictly_wider(old: (bool, u32), new: (bool, u32)) -> bool {
    let contains = match (old.0, new.0) {
        (false, false) | (true, true) => old.1 <= new.1,
        (false, true) => old.1 < new.1,
        (true, false) => false,
    };
    contains && old != new
}
