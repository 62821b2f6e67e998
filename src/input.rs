//! The one reader for input from outside premerge: findings, SARIF, blocked-on rows,
//! evidence, Stop payloads, transcripts, pins, settings, plans, configuration, and
//! stdin.
//!
//! Every read has a byte limit chosen per kind of input, and only regular files are
//! read: a path is opened without blocking (so a FIFO cannot hang the open), checked
//! with `fstat` on the opened descriptor (so a symlink swapped after a check cannot
//! slip a device in), and refused with a clear error when it is a FIFO, a device, a
//! socket or a directory. `/dev/zero` behind a committed symlink is refused, not read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What is being read; each kind has its own default limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Reviewer, lens or SARIF findings (`review.max_findings_bytes`).
    Findings,
    /// A proposal's evidence rows.
    Evidence,
    /// A coding agent's Stop or SessionStart hook payload on stdin.
    HookPayload,
    /// The tail of an agent's transcript (read from the end).
    Transcript,
    /// `.premerge/pins.json`, an agent's `settings.json`.
    Settings,
    /// A wave plan, classified findings, blocked-on rows: premerge's own artefacts,
    /// read back from a run directory anyone can write to.
    Artefact,
    /// `premerge.toml`.
    Config,
    /// git's ref lines on the pre-push hook's stdin.
    PrePushLines,
    /// A fixer's blocked-on return (`premerge blocked record`).
    BlockedOn,
    /// An agent instruction file (`AGENTS.md`, `CLAUDE.md`, ...) that
    /// `install --agent-docs` edits.
    AgentDoc,
    /// A git hook already in place (kept, chained or read back by `install`).
    Hook,
    /// A working-tree file the scan or the seam detector reads (each passes its own
    /// limit: `scan.max_file_bytes`, the detector's 1 MiB).
    Source,
}

impl Kind {
    /// The default limit in bytes. Each is far above what a real input of the kind
    /// holds and far below what would hurt the machine.
    pub(crate) const fn default_limit(self) -> u64 {
        match self {
            // 16 MiB: a round of several thousand findings with long descriptions.
            Kind::Findings => 16 << 20,
            // 4 MiB: evidence is a projection of a signal, tens of rows.
            Kind::Evidence => 4 << 20,
            // 1 MiB: a hook payload is a few fields and the last message.
            Kind::HookPayload => 1 << 20,
            // 8 MiB: the gate reads only the end of a transcript.
            Kind::Transcript => 8 << 20,
            // 1 MiB: settings and pins are hand-edited files of a few KiB.
            Kind::Settings => 1 << 20,
            // 32 MiB: a plan of the largest findings file, with its summaries.
            Kind::Artefact => 32 << 20,
            // 1 MiB: a configuration file of a few dozen keys.
            Kind::Config => 1 << 20,
            // 1 MiB: one 200-byte line per pushed ref, thousands of refs.
            Kind::PrePushLines => 1 << 20,
            // 1 MiB: at most 64 rows are recorded, each a few hundred bytes.
            Kind::BlockedOn => 1 << 20,
            // 4 MiB: instruction files are prose of a few KiB to a few hundred KiB.
            Kind::AgentDoc => 4 << 20,
            // 64 MiB: a hook may be a compiled program, not only a script.
            Kind::Hook => 64 << 20,
            // 1 MiB: `scan.max_file_bytes`' default.
            Kind::Source => 1 << 20,
        }
    }

    /// How the kind is named in errors.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Findings => "findings",
            Kind::Evidence => "evidence",
            Kind::HookPayload => "hook payload",
            Kind::Transcript => "transcript",
            Kind::Settings => "settings",
            Kind::Artefact => "artefact",
            Kind::Config => "configuration",
            Kind::PrePushLines => "pre-push lines",
            Kind::BlockedOn => "blocked-on rows",
            Kind::AgentDoc => "agent instruction files",
            Kind::Hook => "git hooks",
            Kind::Source => "working-tree files",
        }
    }
}

