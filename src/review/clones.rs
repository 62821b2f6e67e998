//! The copy detector: blocks a change adds to several distinct files that are the
//! same once identifiers and literals are normalised.
//!
//! Tokens: identifiers become `I`, numbers `N`, string and character literals `S`;
//! keywords and punctuation stay as they are, so `if` and `while` never match;
//! comments are dropped. Only tokens on added lines count, split into runs of
//! consecutive added lines. Every window of `min_tokens` tokens is a shingle; a
//! shingle found in at least `min_files` distinct files is a match; overlapping
//! matched windows in one file merge into a block; blocks linked by a shared
//! shingle form a cluster.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

/// One file of a change: its new text and its added line numbers (1-based).
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: String,
    pub text: String,
    pub added: Vec<u32>,
}

/// Thresholds (`clones.min_files`, `clones.min_tokens`).
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub min_files: usize,
    pub min_tokens: usize,
}

/// A copied block in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Block {
    pub file: String,
    pub start_line: u32,
    pub end_line: u32,
    pub tokens: usize,
}

/// Blocks that are copies of one another, in at least `min_files` files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloneCluster {
    /// Distinct files, byte-sorted.
    pub files: Vec<String>,
    /// Blocks, by file bytes then line.
    pub blocks: Vec<Block>,
}

/// Words kept verbatim (shared by the languages premerge reads), so control flow
/// and declarations shape the token stream while names do not.
const KEYWORDS: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "defer",
    "do",
    "elif",
    "else",
    "enum",
    "except",
    "export",
    "extends",
    "false",
    "finally",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "go",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "is",
    "lambda",
    "let",
    "loop",
    "match",
    "mod",
    "mut",
    "new",
    "nil",
    "not",
    "null",
    "or",
    "package",
    "pass",
    "pub",
    "raise",
    "return",
    "self",
    "static",
    "struct",
    "switch",
    "this",
    "throw",
    "trait",
    "true",
    "try",
    "type",
    "use",
    "var",
    "where",
    "while",
    "with",
    "yield",
];

/// Where a shingle starts: (file index, token index).
type Occurrence = (usize, usize);

#[derive(Debug, Clone, Copy)]
struct Token {
    id: u32,
    line: u32,
}

#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let next = self.ids.len() as u32 + 1;
        self.ids.insert(s.to_string(), next);
        next
    }
}

