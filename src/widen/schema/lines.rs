//! Locating keys in the new text: serde keeps no positions, so a small scanner maps
//! each key path to the 1-based line its key is written on.

use std::collections::HashMap;

pub(in crate::widen) struct KeyLines(HashMap<Vec<String>, u32>);

impl KeyLines {
    /// The line of the deepest written ancestor of `path` (the document start at worst).
    pub(in crate::widen) fn locate(&self, path: &[String]) -> u32 {
        (1..=path.len()).rev().find_map(|n| self.0.get(&path[..n]).copied()).unwrap_or(1)
    }
}

pub(in crate::widen) fn json_key_lines(text: &str) -> KeyLines {
    enum Frame {
        Object { seg: Option<String>, key: Option<String>, expect_key: bool },
        Array { seg: Option<String>, index: usize },
    }
    fn seg(f: &Frame) -> Option<&String> {
        match f {
            Frame::Object { seg, .. } | Frame::Array { seg, .. } => seg.as_ref(),
        }
    }
    let mut map = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut line = 1u32;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                s.push(e);
                            }
                        }
                        _ => s.push(c),
                    }
                }
                let is_key = matches!(stack.last(), Some(Frame::Object { expect_key: true, .. }));
                if is_key {
                    let mut path: Vec<String> = stack.iter().filter_map(seg).cloned().collect();
                    if let Some(Frame::Object { key, expect_key, .. }) = stack.last_mut() {
                        *expect_key = false;
                        *key = Some(s.clone());
                    }
                    path.push(s);
                    map.entry(path).or_insert(line);
                }
            }
            '{' | '[' => {
                let seg = match stack.last() {
                    Some(Frame::Object { key, .. }) => key.clone(),
                    Some(Frame::Array { index, .. }) => Some(index.to_string()),
                    None => None,
                };
                stack.push(if c == '{' {
                    Frame::Object { seg, key: None, expect_key: true }
                } else {
                    Frame::Array { seg, index: 0 }
                });
            }
            '}' | ']' => {
                stack.pop();
            }
            ',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            _ => {}
        }
    }
    KeyLines(map)
}

/// Block-style YAML by indentation: a key's parent is the nearest key above it with a
/// smaller indent. Flow collections and sequence indices are not tracked; a path
/// through them resolves to its nearest tracked ancestor.
pub(in crate::widen) fn yaml_key_lines(text: &str) -> KeyLines {
    let mut map = HashMap::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut block_scalar_indent: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let content = raw.trim_start();
        let mut indent = raw.len() - content.len();
        if let Some(bi) = block_scalar_indent {
            if content.is_empty() || indent > bi {
                continue;
            }
            block_scalar_indent = None;
        }
        if content.is_empty() || content.starts_with('#') || content.starts_with("---") {
            continue;
        }
        let mut rest = content;
        while let Some(r) = rest.strip_prefix("- ") {
            let trimmed = r.trim_start();
            indent += rest.len() - trimmed.len();
            rest = trimmed;
        }
        let Some((key, value)) = yaml_key(rest) else {
            continue;
        };
        while stack.last().is_some_and(|(ind, _)| *ind >= indent) {
            stack.pop();
        }
        stack.push((indent, key));
        map.entry(stack.iter().map(|(_, k)| k.clone()).collect()).or_insert(line);
        let v = value.trim();
        if v.starts_with('|') || v.starts_with('>') {
            block_scalar_indent = Some(indent);
        }
    }
    KeyLines(map)
}

/// `key: rest` (plain, single- or double-quoted key), or `None` for any other line.
fn yaml_key(s: &str) -> Option<(String, &str)> {
    let (key, after) = if let Some(q @ ('"' | '\'')) = s.chars().next() {
        let end = s[1..].find(q)? + 1;
        (s[1..end].to_string(), &s[end + 1..])
    } else {
        let colon = s.find(": ").or_else(|| s.strip_suffix(':').map(str::len))?;
        (s[..colon].trim_end().to_string(), &s[colon..])
    };
    let value = after.strip_prefix(':')?;
    if !(value.is_empty() || value.starts_with(' ')) || key.is_empty() {
        return None;
    }
    Some((key, value))
}