/// Why an input could not be read. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The path is not a regular file.
    #[error("{path}: not a regular file ({what}); premerge reads {kind} only from regular files")]
    NotRegular { path: String, what: &'static str, kind: &'static str },
    /// Larger than the limit for its kind.
    #[error("{path}: larger than {limit} bytes, the limit for {kind}")]
    TooLarge { path: String, limit: u64, kind: &'static str },
    /// The file does not exist.
    #[error("{path}: no such file ({kind})")]
    Missing { path: String, kind: &'static str },
    /// Any other I/O failure.
    #[error("{path}: cannot read: {why}")]
    Io { path: String, why: String },
    /// Not UTF-8 where text is required.
    #[error("{path}: not UTF-8 (byte {at})")]
    NotUtf8 { path: String, at: usize },
}

impl InputError {
    /// Whether the file simply does not exist (callers that treat absence as "none").
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, InputError::Missing { .. })
    }
}

fn shown(path: &Path) -> String {
    escape_for_message(&path.to_string_lossy())
}

/// Escape control characters (newlines, escapes, bidi controls) so a message stays on
/// one line and shows what is there.
pub fn escape_for_message(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_escaped(&mut out, s);
    out
}

/// [`escape_for_message`] appended to `out`. Printable ASCII, which is nearly all of
/// what a repository holds, is copied in one piece.
pub(crate) fn push_escaped(out: &mut String, s: &str) {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || is_bidi_control(c) => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// The Unicode bidirectional formatting characters, which can reorder what a terminal shows.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Open `path` for reading without blocking and check, on the open descriptor, that
/// it is a regular file; returns it with its size.
fn open_regular(path: &Path, kind: Kind) -> Result<(File, u64), InputError> {
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path).map_err(
            |e| match e.kind() {
                std::io::ErrorKind::NotFound => InputError::Missing { path: shown(path), kind: kind.name() },
                _ => InputError::Io { path: shown(path), why: e.to_string() },
            },
        )?;
    let meta = file.metadata().map_err(|e| InputError::Io { path: shown(path), why: e.to_string() })?;
    match not_regular(&meta.file_type()) {
        None => Ok((file, meta.len())),
        Some(what) => Err(InputError::NotRegular { path: shown(path), what, kind: kind.name() }),
    }
}

/// What a file that is not a regular file is (`a FIFO`, `a directory`, ...), or `None`
/// for a regular file. Shared with the store's writers, which check the same on the
/// descriptor they opened.
pub(crate) fn not_regular(ft: &std::fs::FileType) -> Option<&'static str> {
    Some(if ft.is_file() {
        return None;
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a file"
    })
}

/// Read at most `limit` bytes from `r`; more is [`InputError::TooLarge`].
fn read_limited(r: impl Read, limit: u64, path: &str, kind: Kind) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    r.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::Io { path: path.to_string(), why: e.to_string() })?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge { path: path.to_string(), limit, kind: kind.name() });
    }
    Ok(bytes)
}

/// Read a whole regular file of `kind`, at most `limit` bytes. The size is checked with
/// `fstat` before a byte is read; a file that grows while it is read is still cut off
/// at the limit.
pub(crate) fn read_file(path: &Path, kind: Kind, limit: u64) -> Result<Vec<u8>, InputError> {
    let (file, len) = open_regular(path, kind)?;
    if len > limit {
        return Err(InputError::TooLarge { path: shown(path), limit, kind: kind.name() });
    }
    read_limited(file, limit, &shown(path), kind)
}

/// [`read_file`] with the kind's default limit.
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>, InputError> {
    read_file(path, kind, kind.default_limit())
}

/// [`read`] as UTF-8 text.
pub(crate) fn read_text(path: &Path, kind: Kind) -> Result<String, InputError> {
    to_text(read(path, kind)?, &shown(path))
}