fn tokenize(text: &str, interner: &mut Interner) -> Vec<Token> {
    // Bytes, not chars: every delimiter is ASCII, and non-ASCII bytes count as
    // identifier bytes, so slices always fall on char boundaries.
    let b = text.as_bytes();
    let ident = |x: u8| x.is_ascii_alphanumeric() || x == b'_' || x >= 0x80;
    let mut out = Vec::new();
    let mut line = 1u32;
    let mut i = 0;
    let mut push = |s: &str, line: u32, out: &mut Vec<Token>| out.push(Token { id: interner.id(s), line });
    while i < b.len() {
        let ch = b[i];
        let next = b.get(i + 1).copied();
        if ch == b'\n' {
            line += 1;
            i += 1;
        } else if ch.is_ascii_whitespace() {
            i += 1;
        } else if (ch == b'/' && next == Some(b'/')) || (ch == b'#' && !matches!(next, Some(b'[' | b'!'))) {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if ch == b'/' && next == Some(b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                line += u32::from(b[i] == b'\n');
                i += 1;
            }
            i += 2;
        } else if ch == b'"' || ch == b'`' || (ch == b'\'' && closes_on_line(b, i)) {
            let start_line = line;
            i += 1;
            while i < b.len() && b[i] != ch {
                if b[i] == b'\\' {
                    i += 1;
                }
                if b.get(i) == Some(&b'\n') {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
            push("S", start_line, &mut out);
        } else if ch.is_ascii_digit() {
            while i < b.len() && (ident(b[i]) || b[i] == b'.') {
                i += 1;
            }
            push("N", line, &mut out);
        } else if ident(ch) {
            let s = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            let word = &text[s..i];
            push(if KEYWORDS.binary_search(&word).is_ok() { word } else { "I" }, line, &mut out);
        } else {
            push(&text[i..i + 1], line, &mut out);
            i += 1;
        }
    }
    out
}

/// Whether a `'` at `i` closes later on the same line (a literal, not a Rust lifetime).
fn closes_on_line(b: &[u8], i: usize) -> bool {
    b[i + 1..].iter().take_while(|&&x| x != b'\n').any(|&x| x == b'\'')
}

/// Runs of tokens that lie on consecutive added lines: `(start, end)` index ranges.
fn added_runs(tokens: &[Token], added: &[u32]) -> Vec<(usize, usize)> {
    let max = added.iter().copied().max().unwrap_or(0) as usize;
    let mut is_added = vec![false; max + 2];
    for &l in added {
        is_added[l as usize] = true;
    }
    let on = |l: u32| is_added.get(l as usize).copied().unwrap_or(false);
    let mut runs = Vec::new();
    let mut start: Option<usize> = None;
    for (k, t) in tokens.iter().enumerate() {
        let continues = match start {
            Some(_) => on(t.line) && (tokens[k - 1].line + 1..t.line).all(on),
            None => false,
        };
        if !continues {
            if let Some(s) = start.take() {
                runs.push((s, k));
            }
            if on(t.line) {
                start = Some(k);
            }
        }
    }
    if let Some(s) = start {
        runs.push((s, tokens.len()));
    }
    runs
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Find the copy clusters of a change.
pub fn detect(files: &[SourceFile], t: Thresholds) -> Vec<CloneCluster> {
    let k = t.min_tokens.max(1);
    let mut interner = Interner::default();
    let toks: Vec<Vec<Token>> = files.iter().map(|f| tokenize(&f.text, &mut interner)).collect();
    let ids: Vec<Vec<u32>> = toks.iter().map(|v| v.iter().map(|t| t.id).collect()).collect();
    // Shingle hash -> occurrences (file index, token index). A polynomial rolling hash
    // keeps this linear in the number of tokens; buckets are then split by the actual
    // token slices, so a hash collision can never join two different shingles.
    const B: u64 = 0x100_0000_01b3;
    let b_k = (1..k).fold(1u64, |acc, _| acc.wrapping_mul(B));
    let mut buckets: HashMap<u64, Vec<(usize, usize)>> = HashMap::new();
    for (fi, f) in files.iter().enumerate() {
        for (s, e) in added_runs(&toks[fi], &f.added) {
            if e - s < k {
                continue;
            }
            let w = &ids[fi];
            let mut h = w[s..s + k].iter().fold(0u64, |acc, &t| acc.wrapping_mul(B).wrapping_add(u64::from(t)));
            for p in s..=e - k {
                if p > s {
                    h = h
                        .wrapping_sub(u64::from(w[p - 1]).wrapping_mul(b_k))
                        .wrapping_mul(B)
                        .wrapping_add(u64::from(w[p + k - 1]));
                }
                buckets.entry(h).or_default().push((fi, p));
            }
        }
    }
    let spans = |occ: &[(usize, usize)]| {
        let mut fs: Vec<usize> = occ.iter().map(|o| o.0).collect();
        fs.dedup();
        fs.sort_unstable();
        fs.dedup();
        fs.len() >= t.min_files
    };
    let mut matches: Vec<Vec<(usize, usize)>> = Vec::new();
    for occ in buckets.into_values().filter(|o| spans(o)) {
        let mut groups: Vec<(&[u32], Vec<Occurrence>)> = Vec::new();
        for (fi, p) in occ {
            let key = &ids[fi][p..p + k];
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => g.1.push((fi, p)),
                None => groups.push((key, vec![(fi, p)])),
            }
        }
        matches.extend(groups.into_iter().map(|g| g.1).filter(|o| spans(o)));
    }
    matches.sort();
    // Per file: matched windows merged into regions [start, end).
    let mut regions: Vec<Vec<(usize, usize)>> = vec![Vec::new(); files.len()];
    for occ in &matches {
        for &(fi, p) in occ {
            regions[fi].push((p, p + k));
        }
    }
    let mut base = Vec::with_capacity(files.len());
    let mut nodes: Vec<(usize, usize, usize)> = Vec::new();
    for (fi, r) in regions.iter_mut().enumerate() {
        r.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for &(s, e) in r.iter() {
            match merged.last_mut() {
                Some(last) if s < last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        base.push(nodes.len());
        nodes.extend(merged.iter().map(|&(s, e)| (fi, s, e)));
        *r = merged;
    }
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    let node_of = |fi: usize, p: usize| -> usize {
        let r = &regions[fi];
        let idx = r.partition_point(|&(s, _)| s <= p) - 1;
        base[fi] + idx
    };
    for occ in &matches {
        let first = node_of(occ[0].0, occ[0].1);
        for &(fi, p) in &occ[1..] {
            let (a, b) = (find(&mut parent, first), find(&mut parent, node_of(fi, p)));
            parent[a] = b;
        }
    }
    let mut comps: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for n in 0..nodes.len() {
        let root = find(&mut parent, n);
        comps.entry(root).or_default().push(n);
    }
    let mut out: Vec<CloneCluster> = comps
        .into_values()
        .filter_map(|members| {
            let mut blocks: Vec<Block> = members
                .iter()
                .map(|&n| {
                    let (fi, s, e) = nodes[n];
                    Block {
                        file: files[fi].path.clone(),
                        start_line: toks[fi][s].line,
                        end_line: toks[fi][e - 1].line,
                        tokens: e - s,
                    }
                })
                .collect();
            blocks.sort_by(|a, b| a.file.as_bytes().cmp(b.file.as_bytes()).then(a.start_line.cmp(&b.start_line)));
            let mut fs: Vec<String> = blocks.iter().map(|b| b.file.clone()).collect();
            fs.dedup();
            (fs.len() >= t.min_files).then_some(CloneCluster { files: fs, blocks })
        })
        .collect();
    out.sort_by(|a, b| {
        let ka = (a.blocks[0].file.as_bytes(), a.blocks[0].start_line);
        let kb = (b.blocks[0].file.as_bytes(), b.blocks[0].start_line);
        ka.cmp(&kb)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELPER: &str = "fn clamp_limit(raw: Option<u64>) -> Result<u64, Error> {\n    let v = raw.unwrap_or(20);\n    if v == 0 || v > 500 {\n        return Err(Error::new(\"limit out of range\"));\n    }\n    let page = v.min(100);\n    Ok(page)\n}\n";

    fn all_added(path: &str, text: &str) -> SourceFile {
        let n = text.lines().count() as u32;
        SourceFile { path: path.into(), text: text.into(), added: (1..=n).collect() }
    }

    const T: Thresholds = Thresholds { min_files: 3, min_tokens: 30 };

    #[test]
    fn renamed_copies_in_three_files_cluster() {
        let b = HELPER.replace("clamp_limit", "page_size").replace("raw", "input").replace("20", "25");
        let c = format!("use std::io;\n\n{}", HELPER.replace("\"limit out of range\"", "'bad'"));
        let files = [all_added("a.rs", HELPER), all_added("b.rs", &b), all_added("c.rs", &c)];
        let got = detect(&files, T);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].files, ["a.rs", "b.rs", "c.rs"]);
        let cb = got[0].blocks.iter().find(|b| b.file == "c.rs").unwrap();
        assert_eq!((cb.start_line, cb.end_line), (3, 10));
    }

    #[test]
    fn keywords_are_sorted_for_binary_search() {
        assert!(KEYWORDS.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
    }

    #[test]
    fn near_misses_do_not_fire() {
        // Two files only.
        assert!(detect(&[all_added("a.rs", HELPER), all_added("b.rs", HELPER)], T).is_empty());
        // The third copy is not added by the change.
        let old = SourceFile { path: "c.rs".into(), text: HELPER.into(), added: vec![] };
        assert!(detect(&[all_added("a.rs", HELPER), all_added("b.rs", HELPER), old], T).is_empty());
        // Different control flow in the third.
        let c = HELPER.replace("if v == 0 || v > 500 {", "while v == 0 || v > 500 {");
        let c = c.replace("let page", "let mut page");
        assert!(detect(&[all_added("a.rs", HELPER), all_added("b.rs", HELPER), all_added("c.rs", &c)], T).is_empty());
        // Too small to count.
        let small = "let v = raw.unwrap_or(20);\n";
        let files = [all_added("a.rs", small), all_added("b.rs", small), all_added("c.rs", small)];
        assert!(detect(&files, T).is_empty());
    }

    #[test]
    fn an_unchanged_line_splits_a_run() {
        let n = HELPER.lines().count() as u32;
        let t = Thresholds { min_files: 3, min_tokens: 45 };
        let whole = [all_added("a.rs", HELPER), all_added("b.rs", HELPER), all_added("c.rs", HELPER)];
        assert_eq!(detect(&whole, t).len(), 1);
        let gap = SourceFile { path: "c.rs".into(), text: HELPER.into(), added: (1..=n).filter(|l| *l != 4).collect() };
        assert!(detect(&[all_added("a.rs", HELPER), all_added("b.rs", HELPER), gap], t).is_empty());
    }
}