/// [`read_text`], with a missing file as `None`.
pub(crate) fn read_text_if_present(path: &Path, kind: Kind) -> Result<Option<String>, InputError> {
    match read_text(path, kind) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Read at most the last `limit` bytes of a regular file (a transcript grows at its
/// end, and only its end matters). The first partial line is dropped when the read
/// did not start at the beginning.
pub(crate) fn read_tail(path: &Path, kind: Kind, limit: u64) -> Result<Vec<u8>, InputError> {
    let (mut file, len) = open_regular(path, kind)?;
    let start = len.saturating_sub(limit);
    file.seek(SeekFrom::Start(start)).map_err(|e| InputError::Io { path: shown(path), why: e.to_string() })?;
    let io = |e: std::io::Error| InputError::Io { path: shown(path), why: e.to_string() };
    // Never more than `limit`, even if the file grows while it is read.
    let mut file = file.take(limit);
    // The cut first line is skipped while reading, a chunk at a time, rather than
    // drained from the front afterwards: moving 4 MiB down cost the stop gate about a
    // millisecond (docs/gate.md, "Speed").
    let mut head = Vec::new();
    if start > 0 {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = file.read(&mut chunk).map_err(io)?;
            if n == 0 {
                return Ok(Vec::new());
            }
            if let Some(i) = memchr::memchr(b'\n', &chunk[..n]) {
                head.extend_from_slice(&chunk[i + 1..n]);
                break;
            }
        }
    }
    // Sized once: growing a 4 MiB buffer by doubling copied and faulted in twice the
    // memory, a third of the stop gate's time on a long transcript (docs/gate.md).
    let mut bytes = Vec::with_capacity(usize::try_from((len - start).min(limit)).unwrap_or(0));
    bytes.extend_from_slice(&head);
    file.read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

/// How many bytes a [`Tail`] reads at a time: small enough to stay in the CPU's cache
/// between the kernel's copy and the reader's pass over the lines, large enough that a
/// 4 MiB tail is a few dozen reads. A longer line grows the buffer (up to the tail).
pub const TAIL_CHUNK: usize = 64 * 1024;

/// The last bytes of a regular file (at most a limit), opened once and read two ways:
/// its lines streamed from the front through one reused buffer ([`Tail::for_each_line`]),
/// and its end searched in growing windows ([`Tail::find_from_end`]). Both see the same
/// bytes: the range fixed by `fstat` at open, the cut first line dropped when the range
/// does not start at the beginning (as [`read_tail`] gives it).
///
/// Why not one 4 MiB buffer: faulting in and freeing a fresh buffer of the tail's size,
/// and reading it back from memory after the kernel's copy, was a large part of the
/// stop gate's time on a long transcript (docs/gate.md, "Speed", round 4).
pub struct Tail {
    file: File,
    path: String,
    /// Offset of the range's first byte.
    start: u64,
    /// Offset just past the range's last byte (the file's size at open).
    end: u64,
}

impl Tail {
    /// Open `path` (a regular file only) and fix the range: its last `limit` bytes.
    pub fn open(path: &Path, kind: Kind, limit: u64) -> Result<Tail, InputError> {
        let (file, len) = open_regular(path, kind)?;
        Ok(Tail { file, path: shown(path), start: len.saturating_sub(limit), end: len })
    }

    fn read_at(&self, buf: &mut [u8], at: u64) -> Result<usize, InputError> {
        use std::os::unix::fs::FileExt;
        loop {
            match self.file.read_at(buf, at) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(InputError::Io { path: self.path.clone(), why: e.to_string() }),
            }
        }
    }

    /// Call `each` with every whole line of the range, in order, without its `\n` (a
    /// `\r` before it is kept); a last line without a line end is passed too. The cut
    /// first line is skipped while reading, however long it is.
    pub fn for_each_line(&self, each: impl FnMut(&[u8])) -> Result<(), InputError> {
        self.for_each_line_in(TAIL_CHUNK, each)
    }

    /// [`Tail::for_each_line`] reading `chunk` bytes at a time (tests use tiny chunks
    /// to split lines across refills).
    pub(crate) fn for_each_line_in(&self, chunk: usize, mut each: impl FnMut(&[u8])) -> Result<(), InputError> {
        let total = usize::try_from(self.end - self.start).unwrap_or(usize::MAX);
        let mut buf = vec![0u8; chunk.clamp(1, total.max(1))];
        let mut filled = 0;
        let mut at = self.start;
        let mut skipping = self.start > 0;
        loop {
            let left = usize::try_from(self.end.saturating_sub(at)).unwrap_or(usize::MAX);
            if filled == buf.len() && left > 0 {
                // One line fills the buffer: grow it (doubling, never past the range).
                let grown = buf.len().saturating_mul(2).min(filled.saturating_add(left));
                buf.resize(grown, 0);
            }
            let want = (buf.len() - filled).min(left);
            let n = if want == 0 { 0 } else { self.read_at(&mut buf[filled..filled + want], at)? };
            if n == 0 {
                // The range's end (or the file was cut short): a last line without `\n`.
                if !skipping && filled > 0 {
                    each(&buf[..filled]);
                }
                return Ok(());
            }
            at += n as u64;
            let mut line_start = 0;
            for i in memchr::memchr_iter(b'\n', &buf[filled..filled + n]) {
                let i = filled + i;
                if skipping {
                    skipping = false;
                } else {
                    each(&buf[line_start..i]);
                }
                line_start = i + 1;
            }
            filled += n;
            if skipping {
                // Still inside the cut first line: nothing of it is kept.
                filled = 0;
                continue;
            }
            buf.copy_within(line_start..filled, 0);
            filled -= line_start;
        }
    }

    /// Search the range's end: `find` is given the last whole lines in windows of
    /// `first_window` bytes, then four times as many, until it answers or has seen the
    /// whole range. `find` must be decided by a suffix of the lines (the last line that
    /// matches, say): an answer from a window is then the answer over the whole range,
    /// and the usual case (the answer on the last lines) reads a few kilobytes, not the tail.
    pub fn find_from_end<T>(
        &self,
        first_window: u64,
        find: impl Fn(&[u8]) -> Option<T>,
    ) -> Result<Option<T>, InputError> {
        let total = self.end - self.start;
        let mut window = first_window.max(1);
        loop {
            let whole = window >= total;
            let from = if whole { self.start } else { self.end - window };
            let mut bytes = vec![0u8; usize::try_from(self.end - from).unwrap_or(usize::MAX)];
            let mut got = 0;
            while got < bytes.len() {
                let n = self.read_at(&mut bytes[got..], from + got as u64)?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            bytes.truncate(got);
            // A window that starts inside the range starts inside a line; the range's own
            // first line is cut only when the range starts inside the file.
            let lines = if from > 0 {
                match memchr::memchr(b'\n', &bytes) {
                    Some(i) => &bytes[i + 1..],
                    None => &[][..],
                }
            } else {
                &bytes[..]
            };
            if let Some(t) = find(lines) {
                return Ok(Some(t));
            }
            if whole {
                return Ok(None);
            }
            window = window.saturating_mul(4);
        }
    }
}

/// Read stdin (or any stream) under the kind's limit.
pub(crate) fn read_stream(r: impl Read, kind: Kind, limit: u64) -> Result<Vec<u8>, InputError> {
    read_limited(r, limit, "stdin", kind)
}

/// [`read_stream`] as UTF-8 text.
pub(crate) fn read_stream_text(r: impl Read, kind: Kind, limit: u64) -> Result<String, InputError> {
    to_text(read_stream(r, kind, limit)?, "stdin")
}

fn to_text(bytes: Vec<u8>, path: &str) -> Result<String, InputError> {
    String::from_utf8(bytes)
        .map_err(|e| InputError::NotUtf8 { path: path.to_string(), at: e.utf8_error().valid_up_to() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};

    #[test]
    fn a_regular_file_within_the_limit_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.json");
        std::fs::write(&p, b"{\"a\":1}").unwrap();
        assert_eq!(read_file(&p, Kind::Findings, 7).unwrap(), b"{\"a\":1}");
        let e = read_file(&p, Kind::Findings, 6).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { limit: 6, .. }), "{e}");
        assert!(e.to_string().contains("f.json") && e.to_string().contains("findings"), "{e}");
    }

    #[test]
    fn devices_are_refused_even_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("premerge.toml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let start = Instant::now();
        let e = read(&link, Kind::Config).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { what: "a device", .. }), "{e}");
        assert!(start.elapsed() < Duration::from_secs(2));
        assert!(e.to_string().starts_with(&format!("{}: not a regular file (a device)", link.display())), "{e}");
    }

    #[test]
    fn a_fifo_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("transcript.jsonl");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_tail(&fifo, Kind::Transcript, 1024).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { what: "a FIFO", .. }), "{e}");
        let e = read(&fifo, Kind::Config).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { what: "a FIFO", .. }), "{e}");
    }

    #[test]
    fn directories_and_missing_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), Kind::Evidence).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { what: "a directory", .. }), "{e}");
        let missing = dir.path().join("nope.json");
        assert!(read(&missing, Kind::Evidence).unwrap_err().is_missing());
        assert_eq!(read_text_if_present(&missing, Kind::Config).unwrap(), None);
    }

    #[test]
    fn stdin_is_bounded() {
        let zeros = std::io::repeat(0).take(10 << 20);
        let e = read_stream(zeros, Kind::HookPayload, 1 << 20).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { .. }), "{e}");
        assert_eq!(read_stream_text(&b"ok"[..], Kind::HookPayload, 2).unwrap(), "ok");
        let e = read_stream_text(&b"\xff"[..], Kind::HookPayload, 2).unwrap_err();
        assert!(matches!(e, InputError::NotUtf8 { at: 0, .. }), "{e}");
    }

    #[test]
    fn the_tail_starts_at_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut f = std::fs::File::create(&p).unwrap();
        for i in 0..100 {
            writeln!(f, "{{\"n\":{i}}}").unwrap();
        }
        drop(f);
        let tail = read_tail(&p, Kind::Transcript, 30).unwrap();
        let text = String::from_utf8(tail).unwrap();
        assert!(text.ends_with("{\"n\":99}\n"), "{text}");
        assert!(text.starts_with("{\"n\":"), "{text}");
        assert!(text.len() <= 30);
        // A file shorter than the limit is read whole.
        assert_eq!(
            read_tail(&p, Kind::Transcript, 1 << 20).unwrap().len(),
            std::fs::metadata(&p).unwrap().len() as usize
        );
        // A cut first line longer than the reading chunk is skipped whole.
        let long = dir.path().join("long.jsonl");
        let first = format!("{{\"cut\":\"{}\"}}\n", "x".repeat(40_000));
        std::fs::write(&long, format!("{first}{{\"n\":1}}\n{{\"n\":2}}\n")).unwrap();
        let tail = read_tail(&long, Kind::Transcript, 40_010).unwrap();
        assert_eq!(String::from_utf8(tail).unwrap(), "{\"n\":1}\n{\"n\":2}\n");
        // A tail with no line end at all holds no whole line.
        std::fs::write(&long, "y".repeat(50_000)).unwrap();
        assert!(read_tail(&long, Kind::Transcript, 1000).unwrap().is_empty());
    }

    /// The lines [`read_tail`]'s bytes hold, split as the session reader split them.
    fn lines_of(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        if v.last().is_some_and(Vec::is_empty) {
            v.pop();
        }
        v
    }

    fn streamed(t: &Tail, chunk: usize) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        t.for_each_line_in(chunk, |l| got.push(l.to_vec())).unwrap();
        got
    }

    #[test]
    fn streamed_lines_are_the_lines_of_the_tail_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let long = "z".repeat(5000);
        let contents: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"\n".to_vec(),
            b"one line without an end".to_vec(),
            b"a\nbb\nccc\n".to_vec(),
            // CRLF kept in the line (the session reader drops it), blank lines kept.
            b"{\"a\":1}\r\n\r\n\n{\"b\":2}\r\n".to_vec(),
            // A last line without a line end (Claude Code still writing).
            b"{\"a\":1}\n{\"torn\":".to_vec(),
            // Bad UTF-8 passes through as bytes.
            b"ok\n\xff\xfe bad \xc3\n\xe2\x82\n".to_vec(),
            // Lines far longer than the reading chunk, between short ones.
            format!("s\n{long}\nt\n{long}{long}\nu").into_bytes(),
        ];
        for c in &contents {
            std::fs::write(&p, c).unwrap();
            for limit in [1u64, 2, 5, 13, 100, 4999, 5001, 10_010, 1 << 20] {
                let whole = read_tail(&p, Kind::Transcript, limit).unwrap();
                let t = Tail::open(&p, Kind::Transcript, limit).unwrap();
                for chunk in [1, 2, 3, 7, 64, 4096, TAIL_CHUNK] {
                    assert_eq!(streamed(&t, chunk), lines_of(&whole), "limit {limit} chunk {chunk}: {c:?}");
                }
            }
        }
    }

    #[test]
    fn a_line_longer_than_the_tail_gives_no_line_and_a_long_last_line_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        // One huge line over the cap: the tail starts inside it and holds no line end.
        std::fs::write(&p, format!("{}\n", "x".repeat(300_000))).unwrap();
        let t = Tail::open(&p, Kind::Transcript, 100_000).unwrap();
        assert!(streamed(&t, 64).is_empty());
        assert!(streamed(&t, TAIL_CHUNK).is_empty());
        assert!(read_tail(&p, Kind::Transcript, 100_000).unwrap().is_empty());
        // The same line inside the cap is passed whole, the buffer grown for it.
        let t = Tail::open(&p, Kind::Transcript, 1 << 20).unwrap();
        let lines = streamed(&t, 4096);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), 300_000);
        // A cut first line longer than many chunks is skipped whole.
        std::fs::write(&p, format!("{}\n{{\"n\":1}}\n{{\"n\":2}}", "y".repeat(200_000))).unwrap();
        let t = Tail::open(&p, Kind::Transcript, 150_000).unwrap();
        assert_eq!(streamed(&t, 1000), vec![b"{\"n\":1}".to_vec(), b"{\"n\":2}".to_vec()]);
    }

    #[test]
    fn the_tail_is_the_range_at_open_and_only_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, "a\nb\n").unwrap();
        let t = Tail::open(&p, Kind::Transcript, 1 << 20).unwrap();
        // Lines appended after the open are not part of this read.
        std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(b"c\n").unwrap();
        assert_eq!(streamed(&t, 1), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(t.find_from_end(1, |l| (!l.is_empty()).then(|| l.to_vec())).unwrap(), Some(b"a\nb\n".to_vec()));
        let e = Tail::open(dir.path(), Kind::Transcript, 10).err().unwrap();
        assert!(matches!(e, InputError::NotRegular { what: "a directory", .. }), "{e}");
        assert!(Tail::open(&dir.path().join("none"), Kind::Transcript, 10).err().unwrap().is_missing());
    }

    #[test]
    fn searching_from_the_end_answers_as_the_whole_tail_would() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        // The last line holding a `k` and its value: decided by a suffix of the lines.
        let last_k = |b: &[u8]| {
            b.split(|&c| c == b'\n')
                .rev()
                .find(|l| l.starts_with(b"k"))
                .map(|l| String::from_utf8_lossy(l).into_owned())
        };
        let filler = "f".repeat(700);
        let cases = [
            format!("k0\n{filler}\n{filler}\nk1\n{filler}\n"),
            format!("k0\n{filler}\n{filler}\n{filler}\n{filler}\n{filler}\nend"),
            format!("{filler}\n{filler}\n{filler}\n"),
            format!("k0 first line\n{filler}\n{filler}\n{filler}\nk9 torn"),
            "k-only".to_string(),
            String::new(),
        ];
        for c in &cases {
            std::fs::write(&p, c).unwrap();
            for limit in [3u64, 700, 1500, 2200, 1 << 20] {
                let t = Tail::open(&p, Kind::Transcript, limit).unwrap();
                let want = last_k(&read_tail(&p, Kind::Transcript, limit).unwrap());
                for window in [1u64, 10, 100, 1000, 1 << 20] {
                    assert_eq!(t.find_from_end(window, last_k).unwrap(), want, "limit {limit} window {window}: {c}");
                }
            }
        }
    }

    #[test]
    fn messages_stay_on_one_line() {
        assert_eq!(escape_for_message("a\nb\u{202e}c\u{1b}[31m"), "a\\nb\\u{202e}c\\u{1b}[31m");
        // Printable text, ASCII or not, as it is; DEL and C1 controls escaped.
        assert_eq!(escape_for_message("limit: u8 ~!"), "limit: u8 ~!");
        assert_eq!(escape_for_message("caf\u{e9}\u{7f}\u{85}"), "caf\u{e9}\\u{7f}\\u{85}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad\nname");
        let e = read(&p, Kind::Evidence).unwrap_err().to_string();
        assert!(!e.contains('\n') && e.contains("bad\\nname"), "{e}");
    }
}
