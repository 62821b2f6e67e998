//! The session's structure, read from the agent's transcript (Claude Code's JSONL):
//! what the user said since the task started (an instruction to stop, to pause for a
//! review, to keep the scope small; an interrupt), what the agent's tools did (test
//! and build commands with their exit status and failure counts, commits, edits,
//! edits of the plan file, the files edited and the commands run, an error in a file
//! the session edited) and the agent's last text. These are facts the stop gate
//! weighs a final message's claims against (`builtin::decide_session`).
//!
//! Pure: the caller reads a bounded tail of the file and hands over its text. Every
//! line is judged alone: a line that does not parse (the torn last line Claude Code
//! is still writing, or the first, cut line of a tail) or an entry of a kind this
//! module does not know (`summary`, `system`, a newer format's) is counted and
//! skipped. Only `type: user` entries whose content is the user's own text are user
//! turns: a tool result is the output of a tool, whatever it quotes (a file that
//! says "user: stop here" is not the user speaking), and `isMeta` / compact-summary
//! entries are written by the agent's harness.

use std::collections::HashMap;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::reasons::norm;

/// How many characters of a tool's output are kept for reading its failure count:
/// test runners print their summary at the end, so the end is kept.
pub const MAX_TOOL_OUTPUT_CHARS: usize = 8 * 1024;
/// How many characters of a user turn or a command are quoted as evidence.
pub const MAX_QUOTE_CHARS: usize = 160;
/// A successful tool output is searched for an access refusal only up to this size: a
/// probe of a credential prints a line, a test or build log that succeeded prints pages.
pub const MAX_PROBE_OUTPUT: usize = 1024;
/// A successful tool output is read for variables it shows set (`NAME=value`) only up
/// to this size: a probe of the environment (`env`, `printenv`, `cat .env`, `grep TOKEN
/// .env`) prints lines, not pages, and splitting every line of a build log or a file
/// read cost the gate about 2 ms on a 10 MB transcript.
pub const MAX_ASSIGNMENT_OUTPUT: usize = 16 * 1024;
/// At most this many tool calls wait for their result at once; a transcript with
/// more unanswered calls than this is not one an agent writes, and the map stays bounded.
pub const MAX_PENDING_CALLS: usize = 4096;
/// At most this many distinct edited paths and shell commands are kept: they tie plan
/// steps to the session's work by their words, and a session that edits or runs more
/// than this has long left the plan's scale (the counts stay exact).
pub const MAX_KEPT_PATHS: usize = 256;

/// What the user asked for about stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstructionKind {
    /// Stop at a point ("stop after step 2", "then stop").
    Stop,
    /// Pause for the user ("wait for my review", "check with me before ...").
    Pause,
    /// Keep the work small ("only do the parser", "keep this session short").
    Scope,
    /// The user interrupted the agent (`[Request interrupted by user]`).
    Interrupt,
}

impl InstructionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InstructionKind::Stop => "stop",
            InstructionKind::Pause => "pause",
            InstructionKind::Scope => "scope",
            InstructionKind::Interrupt => "interrupt",
        }
    }
}

/// A user instruction still in force when the agent stopped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Instruction {
    pub kind: InstructionKind,
    /// The user's words (bounded, one line).
    pub quote: String,
}

/// A test or build command and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CommandRun {
    pub command: String,
    /// Exit status 0 and no failure in its output.
    pub ok: bool,
    /// The failure count its output reports, when it reports one.
    pub failures: Option<u64>,
}

/// What the transcript shows (also sent to an external authority as `session`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SessionFacts {
    /// Entries read (lines that parsed as a JSON object).
    pub entries: usize,
    /// Lines skipped: not JSON (a torn line) or of a kind not read here.
    pub skipped: usize,
    /// The user's own text turns (not tool results, not harness entries).
    pub user_turns: usize,
    /// The stop, pause or scope instruction (or interrupt) in force at the end.
    pub instruction: Option<Instruction>,
    pub tool_calls: usize,
    /// Tool results that were errors (non-zero exit, a failed edit, ...).
    pub tool_errors: usize,
    /// The first line of the last error result.
    pub last_error: Option<String>,
    pub test_runs: usize,
    pub last_test: Option<CommandRun>,
    pub last_build: Option<CommandRun>,
    /// Successful `git commit` commands.
    pub commits: usize,
    /// Edits (Edit, MultiEdit, Write, NotebookEdit) of files other than the plan.
    pub work_edits: usize,
    /// Edits of a plan file.
    pub plan_edits: usize,
    /// The text of the agent's last message with text (its end, bounded like a stop reason).
    pub last_assistant_text: Option<String>,
    /// Every user turn only asked a question (no request to change anything).
    pub questions_only: bool,
    /// Clauses of the user's turns that leave something out or take it over ("I'm
    /// doing the frontend myself", "skip the docs for now"), normalised; an open plan
    /// step they name is the user's, not the agent's (`builtin`).
    pub left_to_user: Vec<String>,
    /// The last verification run, a test or a build/check command, whichever ran
    /// last: a failing `cargo clippy` after a passing `cargo test` is the newest fact.
    pub last_check: Option<CommandRun>,
    /// Edits of files other than the plan made after the last verification run.
    pub edits_after_check: usize,
    /// Where the user's stop instruction in force says to stop, when it names a point
    /// ("stop after step 3", "do steps 1-3", "stop before the rebuild command").
    pub stop_point: Option<StopPoint>,
    /// Tool results whose output says a credential is missing or access was refused
    /// (`AccessDenied`, `401`, `no credentials`, `permission denied`, `not set`),
    /// whatever their exit status: an obstacle the tools met.
    pub access_failures: usize,
    /// The position (1-based, among all of the plan's boxes) of the first unchecked
    /// step of the durable plan in the work tree. Not read from the transcript: the
    /// caller sets it from the plan file, so that a numbered stop point can be
    /// compared with where the plan stands.
    pub first_open_step: Option<usize>,
    /// The distinct files edited (other than the plan), in the order first edited, at
    /// most [`MAX_KEPT_PATHS`]: a plan step ties to the work by a word of a path.
    pub edited_paths: Vec<String>,
    /// The shell commands run (bounded, one line each, at most [`MAX_KEPT_PATHS`]). Not
    /// sent to an external authority: a command line may carry a secret (a header, an
    /// exported token), and the commands a rule cites are in `last_test` / `last_build`.
    #[serde(skip)]
    pub commands: Vec<String>,
    /// Work edits of files that are not prose (not `.md`, `.rst`, `.txt`, a README or
    /// a CHANGELOG).
    pub code_edits: usize,
    /// Of [`Self::code_edits`], those made after the last verification run: a passing
    /// run older than them does not verify the code as it stands.
    pub code_edits_after_check: usize,
    /// When the last error result was a build, test or check whose output names a
    /// file the session edited (`src/uart.rs:52`), that file: an error in the agent's
    /// own edit is work, not an obstacle.
    pub own_error: Option<String>,
    /// The user's last turn holds a word of stopping, waiting or limiting ("review",
    /// "only", "skip", "later", "don't") that no instruction was read from: a message
    /// that says it follows the user's instruction may be repeating words the reader
    /// does not know, so such a claim is given the benefit of the doubt.
    pub last_turn_limits: bool,
    /// Since round 5: the newest user turn with a word of leave to stop short (skip,
    /// drop, forget, later, I'll do, stop, pause, hold, wait, enough, that's it, ...),
    /// read wide and with typos (`readings::gives_leave`), unless a later turn asked
    /// to go on. Only ever a reason to believe a message that says it followed it.
    pub licence: Option<String>,
    /// That turn's leave ends or pauses the session ("stop pls", "wait for me",
    /// "we continue tonight"), not only drops a step of it.
    pub licence_stops: bool,
    /// Since round 5: steps a clause of leave names by number ("skip step 3", "I'll do
    /// steps 4 and 5"); the caller adds those steps' text to [`Self::left_to_user`].
    pub left_step_numbers: Vec<usize>,
    /// The text of those steps, as the plan file has them (set by the caller): an open
    /// step equal to one is the user's.
    pub left_steps: Vec<String>,
    /// Since round 5: classes of obstacle outside the code (`access`, `network`,
    /// `rate limit`, `disk`, `service`) that a failed or refused tool result met.
    pub obstacles: Vec<String>,
    /// Each obstacle met, with the program that met it: a later success of the same
    /// program clears it (the obstacle was passed).
    #[serde(skip)]
    pub obstacles_by_program: Vec<(String, String)>,
    /// Since round 5: a numeric condition of the user's on the stop ("until the bench
    /// is under 50ms, then stop", "if more than 10 tables, stop and ask").
    pub condition: Option<super::readings::Condition>,
    /// Whether a tool result after that condition showed it met (`true`), showed only
    /// numbers that miss it (`false`), or showed nothing comparable (absent).
    pub condition_met: Option<bool>,
    /// Since round 5: the newest failed command's slip of the agent's own (a mistyped
    /// program, `Exit code 127`; a path one letter off a path of the session), unless
    /// a later command succeeded.
    pub own_slip: Option<String>,
    /// Since round 5: test runs that ran the whole suite (no test file, no filter).
    pub full_test_runs: usize,
    /// Since round 5: build runs that do more than compile (a check, a lint, `make`).
    pub check_runs: usize,
    /// Since round 6: a stop trigger the user set in words ("only stop early if flat
    /// config can't express our custom rules"), the clause as normalised.
    pub stop_if: Option<String>,
    /// That trigger's content words, which a failed tool result must name.
    #[serde(skip)]
    pub stop_if_words: Vec<String>,
    /// A tool result after the trigger was set named it: the trigger may have fired.
    pub stop_if_met: bool,
    /// Since round 6: a command the user named as the point to stop at ("stop when
    /// `ledger import samples/a.ofx` runs cleanly").
    pub run_condition: Option<String>,
    /// How the newest run of that command ended (`true`: exit 0), absent when it never ran.
    pub run_condition_ok: Option<bool>,
    /// Since round 6: documents the user told the agent to follow ("follow the phases
    /// in CONTRIBUTING.md", "do what the runbook says"), by the word a message names
    /// them with: their stop points are the user's.
    pub adopted: Vec<String>,
    /// Since round 6: the user's own turns, each clipped to one line (at most
    /// [`MAX_KEPT_TURNS`], the newest kept), so that a request can be weighed against
    /// the plan's steps: a task that names no plan and shares no word with an open step
    /// is the session's own task.
    #[serde(skip)]
    pub user_texts: Vec<String>,
    /// Since round 6b: the names of variables a successful tool result printed with a
    /// value (`VITE_MAPBOX_TOKEN=pk...` of a `grep` of `.env`), lower case, at most
    /// [`MAX_KEPT_PATHS`]: a credential the message then calls missing was shown set.
    /// Names only, never values; not sent (a name can still say too much).
    #[serde(skip)]
    pub shown_set: Vec<String>,
}

/// The user's turns kept for [`SessionFacts::user_texts`]: a session's requests are a
/// few turns; a long session's earliest turns matter less than its newest.
pub const MAX_KEPT_TURNS: usize = 16;

/// The point a user's stop instruction names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StopPoint {
    /// The last step to do, by number ("after step 3", "steps 1-3", "the first two steps").
    pub last_step: Option<usize>,
    /// Content words of the step to stop before ("before the rebuild command").
    pub before: Vec<String>,
    /// Content words of the step to stop after ("stop after the parser").
    pub after: Vec<String>,
    /// The stop is a condition on the tests or the build ("stop once they're green",
    /// "until the suite passes"): met only when the last check passed.
    pub when_passing: bool,
}

impl SessionFacts {
    /// Whether a user turn asks a question (a `?` in one of the turns kept).
    pub fn asked_question(&self) -> bool {
        self.user_texts.iter().any(|t| t.contains('?'))
    }

    /// Whether anything but the plan was worked on: an edit, a commit of it, or a
    /// test or build run.
    pub fn did_work(&self) -> bool {
        self.work_edits > 0 || self.test_runs > 0 || self.last_build.is_some()
    }

    /// One line for the log: the facts a rule may cite.
    pub fn summary(&self) -> String {
        let run = |r: &Option<CommandRun>| match r {
            None => "none".to_string(),
            Some(r) => format!(
                "`{}` {}{}",
                r.command,
                if r.ok { "passed" } else { "failed" },
                r.failures.map(|n| format!(" ({n} failures)")).unwrap_or_default()
            ),
        };
        format!(
            "transcript: {} entries ({} skipped), {} user turns, instruction {}, {} tool calls ({} errors), last test {}, last build {}, {} commits, {} edits ({} of the plan)",
            self.entries,
            self.skipped,
            self.user_turns,
            self.instruction.as_ref().map_or("none".to_string(), |i| format!("{} \"{}\"", i.kind.as_str(), i.quote)),
            self.tool_calls,
            self.tool_errors,
            run(&self.last_test),
            run(&self.last_build),
            self.commits,
            self.work_edits + self.plan_edits,
            self.plan_edits,
        )
    }
}

// ---------------------------------------------------------------------------
// The wire shape, read loosely: unknown fields are skipped without being built.

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(rename = "isMeta", default)]
    is_meta: bool,
    #[serde(rename = "isCompactSummary", default)]
    is_compact_summary: bool,
    #[serde(default)]
    message: Option<Message>,
    /// Codex CLI's rollout lines (`type: response_item`) carry their item here.
    #[serde(default)]
    payload: Option<CodexItem>,
}

/// One item of a Codex CLI rollout (`~/.codex/sessions/.../rollout-*.jsonl`): a
/// message (`role` user or assistant, `input_text` / `output_text` blocks), a tool
/// call (`function_call` with JSON `arguments`, `custom_tool_call` with a patch as
/// `input`) or its output (`function_call_output`, `custom_tool_call_output`),
/// paired by `call_id`.
#[derive(Deserialize)]
struct CodexItem {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    input: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    output: Option<ResultText>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Content>,
}

/// A message's content: a plain string or a list of blocks.
enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Deserialize, Default)]
struct Block {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<ToolInput>,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    content: Option<ResultText>,
}

#[derive(Deserialize, Default)]
struct ToolInput {
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    file_path: Option<String>,
    #[serde(default)]
    notebook_path: Option<String>,
}

/// A tool result's text: a string, or the text blocks of a list joined; anything
/// else is empty. Only its end is kept ([`MAX_TOOL_OUTPUT_CHARS`]).
struct ResultText(String);

fn keep_end(s: &str) -> String {
    // Found from the end and copied once as a slice: a long session has thousands of
    // results, and counting and collecting each output char by char was a tenth of a
    // stop's time on a 10 MB transcript.
    if s.len() <= MAX_TOOL_OUTPUT_CHARS {
        return s.to_string();
    }
    match s.char_indices().rev().nth(MAX_TOOL_OUTPUT_CHARS - 1) {
        Some((i, _)) => s[i..].to_string(),
        None => s.to_string(),
    }
}

impl<'de> Deserialize<'de> for ResultText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ResultText, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResultText;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tool result's content")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ResultText, E> {
                Ok(ResultText(keep_end(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ResultText, A::Error> {
                #[derive(Deserialize)]
                struct Part {
                    #[serde(default)]
                    text: Option<String>,
                }
                let mut out = String::new();
                while let Some(p) = seq.next_element::<Part>()? {
                    if let Some(t) = p.text {
                        out.push_str(&t);
                        out.push('\n');
                    }
                }
                Ok(ResultText(keep_end(&out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultText, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ResultText(String::new()))
            }
            fn visit_unit<E>(self) -> Result<ResultText, E> {
                Ok(ResultText(String::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<ResultText, E> {
                Ok(ResultText(String::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<ResultText, E> {
                Ok(ResultText(String::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<ResultText, E> {
                Ok(ResultText(String::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<ResultText, E> {
                Ok(ResultText(String::new()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content::Text(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::new();
                // A block of an unknown shape (a newer kind) is skipped, not an error.
                while let Some(b) = seq.next_element::<Lenient>()? {
                    blocks.extend(b.0);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Blocks(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<Content, E> {
                Ok(Content::Blocks(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

/// A block that is `None` when it is not an object (a newer format's scalar); an
/// object is read as a [`Block`] without building a value tree first.
struct Lenient(Option<Block>);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Lenient, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lenient;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Lenient, A::Error> {
                Block::deserialize(de::value::MapAccessDeserializer::new(map)).map(|b| Lenient(Some(b)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lenient, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------------------
// Vocabulary of the user's instructions (normalised, see `reasons::norm`).

const STOP_WORDS: &[&str] = &[
    " stop after",
    " stop once",
    " stop when",
    " stop there",
    " stop at ",
    " then stop",
    " and stop",
    " stop here",
    " stop for now",
    " stop for today",
    " dont go further",
    " dont go any further",
    " do not go further",
    " go no further",
    " no further than",
    " dont continue",
    " do not continue",
    " dont proceed",
    " do not proceed",
    " halt ",
    " thats enough for",
    " enough for today",
    " enough for now",
    " call it a day",
    " wrap up",
    " wrap it up",
    // Added this round: the end of the session said as an end, not as a stop.
    " stop before",
    " stop as soon",
    " stop right",
    " stop immediately",
    " dont go past",
    " do not go past",
    " up to step",
    " as far as step",
    " until step",
    " thats all for",
    " thats it for",
    " thats all i need",
    " thats all i wanted",
    " good enough for now",
    " good for now",
    " enough for this session",
    " leave it there",
    " leave it at that",
];
const PAUSE_WORDS: &[&str] = &[
    " pause",
    " wait for me",
    " wait for my",
    " wait until i",
    " check with me",
    " check in with me",
    " let me review",
    " let me look",
    " let me check",
    " let me see",
    " let me test",
    " let me try",
    " for my review",
    " for me to review",
    " i want to review",
    " i want to look",
    " i want to see",
    " id like to review",
    " id like to look",
    " before you continue",
    " before continuing",
    " before going further",
    " before going on",
    " before moving on",
    " before you move on",
    " before you go on",
    " hold off",
    " ask me before",
    " ask me first",
    " come back to me",
    " report back",
    " show me",
];
const SCOPE_WORDS: &[&str] = &[
    " only do",
    " just do",
    " only the first",
    " just the first",
    " only step",
    " just step",
    " only the ",
    " keep it short",
    " keep this short",
    " keep the session short",
    " keep this session short",
    " short session",
    " quick session",
    " dont do the rest",
    " do not do the rest",
    " leave the rest",
    " skip the rest",
    " not the rest",
    " nothing else",
    " nothing more",
    " limit yourself",
    " just fix",
    " only fix",
    " just this",
    " only this",
    " one step",
    " a single step",
    " just the ",
    // Added after the held-out measurement (docs/gate.md lists the misses):
    " only handle",
    " only work on",
    " only touch",
    " just handle",
    " just work on",
    " keep it minimal",
    " keep this minimal",
    " keep the change minimal",
    " keep changes minimal",
    " dont change anything",
    " do not change anything",
    " dont touch anything",
    " dont edit",
    " do not edit",
    " no code changes",
    " quick question",
    " just a question",
    " just tell me",
];
/// At most this many clauses that leave work to the user are kept.
pub const MAX_LEFT_CLAUSES: usize = 64;

/// A clause that leaves something out of the agent's work or takes it over.
const LEAVE: &[&str] = &[
    " leave",
    " skip",
    " myself",
    " ill do",
    " ill handle",
    " ill take",
    " ill write",
    " ill finish",
    " ill add",
    " ill deal",
    " i will do",
    " i will handle",
    " i will take",
    " im doing",
    " i am doing",
    " im handling",
    " im taking",
    " im working on",
    " is mine",
    " are mine",
    " someone else",
    " another session",
    " separately",
    " out of scope",
    " not in scope",
    " not part of",
    " another pr",
    " dont do",
    " do not do",
    " dont touch",
    " do not touch",
    " dont bother",
    " no need to",
    " not now",
    " not yet",
    " for later",
    " until later",
    " tomorrow",
    " next week",
    // Since round 5: a step dropped in other words.
    " forget",
    " drop ",
    " never mind",
    " nevermind",
    " omit",
    " ignore",
    " scrap",
    " exclude",
    " not needed",
    " dont need",
    " no longer",
    " writes those",
    " does those",
    " sets those up",
    " takes care of",
];

/// A whole turn that is a question for information: it asks at least one question
/// (a sentence ending with `?`), every question asks for information rather than a
/// change ("why does CI take 20 minutes?", "quick q: xunit or nunit? and do they run
/// in parallel?"; not "can you fix it?"), and every other sentence is a short remark
/// that asks for no change ("I thought it used to be 8", "just curious"). Lead-ins
/// ("unrelated question -", "quick q:", "btw") are skipped. Since round 6 read by this
/// structure rather than by the first word of the turn.
fn is_question_only(t: &str) -> bool {
    const OPENERS: &[&str] = &[
        "where", "what", "whats", "why", "whys", "how", "hows", "which", "who", "whos", "when", "is", "are", "does",
        "do", "did", "was", "were", "has", "have", "had", "any", "isnt", "arent", "doesnt", "dont", "didnt", "wasnt",
        "should", "shall", "will", "would", "could", "can", "am", "whose", "wheres", "whom", "whats",
    ];
    const LEADINS: &[&str] = &[
        "quick",
        "question",
        "questions",
        "q",
        "qq",
        "unrelated",
        "random",
        "side",
        "small",
        "dumb",
        "silly",
        "curious",
        "just",
        "btw",
        "hey",
        "hi",
        "hello",
        "so",
        "ok",
        "okay",
        "also",
        "and",
        "but",
        "oh",
        "hmm",
        "sorry",
        "actually",
        "fyi",
        "real",
        "one",
        "another",
        "a",
        "general",
        "offtopic",
        "off",
        "topic",
        "then",
        "wait",
        "well",
        "um",
        "uh",
        "random",
        "thought",
        "aside",
        "out",
        "of",
        "curiosity",
        "re",
        "about",
    ];
    // Asked of the agent as a task, not as a question: "can you fix ...?".
    const TELL: &[&str] =
        &["tell", "explain", "remind", "clarify", "describe", "summarise", "summarize", "show", "help", "list"];
    let t = t.trim();
    if !t.contains('?') {
        return false;
    }
    let mut asked = false;
    let mut piece = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        let end = match c {
            '?' | '\n' => true,
            '.' | '!' | ':' => chars.peek().is_none_or(|n| n.is_whitespace()),
            _ => false,
        };
        let last = chars.peek().is_none();
        if !end {
            piece.push(c);
            if !last {
                continue;
            }
        }
        let question = c == '?';
        let n = norm(&piece);
        piece.clear();
        let words: Vec<&str> = n.split(' ').filter(|w| !w.is_empty()).collect();
        if words.is_empty() {
            continue;
        }
        if !question {
            // A lead-in before a colon ("before we start on anything: what ...?") asks
            // for nothing unless it names a change itself ("fix the parser: ...").
            let lead_in = c == ':' && !has(&n, STRONG_CHANGE);
            if !lead_in && !asks_no_change(&n) {
                return false;
            }
            continue;
        }
        let start = words.iter().position(|w| !LEADINS.contains(w)).unwrap_or(words.len());
        let rest = &words[start..];
        // "can you / could you / would you ..." asks the agent to act, unless what it
        // asks is to tell ("can you explain why ...?").
        if let [first, "you", verb, ..] = rest
            && matches!(*first, "can" | "could" | "would" | "will" | "wont")
            && !TELL.contains(verb)
        {
            return false;
        }
        // "please explain ...?" asks to be told; "please fix ...?" asks for a change.
        if let [please, verb, ..] = rest
            && matches!(*please, "please" | "pls" | "plz")
            && !TELL.contains(verb)
        {
            return false;
        }
        if n.contains(" why not ") {
            return false;
        }
        // "(please) explain why ...?" asks to be told: a question unless it also asks
        // for a change ("explain and fix ...?").
        let told = rest.iter().take(2).any(|w| TELL.contains(w));
        if told && has(&n, STRONG_CHANGE) {
            return false;
        }
        // A question that opens otherwise ("tests xunit or nunit?") is still one when it
        // names no change.
        if !told && !rest.first().is_some_and(|w| OPENERS.contains(w)) && !asks_no_change(&n) {
            return false;
        }
        asked = true;
    }
    asked
}

/// Verbs that ask for a change whatever else a question-shaped turn says ("explain and
/// fix ...?").
const STRONG_CHANGE: &[&str] = &[
    " fix",
    " add ",
    " implement",
    " change",
    " update",
    " write",
    " create",
    " remove",
    " delete",
    " refactor",
    " rename",
    " migrate",
    " commit",
    " push",
    " deploy",
];

/// Whether the text after a question asks for nothing to be changed: empty, or a
/// short remark with no verb of work ("just want the number", "no rush").
fn asks_no_change(rest: &str) -> bool {
    const CHANGE: &[&str] = &[
        " fix",
        " add",
        " implement",
        " change",
        " update",
        " make",
        " write",
        " create",
        " remove",
        " delete",
        " refactor",
        " build",
        " commit",
        " push",
        " rename",
        " move",
        " migrate",
        " continue",
        " finish",
        " do ",
        " also",
        " then",
        " run ",
        " edit",
        " replace",
        " bump",
        " install",
        " deploy",
        " set ",
        " start",
    ];
    let n = norm(rest);
    n.trim().is_empty() || (n.split(' ').filter(|w| !w.is_empty()).count() <= 12 && !has(&n, CHANGE))
}

/// Words that ask for all of the work.
const WIDENING: &[&str] =
    &[" whole", " entire", " everything", " all of", " all the", " every ", " the rest", " remaining"];

/// A hand-back in words the lists do not hold, by its structure (`s` normalised):
/// the user as the subject of the next look ("so I can test it", "then I'll
/// review", "I want to try it first", "hand it back to me", "for me to check").
fn hands_back(s: &str) -> bool {
    const LOOK: &[&str] = &[
        "review", "look", "check", "test", "try", "verify", "read", "inspect", "approve", "compare", "play", "eyeball",
        "sanity", "decide", "confirm", "judge", "evaluate", "merge",
    ];
    const SUBJECT: &[&str] =
        &[" i can ", " i could ", " ill ", " i will ", " me to ", " i want to ", " id like to ", " i need to "];
    s.contains(" back to me")
        || s.contains(" over to me")
        || s.contains(" take it from there")
        || s.contains(" take it from here")
        || s.contains(" take over from there")
        || SUBJECT.iter().any(|subj| {
            s.match_indices(subj).any(|(i, m)| {
                let next: Vec<&str> = s[i + m.len()..].split(' ').filter(|w| !w.is_empty()).take(4).collect();
                // "I'll check in later", "I'll check back": the user leaves, the work goes on.
                next.iter()
                    .take(3)
                    .enumerate()
                    .any(|(k, w)| LOOK.contains(w) && !matches!(next.get(k + 1), Some(&"in" | &"back" | &"on")))
            })
        })
}

/// A scope limit in words the lists do not hold, by its structure (`s` normalised):
/// a restricting adverb where an instruction starts ("please only handle ...", "for
/// now just ..."), "keep" with a word of smallness ("keep this minimal"), or a
/// negated change of everything ("don't modify any files", "no code changes yet").
/// A sentence that widens the work ("just do the whole plan") limits nothing.
fn restricts_scope(s: &str) -> bool {
    const LEADS: &[&str] = &[
        "", "please", "pls", "you", "can", "could", "would", "will", "should", "to", "now", "so", "ok", "okay", "then",
        "but", "and", "today", "time", "session", "first", "must", "may",
    ];
    const NOT_AFTER: &[&str] = &[
        "now", "a", "wanted", "want", "need", "needs", "curious", "noticed", "saw", "got", "like", "as", "because",
        "in", "if", "when", "one", "once", "after", "before", "run", "ran", "re", "happened", "fails", "failed",
        "broke",
    ];
    const SMALL: &[&str] = &[
        "minimal",
        "minimum",
        "small",
        "smaller",
        "short",
        "shorter",
        "brief",
        "focused",
        "tight",
        "narrow",
        "lean",
        "simple",
        "light",
        "tiny",
        "limited",
        "contained",
        "scoped",
        "surgical",
    ];
    const CHANGE: &[&str] = &[
        "change",
        "changes",
        "changing",
        "modify",
        "modifying",
        "touch",
        "touching",
        "edit",
        "editing",
        "edits",
        "write",
        "writing",
        "commit",
        "committing",
        "alter",
        "altering",
        "refactor",
        "implement",
        "implementing",
        "fix",
        "fixing",
        "make",
        "apply",
        "rewrite",
    ];
    const TOTAL: &[&str] = &["anything", "any", "nothing", "code", "files", "file", "thing", "things", "stuff"];
    if has(s, WIDENING) {
        return false;
    }
    let w: Vec<&str> = s.split(' ').filter(|w| !w.is_empty()).collect();
    let restrictive = w.iter().enumerate().any(|(i, word)| {
        matches!(*word, "only" | "just" | "solely" | "exclusively")
            && LEADS.contains(&if i == 0 { "" } else { w[i - 1] })
            && w.get(i + 1).is_some_and(|next| !NOT_AFTER.contains(next))
    });
    let keep_small = w.iter().enumerate().any(|(i, word)| {
        matches!(*word, "keep" | "keeping" | "stay") && w[i + 1..].iter().take(4).any(|x| SMALL.contains(x))
    }) || s.contains(" minimal change")
        || s.contains(" minimal diff")
        || s.contains(" smallest possible")
        || s.contains(" bare minimum");
    let negated_change = w.iter().enumerate().any(|(i, word)| {
        matches!(*word, "dont" | "not" | "without" | "never" | "no")
            && w[i + 1..].iter().take(3).position(|x| CHANGE.contains(x)).is_some_and(|k| {
                let after = i + 1 + k + 1;
                w[after..].iter().take(3).any(|x| TOTAL.contains(x))
                    || (*word == "no" && matches!(w.get(i + 1 + k), Some(&"changes" | &"edits")))
            })
    });
    restrictive || keep_small || negated_change
}

/// Negations that turn a stop word around ("dont stop until ...").
const NEGATED: &[&str] = &[
    " dont stop",
    " do not stop",
    " never stop",
    " without stopping",
    " dont pause",
    " do not pause",
    " no need to",
    " dont wait",
    " do not wait",
    " dont check with me",
    " without checking",
    " dont ask",
    " do not ask",
    " no need for",
    " dont hold off",
    " not only",
    " not just",
    " until everything",
    " until all",
    " until the whole",
    " until its done",
    " until it is done",
    " until done",
    " until the plan",
];
/// A later turn that asks the agent to go on lifts an earlier instruction.
const GO_ON: &[&str] = &[
    " continue",
    " keep going",
    " go on ",
    " carry on",
    " finish",
    " do the rest",
    " all of it",
    " the rest of the plan",
    " go ahead",
    " proceed",
    " resume",
    " looks good",
    " lgtm",
    " approved",
];

/// The instruction of one user turn, if it gives one; `Some(None)` when it tells the
/// agent to go on (lifting an earlier one); `None` when it says neither.
fn instruction_of(text: &str) -> Option<Option<InstructionKind>> {
    let mut found = None;
    let mut go_on = false;
    // A turn that asks for all of the work ("do the whole plan; I'll test it after")
    // gives no structural limit in any of its sentences.
    let whole = norm(text);
    // Since round 6 also a turn that puts the user's look at the end of the work
    // ("I'll review the PR when it's all done", "end to end").
    let widened = has(&whole, WIDENING) || super::readings::asks_completion(&whole);
    // A request that names no plan is the session's task by itself: a small one
    // ("fix the footer link real quick") is a scope, whatever the plan holds.
    let names_plan = whole.contains(" plan");
    // Sentence by sentence: "Implement the parser. Then stop." has its stop in the second.
    for sentence in text.split(['.', '!', '?', ';', '\n']) {
        let s = fix_typos(&norm(sentence));
        if has(&s, NEGATED) {
            go_on = true;
            continue;
        }
        // Since round 6b: a look set for a later day ("I'll review the PR tomorrow")
        // comes after the work, and a sentence that orders the plan's work ("we need
        // demo data locally, do the seeding plan") asks for no early look.
        let later = has(&s, LATER_LOOK) && !has(&s, &[" pause", " wait", " hold", " before ", " stop"]);
        let orders_plan = names_plan && has(&s, ORDERS_PLAN);
        let kind = if has(&s, STOP_WORDS) || super::readings::opens_with_stop(&s) {
            Some(InstructionKind::Stop)
        } else if (has(&s, PAUSE_WORDS)
            // A look put at the end of the work ("let me review it when it's all done")
            // is no pause, unless the sentence also waits or holds.
            && (!super::readings::asks_completion(&s) || has(&s, &[" pause", " wait", " hold", " before "])))
            || (!widened && !later && !orders_plan && (hands_back(&s) || early_look(&s)))
        {
            Some(InstructionKind::Pause)
        } else if (has(&s, SCOPE_WORDS) || (!widened && (restricts_scope(&s) || (!names_plan && small_task(&s)))))
            // Since round 6b: "keep your answers short" limits the agent's talk, not the work.
            && !has(&s, TALK)
        {
            Some(InstructionKind::Scope)
        } else {
            None
        };
        match kind {
            Some(k) => found = Some(k),
            None => {
                go_on |= has(&s, GO_ON);
                // Since round 6b: a later sentence that sends the agent on ("... instead
                // of removing it. otherwise carry on") makes the limit before it a
                // change of the work, not its end.
                if matches!(found, Some(InstructionKind::Scope | InstructionKind::Pause))
                    && has(&s, GO_ON)
                    && RESUMES.iter().any(|r| s.trim_start().starts_with(r))
                {
                    found = None;
                }
            }
        }
    }
    match found {
        Some(k) => Some(Some(k)),
        None if go_on => Some(None),
        None => None,
    }
}

/// Words of a user's look set for a later day: after the work, not a pause now.
const LATER_LOOK: &[&str] =
    &[" tomorrow", " tonight", " next week", " on monday", " in the morning", " later today", " this evening"];
/// Words that order the plan's work in a sentence that names the plan.
const ORDERS_PLAN: &[&str] = &[" do the ", " implement the ", " build the ", " follow the ", " execute the "];
/// Words of the agent's replies: a limit on them limits the talk, not the work.
const TALK: &[&str] = &[
    " answers",
    " answer short",
    " replies",
    " reply short",
    " responses",
    " messages short",
    " your messages",
    " summaries",
    " explanations",
];
/// How a sentence that sends the agent on after a change opens (normalised, trimmed).
const RESUMES: &[&str] = &["otherwise", "carry on", "keep going", "then carry on", "then continue", "else", "rest as"];

fn has(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| text.contains(w))
}

/// The words an instruction turns on, which a hurried user misspells ("jsut fix",
/// "nothng else", "reveiw"): a word one adjacent swap or one dropped letter away from
/// one of them is read as it.
const TYPO_KEYWORDS: &[&str] =
    &["just", "only", "nothing", "else", "stop", "pause", "quick", "review", "wait", "after", "before", "enough"];

/// `s` (normalised) with near misses of [`TYPO_KEYWORDS`] replaced by the keyword.
fn fix_typos(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    out.push(' ');
    for w in s.split(' ').filter(|w| !w.is_empty()) {
        let fixed = TYPO_KEYWORDS.iter().find(|k| near_miss(w, k)).copied().unwrap_or(w);
        out.push_str(fixed);
        out.push(' ');
    }
    out
}

/// `word` is `key` with two adjacent letters swapped, or with one letter dropped (a
/// keyword of five letters or more, so that short words stay themselves).
fn near_miss(word: &str, key: &str) -> bool {
    let (w, k) = (word.as_bytes(), key.as_bytes());
    if w == k || w.len() < 4 {
        return false;
    }
    if w.len() == k.len() {
        let diff: Vec<usize> = (0..w.len()).filter(|&i| w[i] != k[i]).collect();
        return diff.len() == 2 && diff[1] == diff[0] + 1 && w[diff[0]] == k[diff[1]] && w[diff[1]] == k[diff[0]];
    }
    if w.len() + 1 == k.len() && k.len() >= 5 {
        return (0..k.len()).any(|skip| k[..skip] == w[..skip] && k[skip + 1..] == w[skip..]);
    }
    false
}

/// A small task as the whole request, by its structure (`s` normalised): a word of
/// smallness before a word of a task ("a quick fix", "small change", "tiny tweak"),
/// or an adverb of haste ("quickly", "real quick").
fn small_task(s: &str) -> bool {
    const SMALL: &[&str] = &["quick", "small", "tiny", "minor", "little", "simple", "trivial", "one", "single"];
    const TASK: &[&str] = &[
        "fix", "change", "tweak", "thing", "edit", "patch", "cleanup", "job", "task", "pass", "liner", "line", "typo",
        "typos", "bump",
    ];
    let w: Vec<&str> = s.split(' ').filter(|w| !w.is_empty()).collect();
    let adjective = w.windows(2).any(|p| SMALL.contains(&p[0]) && TASK.contains(&p[1]))
        || w.windows(3).any(|p| SMALL.contains(&p[0]) && TASK.contains(&p[2]) && p[0] != "one");
    let haste = w.iter().enumerate().any(|(i, x)| {
        *x == "quickly" || (*x == "quick" && i > 0 && matches!(w[i - 1], "real" | "really" | "very" | "super" | "so"))
    });
    adjective || haste
}

/// An early look asked for, by its structure (`s` normalised): a draft or early pull
/// request ("open a draft PR", "push a WIP merge request"), someone other than the
/// agent as the subject of the next look ("the design team wants to see it", "so QA
/// can try it"), or "wait" as an order. A sentence that also asks the agent to go on
/// ("open a draft PR and keep going") or puts the look at the end ("once it's all
/// done") asks for none.
fn early_look(s: &str) -> bool {
    const PR: &[&str] = &[" pr ", " prs ", " pull request", " mr ", " merge request"];
    const EARLY: &[&str] = &[" draft", " early", " wip ", " first cut", " work in progress", " progress"];
    const OTHERS: &[&str] = &[
        "team",
        "they",
        "reviewer",
        "reviewers",
        "designer",
        "designers",
        "design",
        "pm",
        "qa",
        "client",
        "customer",
        "boss",
        "manager",
        "lead",
        "product",
        "stakeholders",
        "everyone",
        "others",
        "people",
        "folks",
        "we",
        "us",
    ];
    const LOOK: &[&str] =
        &["see", "review", "look", "check", "test", "try", "approve", "sign", "demo", "feedback", "weigh", "comment"];
    const BUSY: &[&str] =
        &["ci", "build", "tests", "pipeline", "job", "deploy", "checks", "run", "command", "seconds", "minutes"];
    if has(s, GO_ON) || has(s, &[" as you go", " keep ", " meanwhile", " in the meantime", " then do", " then finish"])
    {
        return false;
    }
    if has(s, &[" done", " finished", " complete", " at the end", " when youre", " once youre"]) {
        return false;
    }
    let w: Vec<&str> = s.split(' ').filter(|w| !w.is_empty()).collect();
    let pr = has(s, PR) && has(s, EARLY);
    let others = w.iter().enumerate().any(|(i, x)| {
        OTHERS.contains(x)
            && w[i + 1..].iter().take(4).any(|y| LOOK.contains(y))
            && w[i + 1..].iter().take(3).any(|y| {
                matches!(
                    *y,
                    "want" | "wants" | "need" | "needs" | "will" | "can" | "could" | "should" | "to" | "has" | "have"
                )
            })
    });
    let wait = w.iter().enumerate().any(|(i, x)| {
        *x == "wait"
            && i > 0
            && matches!(w[i - 1], "and" | "then" | "please" | "pls" | "just")
            && !w[i + 1..].iter().take(4).any(|y| BUSY.contains(y))
    });
    pr || others || wait
}

// ---------------------------------------------------------------------------
// Commands

/// Test runners, as words of a command line (normalised).
const TEST_COMMANDS: &[&str] = &[
    " cargo test",
    " cargo nextest",
    " pytest",
    " py test",
    " npm test",
    " npm run test",
    " npm t ",
    " yarn test",
    " pnpm test",
    " pnpm run test",
    " bun test",
    " deno test",
    " go test",
    " make test",
    " make check",
    " jest",
    " vitest",
    " mocha",
    " mvn test",
    " mvn verify",
    " gradle test",
    " gradlew test",
    " rspec",
    " phpunit",
    " ctest",
    " tox",
    " nox",
    " mix test",
    " dotnet test",
    " m unittest",
    " rake test",
    " swift test",
    " zig build test",
    " just test",
    " ci/run",
    // Added after the held-out measurement: browser and end-to-end runners.
    " playwright test",
    " cypress run",
    " karma start",
    " wdio run",
    " bats ",
    " behave",
    " cucumber",
];
/// Build and check commands.
const BUILD_COMMANDS: &[&str] = &[
    " cargo build",
    " cargo check",
    " cargo clippy",
    " npm run build",
    " yarn build",
    " pnpm build",
    " tsc",
    " go build",
    " go vet",
    " make ",
    " mvn package",
    " mvn compile",
    " gradle build",
    " gradlew build",
    " cmake",
    " dotnet build",
    " swift build",
    " zig build",
    " mypy",
    " ruff",
    " eslint",
];

fn first_line(s: &str) -> String {
    let line = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    clip(line)
}

fn clip(s: &str) -> String {
    let one: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let one = one.trim();
    if one.chars().count() <= MAX_QUOTE_CHARS {
        return one.to_string();
    }
    let mut out: String = one.chars().take(MAX_QUOTE_CHARS - 3).collect();
    out.push_str("...");
    out
}

/// The failure count a runner's output reports: the largest number directly before
/// `failed`, `failing`, `failures` or `errors` (cargo's `2 failed`, pytest's
/// `1 failed, 3 passed`, jest's `Tests: 2 failed`, mocha's `3 failing`).
fn failure_count(output: &str) -> Option<u64> {
    let n = norm(output);
    let words: Vec<&str> = n.split(' ').filter(|w| !w.is_empty()).collect();
    let mut best: Option<u64> = None;
    for pair in words.windows(2) {
        if matches!(pair[1], "failed" | "failing" | "failures" | "failure" | "errors" | "error")
            && let Ok(k) = pair[0].parse::<u64>()
        {
            best = Some(best.map_or(k, |b| b.max(k)));
        }
    }
    best
}

/// Whether a result's text starts like a non-zero exit (`Exit code 101`).
fn exit_code_nonzero(output: &str) -> bool {
    let t = output.trim_start();
    t.strip_prefix("Exit code ")
        .map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next().unwrap_or(""))
        .is_some_and(|code| !code.is_empty() && code != "0")
}

/// Whether a runner's output says it failed although the command exited 0 (piped
/// through `tail`, for instance).
fn output_says_failed(output: &str) -> bool {
    output.contains("test result: FAILED")
        || output.contains("FAILURES!")
        || output.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("FAILED") || l.starts_with("FAIL ") || l.starts_with("--- FAIL") || l.starts_with("not ok ")
        })
}

/// What a pending tool call is.
enum Call {
    Test(String),
    Build(String),
    Commit,
    /// Another shell command: a test run when its output has a runner's shape.
    Shell(String),
    Other,
}

/// Read a transcript's text (a tail of the file, whole lines or not).
/// `plan_paths`: repository-relative plan files; an edit of a path ending with one
/// of them is a plan edit.
pub fn read(jsonl: &str, plan_paths: &[&str]) -> SessionFacts {
    read_bytes(jsonl.as_bytes(), plan_paths)
}

/// [`read`] over the file's bytes as they were read: lines are split and filtered as
/// bytes and only the lines that are parsed are checked for UTF-8 (by the parser), so
/// the megabytes of tool output a long transcript holds are searched once and never
/// validated or copied (docs/gate.md, "Speed"). A line that is not UTF-8 is read with
/// its bad bytes replaced, as a lossy copy of the whole text would read it.
pub fn read_bytes(jsonl: &[u8], plan_paths: &[&str]) -> SessionFacts {
    let read = read_lines(plan_paths, |each| {
        byte_lines(jsonl).for_each(each);
        Ok::<(), std::convert::Infallible>(())
    });
    match read {
        Ok(f) => f,
        Err(never) => match never {},
    }
}

/// [`read_bytes`] over lines handed over one at a time (without their `\n`) by `feed`,
/// which calls the function it is given once per line, in order: the stop gate streams
/// a transcript's tail through a small buffer instead of holding it whole
/// (`input::Tail`, docs/gate.md "Speed"). A `\r` ending a line is dropped here. An
/// error of `feed` (the file could not be read) is the result: no facts from half a tail.
pub fn read_lines<E>(
    plan_paths: &[&str],
    feed: impl FnOnce(&mut dyn FnMut(&[u8])) -> Result<(), E>,
) -> Result<SessionFacts, E> {
    let mut f = SessionFacts::default();
    let mut pending: HashMap<String, Call> = HashMap::new();
    let mut in_force: Option<Instruction> = None;
    let mut latest = Latest::default();
    let mut each = |line: &[u8]| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return;
        }
        if is_quiet_result(line, &pending) {
            f.entries += 1;
            return;
        }
        let parsed = serde_json::from_slice::<Entry>(line).or_else(|e| match std::str::from_utf8(line) {
            Ok(_) => Err(e),
            Err(_) => serde_json::from_str::<Entry>(&String::from_utf8_lossy(line)),
        });
        let Ok(entry) = parsed else {
            // Blank in the Unicode sense (no JSON at all) is not a torn entry.
            if !std::str::from_utf8(line).is_ok_and(|t| t.trim().is_empty()) {
                f.skipped += 1;
            }
            return;
        };
        f.entries += 1;
        if entry.kind.as_deref() == Some("event_msg") {
            // Codex CLI's events repeat the response items, but for one: a turn the
            // user aborted is an interrupt.
            match entry.payload {
                Some(p) if p.kind == "turn_aborted" => {
                    in_force = Some(Instruction { kind: InstructionKind::Interrupt, quote: "turn aborted".into() });
                }
                _ => f.skipped += 1,
            }
            return;
        }
        if entry.kind.as_deref() == Some("response_item") {
            match entry.payload {
                Some(item) => codex_item(&mut f, &mut pending, &mut in_force, &mut latest, item, plan_paths),
                None => f.skipped += 1,
            }
            return;
        }
        let Some(msg) = entry.message else {
            f.skipped += 1;
            return;
        };
        let kind = entry.kind.as_deref().or(msg.role.as_deref());
        match kind {
            Some("user") => {
                let harness = entry.is_meta || entry.is_compact_summary;
                let blocks = match msg.content {
                    Some(Content::Text(t)) => vec![Block { kind: "text".into(), text: Some(t), ..Block::default() }],
                    Some(Content::Blocks(b)) => b,
                    None => Vec::new(),
                };
                for b in blocks {
                    match b.kind.as_str() {
                        "text" if !harness => {
                            let text = b.text.unwrap_or_default();
                            user_text(&mut f, &mut in_force, &text);
                        }
                        "tool_result" => {
                            let call = b.tool_use_id.as_deref().and_then(|id| pending.remove(id));
                            let output = b.content.map(|c| c.0).unwrap_or_default();
                            tool_result(&mut f, &mut latest, call, b.is_error.unwrap_or(false), output);
                        }
                        _ => {}
                    }
                }
            }
            Some("assistant") => {
                let Some(Content::Blocks(blocks)) = msg.content else {
                    if let Some(Content::Text(t)) = msg.content
                        && !t.trim().is_empty()
                    {
                        f.last_assistant_text = Some(super::payload::bound_reason(&t));
                    }
                    return;
                };
                let mut text = Vec::new();
                for b in blocks {
                    match b.kind.as_str() {
                        "text" => text.extend(b.text.filter(|t| !t.trim().is_empty())),
                        "tool_use" => {
                            f.tool_calls += 1;
                            let call = tool_use(&mut f, b.name.as_deref(), b.input.unwrap_or_default(), plan_paths);
                            // Only the calls whose result is read wait for it; any other
                            // result counts only when it is an error.
                            if let Some(id) = b.id
                                && !matches!(call, Call::Other)
                                && pending.len() < MAX_PENDING_CALLS
                            {
                                pending.insert(id, call);
                            }
                        }
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    f.last_assistant_text = Some(super::payload::bound_reason(&text.join("\n")));
                }
            }
            _ => f.skipped += 1,
        }
    };
    feed(&mut each)?;
    f.instruction = in_force;
    latest.settle(&mut f);
    Ok(f)
}

/// Whether a line is, by a byte search, a successful result of a call whose result is
/// not read (a file read, a search, an edit): most of a long transcript's bytes, which
/// need not be parsed. It must carry a tool result, no text block (the user's words),
/// nothing that looks like an error (`is_error` true, an `Exit code`), and no
/// `tool_use_id` naming a call waiting for its result (an id that is not a plain
/// string counts as waiting). Anything else is parsed; a wrong guess here only costs
/// time, never a fact.
fn is_quiet_result(b: &[u8], pending: &HashMap<String, Call>) -> bool {
    let q = quiet_finders();
    q.result.find(b).is_some()
        && q.text.find(b).is_none()
        && q.exit_code.find(b).is_none()
        && !error_flag_set(b, q)
        && !names_pending(b, q, pending)
}

/// The lines of a text as `str::lines` splits them (at `\n`; [`read_lines`] drops a
/// trailing `\r`), by a SIMD search for the line ends.
fn byte_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut ends = memchr::memchr_iter(b'\n', text);
    std::iter::from_fn(move || {
        let end = match ends.next() {
            Some(i) => i,
            None if start < text.len() => text.len(),
            None => return None,
        };
        let line = &text[start..end];
        start = end + 1;
        Some(line)
    })
}

/// The byte searches of [`is_quiet_result`], built once: SIMD substring search over
/// megabytes of tool output is most of the gate's reading time (docs/gate.md, "Speed").
struct QuietFinders {
    result: memchr::memmem::Finder<'static>,
    text: memchr::memmem::Finder<'static>,
    exit_code: memchr::memmem::Finder<'static>,
    is_error: memchr::memmem::Finder<'static>,
    tool_use_id: memchr::memmem::Finder<'static>,
}

fn quiet_finders() -> &'static QuietFinders {
    static FINDERS: std::sync::OnceLock<QuietFinders> = std::sync::OnceLock::new();
    FINDERS.get_or_init(|| QuietFinders {
        result: memchr::memmem::Finder::new(b"\"tool_result\""),
        text: memchr::memmem::Finder::new(b"\"text\""),
        exit_code: memchr::memmem::Finder::new(b"Exit code"),
        is_error: memchr::memmem::Finder::new(b"\"is_error\""),
        tool_use_id: memchr::memmem::Finder::new(b"\"tool_use_id\""),
    })
}

/// Whether any `"is_error"` key of the line is followed by `true` (whitespace allowed).
fn error_flag_set(line: &[u8], q: &QuietFinders) -> bool {
    q.is_error.find_iter(line).any(|i| {
        let rest = value_after_key(&line[i + b"\"is_error\"".len()..]);
        rest.is_some_and(|v| v.starts_with(b"true"))
    })
}

/// Whether any `"tool_use_id"` of the line names a call waiting for its result. An
/// id that is not a plain JSON string (escapes, another type) is taken as pending,
/// so the line is parsed and serde decides.
fn names_pending(line: &[u8], q: &QuietFinders, pending: &HashMap<String, Call>) -> bool {
    if pending.is_empty() {
        return false;
    }
    q.tool_use_id.find_iter(line).any(|i| {
        let Some(v) = value_after_key(&line[i + b"\"tool_use_id\"".len()..]) else {
            return true;
        };
        let Some(body) = v.strip_prefix(b"\"") else {
            return true;
        };
        match memchr::memchr2(b'"', b'\\', body) {
            Some(end) if body[end] == b'"' => {
                std::str::from_utf8(&body[..end]).map_or(true, |id| pending.contains_key(id))
            }
            _ => true,
        }
    })
}

/// The bytes after a key's `:` (whitespace skipped), or `None` when no `:` follows.
fn value_after_key(rest: &[u8]) -> Option<&[u8]> {
    let rest = rest.trim_ascii_start().strip_prefix(b":")?;
    Some(rest.trim_ascii_start())
}

/// One Codex rollout item into the same facts as a Claude Code entry.
fn codex_item(
    f: &mut SessionFacts,
    pending: &mut HashMap<String, Call>,
    in_force: &mut Option<Instruction>,
    latest: &mut Latest,
    item: CodexItem,
    plan_paths: &[&str],
) {
    let texts = |c: Option<Content>| -> Vec<String> {
        match c {
            Some(Content::Text(t)) => vec![t],
            Some(Content::Blocks(b)) => b.into_iter().filter_map(|b| b.text).collect(),
            None => Vec::new(),
        }
    };
    let mut wait = |f: &mut SessionFacts, id: Option<String>, call: Call| {
        f.tool_calls += 1;
        if let Some(id) = id
            && !matches!(call, Call::Other)
            && pending.len() < MAX_PENDING_CALLS
        {
            pending.insert(id, call);
        }
    };
    match (item.kind.as_str(), item.role.as_deref()) {
        ("message", Some("user")) => {
            for t in texts(item.content) {
                // Codex writes its environment and the AGENTS.md instructions as user
                // messages in tags: the harness's, not the user's.
                let trimmed = t.trim_start();
                if !trimmed.starts_with('<') && !trimmed.starts_with("# AGENTS.md") {
                    user_text(f, in_force, &t);
                }
            }
        }
        ("message", Some("assistant")) => {
            let text: Vec<String> = texts(item.content).into_iter().filter(|t| !t.trim().is_empty()).collect();
            if !text.is_empty() {
                f.last_assistant_text = Some(super::payload::bound_reason(&text.join("\n")));
            }
        }
        ("function_call" | "custom_tool_call", _) => {
            let name = item.name.as_deref().unwrap_or("");
            let patch = item.input.or_else(|| {
                let v: serde_json::Value = serde_json::from_str(item.arguments.as_deref()?).ok()?;
                v.get("input").and_then(|i| i.as_str()).map(str::to_string)
            });
            if name == "apply_patch" {
                for path in patch.as_deref().map(patched_paths).unwrap_or_default() {
                    let input = ToolInput { file_path: Some(path), ..ToolInput::default() };
                    tool_use(f, Some("Edit"), input, plan_paths);
                }
                wait(f, item.call_id, Call::Other);
            } else {
                let command = item.arguments.as_deref().and_then(codex_command);
                let call = tool_use(f, Some("Bash"), ToolInput { command, ..ToolInput::default() }, plan_paths);
                wait(f, item.call_id, call);
            }
        }
        ("function_call_output" | "custom_tool_call_output", _) => {
            let call = item.call_id.as_deref().and_then(|id| pending.remove(id));
            let (failed, output) = codex_output(item.output.map(|o| o.0).unwrap_or_default());
            tool_result(f, latest, call, failed, output);
        }
        _ => f.skipped += 1,
    }
}

/// The command line of a Codex shell call's arguments: `command` as an argv (`["bash",
/// "-lc", "cargo test"]`: the script) or a string, or `cmd`.
fn codex_command(arguments: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let c = v.get("command").or_else(|| v.get("cmd"))?;
    if let Some(s) = c.as_str() {
        return Some(s.to_string());
    }
    let argv: Vec<&str> = c.as_array()?.iter().filter_map(|a| a.as_str()).collect();
    let shell = argv.first().is_some_and(|p| matches!(p.rsplit('/').next(), Some("bash" | "sh" | "zsh")));
    match argv.as_slice() {
        [_, flag, script, ..] if shell && flag.starts_with('-') && flag.ends_with('c') => Some((*script).to_string()),
        _ => Some(argv.join(" ")),
    }
}

/// A Codex tool output: a JSON text `{"output": ..., "metadata": {"exit_code": N}}`,
/// or plain text that may say `Exit code: N` or `Process exited with code N`. Returns
/// whether it failed and its text.
fn codex_output(raw: String) -> (bool, String) {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&raw)
        && let Some(out) = v.get("output").and_then(|o| o.as_str())
    {
        let code = v.pointer("/metadata/exit_code").and_then(serde_json::Value::as_i64).unwrap_or(0);
        return (code != 0, keep_end(out));
    }
    let failed = raw.lines().take(4).any(|l| {
        let l = l.trim();
        let code = l.strip_prefix("Exit code:").or_else(|| l.strip_prefix("Process exited with code"));
        code.is_some_and(|c| c.trim().parse::<i64>().is_ok_and(|n| n != 0))
    });
    (failed, raw)
}

/// The files a patch in Codex's `apply_patch` format adds, updates or deletes.
fn patched_paths(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|l| {
            ["*** Update File: ", "*** Add File: ", "*** Delete File: "].iter().find_map(|p| l.strip_prefix(p))
        })
        .map(|p| p.trim().to_string())
        .take(MAX_PENDING_CALLS)
        .collect()
}

fn user_text(f: &mut SessionFacts, in_force: &mut Option<Instruction>, text: &str) {
    let t = text.trim();
    // Harness-written text in a user entry: slash-command wrappers and their output.
    if t.is_empty() || t.starts_with("<command-") || t.starts_with("<local-command") || t.starts_with("Caveat:") {
        return;
    }
    if t.starts_with("[Request interrupted by user") {
        *in_force = Some(Instruction { kind: InstructionKind::Interrupt, quote: clip(t) });
        return;
    }
    f.user_turns += 1;
    if f.user_texts.len() == MAX_KEPT_TURNS {
        f.user_texts.remove(0);
    }
    f.user_texts.push(clip(t));
    f.last_turn_limits = has(&norm(t), LIMIT_HINTS);
    let sentences: Vec<String> = t.split(['.', '!', '?', ';', '\n']).map(|s| fix_typos(&norm(s))).collect();
    let leave = super::readings::gives_leave(&sentences);
    let trigger = super::readings::condition(t).is_none().then(|| super::readings::stop_trigger(t)).flatten();
    let run_condition = super::readings::run_condition(t);
    // A later turn that stops or gives leave by itself ("ok, stop here for today") ends an
    // earlier condition: the user's newest word on the stop is that turn.
    if trigger.is_none() && run_condition.is_none() && (leave || matches!(instruction_of(t), Some(Some(_)))) {
        f.stop_if = None;
        f.run_condition = None;
    }
    if let Some(c) = super::readings::condition(t) {
        f.condition = Some(c);
        f.condition_met = None;
    } else if let Some((clause, words)) = trigger {
        f.stop_if = Some(clip(&clause));
        f.stop_if_words = words;
        f.stop_if_met = false;
    }
    if let Some(cmd) = run_condition {
        f.run_condition = Some(clip(&cmd));
        f.run_condition_ok = None;
    }
    for doc in super::readings::adopted_documents(t) {
        if !f.adopted.contains(&doc) && f.adopted.len() < MAX_LEFT_CLAUSES {
            f.adopted.push(doc);
        }
    }
    f.questions_only = (f.user_turns == 1 || f.questions_only) && is_question_only(t);
    let go_on = instruction_of(t);
    if go_on == Some(None) {
        // "Do the frontend too after all": what was left to the user is the agent's again.
        f.left_to_user.clear();
        f.left_step_numbers.clear();
    }
    // Since round 6b: in a turn that gives leave ("leave it like that for now"), a
    // clause that forbids an act ("don't regenerate the lockfile") leaves that act out
    // too; alone, "don't break the API" is a care, not a step dropped.
    let leaves = t.split([',', '.', ';', '!', '?', '\n', ':']).any(|c| has(&norm(c), LEAVE));
    // Parentheses stay in their clause: "skip step 3 (docs)" names the docs.
    for clause in t.split([',', '.', ';', '!', '?', '\n', ':']).flat_map(|c| c.split(" but ")) {
        let c = norm(clause);
        let forbids = leaves && (c.trim_start().starts_with("dont ") || c.trim_start().starts_with("do not "));
        if (has(&c, LEAVE) || forbids) && f.left_to_user.len() < MAX_LEFT_CLAUSES {
            // "skip step 3", "I'll do steps 4 and 5 myself": the steps by number.
            let w: Vec<&str> = c.split(' ').filter(|w| !w.is_empty()).collect();
            // A bare number counts in a turn that speaks of steps ("do steps 1 and 2,
            // I'll do 3 after lunch").
            let speaks_of_steps = norm(t).contains(" step");
            for (i, x) in w.iter().enumerate() {
                let bare = speaks_of_steps
                    && x.len() <= 2
                    && x.bytes().all(|b| b.is_ascii_digit())
                    && !matches!(w.get(i.wrapping_sub(1)), Some(&"step" | &"steps"));
                if bare
                    && let Some(n) = step_number(x).filter(|n| *n > 0 && f.left_step_numbers.len() < MAX_LEFT_CLAUSES)
                {
                    f.left_step_numbers.push(n);
                }
                if matches!(*x, "step" | "steps") {
                    for y in w[i + 1..].iter().take_while(|y| step_number(y).is_some() || matches!(**y, "and" | "to")) {
                        if let Some(n) =
                            step_number(y).filter(|n| *n > 0 && f.left_step_numbers.len() < MAX_LEFT_CLAUSES)
                        {
                            f.left_step_numbers.push(n);
                        }
                    }
                }
            }
            f.left_to_user.push(c);
        }
    }
    if go_on == Some(None) {
        // "ok, carry on": a trigger or a command to stop at no longer holds.
        f.stop_if = None;
        f.run_condition = None;
    }
    match go_on {
        Some(Some(kind)) => {
            // A pause names a point too ("do it up to the controller, then stop
            // before the frontend; I'll review the API").
            f.stop_point =
                if matches!(kind, InstructionKind::Stop | InstructionKind::Pause) { stop_point(t) } else { None };
            *in_force = Some(Instruction { kind, quote: clip(t) });
        }
        Some(None) => {
            f.stop_point = None;
            *in_force = None;
        }
        // A new request that says nothing about stopping starts new work: an earlier
        // interrupt no longer holds, an earlier stop or scope instruction still does.
        // A short turn of leave after an interrupt ("stop pls, the cluster is under
        // load") keeps the stop.
        None => {
            if in_force.as_ref().is_some_and(|i| i.kind == InstructionKind::Interrupt) {
                *in_force = if super::readings::says_stop(&sentences) {
                    Some(Instruction { kind: InstructionKind::Stop, quote: clip(t) })
                } else if is_question_only(t) {
                    // The user stopped the agent to ask something: the answer is the
                    // turn, and the user speaks next.
                    Some(Instruction { kind: InstructionKind::Interrupt, quote: clip(t) })
                } else {
                    None
                };
            }
        }
    }
    // A turn that asks to go on ("lgtm, do the rest, no need to wait") gives no leave.
    if leave && go_on != Some(None) {
        f.licence = Some(clip(t));
        f.licence_stops = super::readings::leave_stops(&sentences);
    } else if go_on == Some(None) {
        f.licence = None;
        f.licence_stops = false;
    }
}

/// Words of stopping, waiting or limiting in a user's turn, read loosely (stems): only
/// a hint, never an instruction (see [`SessionFacts::last_turn_limits`]).
const LIMIT_HINTS: &[&str] = &[
    " stop",
    " wait",
    " pause",
    " halt",
    " hold off",
    " hold on",
    " review",
    " approv",
    " enough",
    " leave",
    " skip",
    " myself",
    " tomorrow",
    " later",
    " only ",
    " dont ",
    " do not ",
    " short",
    " small",
    " minimal",
    " before ",
    " check with",
];

/// Words too common to name a step in a stop point.
const POINT_STOPWORDS: &[&str] = &[
    "the", "this", "that", "then", "them", "with", "from", "into", "step", "steps", "plan", "part", "when", "once",
    "you", "your", "have", "done", "finish", "finished", "doing", "get", "gets", "got", "and", "for", "its", "one",
    "need", "think", "about", "want", "some", "because",
];

/// Number words a user writes for a step count ("the first two steps").
const NUMBER_WORDS: &[&str] = &["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];

fn step_number(w: &str) -> Option<usize> {
    w.parse::<usize>().ok().filter(|n| *n <= 1000).or_else(|| NUMBER_WORDS.iter().position(|n| *n == w))
}

/// The point a stop instruction names, if it names one: the highest step number it
/// gives ("after step 3", "steps 1-3", "the first two steps"), and the content words of
/// the step it stops before or after ("stop before the rebuild command").
fn stop_point(text: &str) -> Option<StopPoint> {
    let s = fix_typos(&norm(text));
    let w: Vec<&str> = s.split(' ').filter(|w| !w.is_empty()).collect();
    let mut point = StopPoint::default();
    for (i, x) in w.iter().enumerate() {
        let numbers: Vec<usize> = if matches!(*x, "step" | "steps") {
            let numbers: Vec<usize> = w[i + 1..]
                .iter()
                .take_while(|y| step_number(y).is_some() || matches!(**y, "to" | "through" | "thru"))
                .filter_map(|y| step_number(y))
                .collect();
            // A range ("steps 1-3") or a bound ("up to step 2", "after step 3") is a
            // point; one step asked for alone ("do step 3 and stop") says nothing of
            // the steps before it, which the user may have left for later.
            let bound = i > 0
                && matches!(w[i - 1], "to" | "through" | "thru" | "until" | "till" | "after" | "as" | "including");
            if numbers.len() >= 2 || bound { numbers } else { Vec::new() }
        } else if *x == "first" && w.get(i + 2).is_some_and(|y| matches!(*y, "step" | "steps")) {
            w.get(i + 1).and_then(|y| step_number(y)).into_iter().collect()
        } else {
            Vec::new()
        };
        if let Some(n) = numbers.into_iter().max() {
            point.last_step = Some(point.last_step.map_or(n, |m: usize| m.max(n)));
        }
    }
    let words_after = |i: usize| -> Vec<String> {
        w[i + 1..]
            .iter()
            .take(5)
            // The point ends where the sentence goes on ("..., then stop before the UI").
            .take_while(|y| {
                !matches!(
                    **y,
                    "i" | "ill"
                        | "im"
                        | "we"
                        | "so"
                        | "because"
                        | "since"
                        | "as"
                        | "but"
                        | "and"
                        | "then"
                        | "stop"
                        | "before"
                        | "after"
                )
            })
            .filter(|y| y.len() >= 4 && !POINT_STOPWORDS.contains(y) && step_number(y).is_none())
            .map(|y| y.to_string())
            .collect()
    };
    // A point by description: "up to and including the controller" is the step to
    // finish, "up to the frontend" the step to stop before ("up to step 2" is read above).
    for (i, x) in w.iter().enumerate() {
        // "up to step 2" is a number; "up to you", "up to date" name no step.
        let next = w.get(i + 2).copied().unwrap_or("");
        if *x != "up"
            || w.get(i + 1) != Some(&"to")
            || matches!(next, "step" | "steps" | "you" | "me" | "us" | "them" | "date" | "speed" | "now" | "here")
        {
            continue;
        }
        if w.get(i + 2) == Some(&"and") && w.get(i + 3) == Some(&"including") {
            if point.after.is_empty() {
                point.after = words_after(i + 3);
            }
        } else if point.before.is_empty() {
            point.before = words_after(i + 1);
        }
    }
    // A condition on the checks ("stop once they're green", "until the suite passes").
    const CONDITION: &[&str] = &["once", "when", "until", "till", "soon", "after"];
    const PASSING: &[&str] =
        &["green", "pass", "passes", "passing", "passed", "succeed", "succeeds", "compiles", "builds", "clean"];
    // Only in a sentence that stops: "stop after step 2; I'll check when CI passes" is
    // the user's own look, not a condition on the stop.
    point.when_passing = text.split(['.', ';', '!', '?', '\n']).any(|sentence| {
        let n = fix_typos(&norm(sentence));
        let w: Vec<&str> = n.split(' ').filter(|w| !w.is_empty()).collect();
        let stop_at = w.iter().position(|x| matches!(*x, "stop" | "stopping" | "halt"));
        stop_at.is_some_and(|k| {
            w.iter()
                .enumerate()
                .any(|(i, x)| CONDITION.contains(x) && w[i + 1..].iter().take(5).any(|y| PASSING.contains(y)))
                // Since round 5, the state to reach said before the stop: "get the
                // parser passing its tests, then stop", "make the suite green and stop".
                || (k >= 2
                    && matches!(w[k - 1], "then" | "and")
                    && w[..k].iter().rev().take(8).any(|y| PASSING.contains(y)))
        })
    });
    for (i, x) in w.iter().enumerate() {
        if i == 0 || !matches!(w[i - 1], "stop" | "stopping" | "halt") {
            continue;
        }
        match *x {
            "before" if point.before.is_empty() => point.before = words_after(i),
            // Only "after": "stop once the tests pass" names a condition, not a step.
            "after" if point.after.is_empty() => point.after = words_after(i),
            _ => {}
        }
    }
    // Since round 5, the action just before the stop or the wait is where to stop
    // ("..., then open a PR and wait for my review"): the step it names is the point.
    if point.after.is_empty() && point.last_step.is_none() {
        for (k, x) in w.iter().enumerate() {
            if !matches!(*x, "stop" | "wait" | "pause") || k < 2 || w[k - 1] != "and" {
                continue;
            }
            let Some(then) = w[..k].iter().rposition(|y| *y == "then").filter(|t| k - t <= 6) else { continue };
            // Only a milestone the user waits on (a PR, a deploy, a tag, a release):
            // "then run the tests and stop" names no step of its own.
            const MILESTONES: &[&str] = &[
                "open", "create", "deploy", "tag", "release", "push", "merge", "publish", "ship", "submit", "send",
                "upload", "cut",
            ];
            if !w[then + 1..k].iter().any(|y| MILESTONES.contains(y)) {
                continue;
            }
            point.after = w[then + 1..k - 1]
                .iter()
                .filter(|y| y.len() >= 4 && !POINT_STOPWORDS.contains(y) && step_number(y).is_none())
                .map(|y| y.to_string())
                .collect();
            break;
        }
    }
    let named = point.last_step.is_some() || !point.before.is_empty() || !point.after.is_empty() || point.when_passing;
    named.then_some(point)
}

/// Whether a command (normalised) looks at a credential: an environment probe or a
/// word of access.
fn probes_access(n: &str) -> bool {
    const PROBES: &[&str] = &[
        " printenv",
        " env ",
        " token",
        " key ",
        " secret",
        " credential",
        " password",
        " auth",
        " login",
        " whoami",
        " sts ",
        " identity",
    ];
    has(n, PROBES)
}

fn tool_use(f: &mut SessionFacts, name: Option<&str>, input: ToolInput, plan_paths: &[&str]) -> Call {
    match name.unwrap_or("") {
        "Bash" | "bash" | "shell" | "run_shell_command" => {
            let Some(cmd) = input.command else { return Call::Other };
            if f.commands.len() < MAX_KEPT_PATHS {
                f.commands.push(clip(&cmd));
            }
            // A plan ticked by a shell command (`sed -i 's/- \[ \]/- [x]/' PLAN.md`,
            // `perl -pi`, a redirect into it) is an edit of the plan like any other.
            if plan_paths.iter().any(|p| rewrites_in_place(&cmd, p)) {
                f.plan_edits += 1;
            }
            let n = norm(&cmd);
            if has(&n, TEST_COMMANDS) {
                Call::Test(clip(&cmd))
            } else if n.contains(" git commit") {
                Call::Commit
            } else if looks_like_test_command(&cmd) {
                // Before the build words: `make e2e` and `make test-integration`
                // run tests through a build tool.
                Call::Test(clip(&cmd))
            } else if has(&n, BUILD_COMMANDS) || looks_like_check_command(&cmd) {
                Call::Build(clip(&cmd))
            } else if segments(&cmd).next().is_some()
                || probes_access(&n)
                // Since round 5 an install or a fetch too (`npm install`, `pip install`,
                // `curl`, `gh api`): an obstacle it meets, and its later success, are facts.
                || program_of(&cmd).is_some_and(|p| !READ_ONLY_PROGRAMS.contains(&p.as_str()))
                // Since round 6b: git's calls to a remote, whose refusals (and the
                // agent's slips in the names it pushes) are facts.
                || [" git push", " git pull", " git fetch"].iter().any(|g| n.contains(g))
            {
                // A read-only probe of a variable or a login (`printenv TOKEN`, `echo
                // $KEY`, `aws sts get-caller-identity`) is read too: its output may
                // meet a missing credential.
                Call::Shell(clip(&cmd))
            } else {
                Call::Other
            }
        }
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => {
            let path = input.file_path.or(input.notebook_path).unwrap_or_default();
            let is_plan = !path.is_empty()
                && plan_paths.iter().any(|p| {
                    path == *p || path.strip_suffix(p).is_some_and(|head| head.ends_with('/') || head.is_empty())
                });
            if is_plan {
                f.plan_edits += 1;
            } else {
                f.work_edits += 1;
                if !is_prose(&path) {
                    f.code_edits += 1;
                }
                if !path.is_empty() && f.edited_paths.len() < MAX_KEPT_PATHS && !f.edited_paths.contains(&path) {
                    f.edited_paths.push(path);
                }
            }
            Call::Other
        }
        _ => Call::Other,
    }
}

/// The newest test and build results, kept raw: only the last of each is ever
/// judged, so its output is read for failures once, at the end (a long session runs
/// the tests hundreds of times).
#[derive(Default)]
struct Latest {
    test: Option<(String, bool, String)>,
    build: Option<(String, bool, String)>,
    /// Order of the newest test and build results (a counter of verification results),
    /// and how many work edits the session had made when each came.
    test_at: (usize, usize, usize),
    build_at: (usize, usize, usize),
    runs: usize,
}

impl Latest {
    fn test(&mut self, f: &SessionFacts, run: (String, bool, String)) {
        self.runs += 1;
        self.test_at = (self.runs, f.work_edits, f.code_edits);
        self.test = Some(run);
    }

    fn build(&mut self, f: &SessionFacts, run: (String, bool, String)) {
        self.runs += 1;
        self.build_at = (self.runs, f.work_edits, f.code_edits);
        self.build = Some(run);
    }

    fn settle(self, f: &mut SessionFacts) {
        if let Some((command, failed, output)) = self.test {
            let failures = failure_count(&output);
            let ok = !failed && failures.unwrap_or(0) == 0 && !output_says_failed(&output);
            f.last_test = Some(CommandRun { command, ok, failures });
        }
        if let Some((command, failed, output)) = self.build {
            let ok = !failed && !output_says_failed(&output);
            f.last_build = Some(CommandRun { command, ok, failures: None });
        }
        let (check, at) = if self.build_at.0 > self.test_at.0 {
            (f.last_build.clone(), self.build_at)
        } else {
            (f.last_test.clone(), self.test_at)
        };
        if check.is_some() {
            f.edits_after_check = f.work_edits.saturating_sub(at.1);
            f.code_edits_after_check = f.code_edits.saturating_sub(at.2);
        }
        f.last_check = check;
    }
}

fn tool_result(f: &mut SessionFacts, latest: &mut Latest, call: Option<Call>, is_error: bool, output: String) {
    let failed = is_error || exit_code_nonzero(&output);
    let command = match &call {
        Some(Call::Test(c) | Call::Build(c) | Call::Shell(c)) => Some(c.as_str()),
        _ => None,
    };
    if failed {
        f.tool_errors += 1;
        f.last_error = Some(first_line(&output));
        f.own_error = match &call {
            Some(Call::Test(_) | Call::Build(_) | Call::Shell(_)) => own_file_named(f, &output),
            _ => None,
        };
        f.own_slip = command.and_then(|c| super::readings::own_slip(c, &output, &f.edited_paths, &f.commands));
    } else if command.is_some() {
        f.own_slip = None;
    }
    // An obstacle outside the code, in a failed result (any command, any exit code)
    // or a short refusal of access (a probe's "not set").
    // A failed result is read for it even when its call was not waited for (`gh`,
    // `curl`: programs read for nothing else).
    if !failed && call.is_some() && output.len() <= MAX_ASSIGNMENT_OUTPUT {
        for name in assigned_names(&output) {
            if f.shown_set.len() < MAX_KEPT_PATHS && !f.shown_set.contains(&name) {
                f.shown_set.push(name);
            }
        }
    }
    if call.is_some() || failed {
        let class = if failed {
            // A failing test's title is the test's words, not the environment's ("test
            // disconnects a client over the limit"): only the rest is read for one.
            let read = if matches!(call, Some(Call::Test(_))) { without_test_titles(&output) } else { output.clone() };
            super::readings::obstacle_class(&norm(&read))
        } else if output.len() > MAX_PROBE_OUTPUT {
            None
        } else if super::readings::says_access_refused(&output) {
            Some("access")
        } else if matches!(call, Some(Call::Shell(_))) {
            // A short answer of a service that exits 0 (`curl` without `-f` printing a
            // 503 page) is met too; a test's or a build's output is not read for it.
            super::readings::obstacle_class(&norm(&output))
        } else {
            None
        };
        let program = command.and_then(program_of).unwrap_or_default();
        match class {
            Some(class) if f.obstacles_by_program.len() < MAX_KEPT_PATHS => {
                f.obstacles_by_program.push((class.to_string(), program));
            }
            None if !failed && command.is_some() => f.obstacles_by_program.retain(|(_, p)| *p != program),
            _ => {}
        }
        f.obstacles = Vec::new();
        for (class, _) in &f.obstacles_by_program {
            if !f.obstacles.contains(class) {
                f.obstacles.push(class.clone());
            }
        }
    }
    // The user's trigger in words, named by a failed result; the command the user
    // said to stop at, by its newest run.
    // Any command's output counts, not only a failure's: a probe can show the trigger
    // met ("\"type\": \"commonjs\"" for "stop if the library doesn't support ESM").
    if f.stop_if.is_some() && !f.stop_if_met && super::readings::names_trigger(&f.stop_if_words, &output) {
        f.stop_if_met = true;
    }
    if let (Some(cond), Some(cmd)) = (f.run_condition.as_deref(), command)
        && super::readings::runs_named(cond, cmd)
    {
        f.run_condition_ok = Some(!failed);
    }
    // A numeric condition of the user's, against what any command printed.
    if let (Some(c), Some(_)) = (&f.condition, command)
        && f.condition_met != Some(true)
        && let Some(met) = super::readings::condition_in(c, &output)
    {
        f.condition_met = Some(met);
    }
    // A refusal is a failed call's output, or a short one (a probe's "not set"): a long
    // successful output (a test log) is not searched, which keeps a long session fast.
    if call.is_some() && (failed || output.len() <= MAX_PROBE_OUTPUT) && super::readings::says_access_refused(&output) {
        f.access_failures += 1;
    }
    match call {
        Some(Call::Test(command)) => {
            f.test_runs += 1;
            f.full_test_runs += usize::from(!super::readings::subset_run(&command));
            latest.test(f, (command, failed, output));
        }
        // A build or check that printed a runner's summary ran tests (`make`,
        // `bin/check-all`): its result is a test run.
        Some(Call::Build(command)) if looks_like_test_report(&output) => {
            f.test_runs += 1;
            latest.test(f, (command, failed, output));
        }
        Some(Call::Build(command)) => {
            // A build that says it ran tests ("dbt build": PASS=7 of its tests) is a check.
            let pure = super::readings::pure_build(&command) && !norm(&output).contains(" test");
            f.check_runs += usize::from(!pure);
            latest.build(f, (command, failed, output));
        }
        Some(Call::Commit) if !failed => f.commits += 1,
        // A command premerge does not know, judged by what it printed: a runner's
        // summary ("3 passed, 1 failed", "Ran 12 tests", "not ok 4") makes it a test run.
        Some(Call::Shell(command)) if looks_like_test_report(&output) => {
            f.test_runs += 1;
            latest.test(f, (command, failed, output));
        }
        _ => {}
    }
}

/// The program a command line runs: its last `&&` segment's first stage ("cd web &&
/// npm ci" runs npm), wrappers and variable assignments skipped.
fn program_of(cmd: &str) -> Option<String> {
    const SKIP: &[&str] = &["sudo", "env", "time", "nice", "command", "exec", "npx", "bunx", "pnpx"];
    let last = cmd.rsplit("&&").next()?.split('|').next()?;
    let p = last.split_whitespace().find(|w| !w.contains('=') && !SKIP.contains(w))?;
    Some(p.rsplit('/').next().unwrap_or(p).to_string())
}

/// Whether a command rewrites the file `path` in place: `sed -i` / `perl -pi` naming
/// it, a redirect into it, `tee` to it.
fn rewrites_in_place(cmd: &str, path: &str) -> bool {
    if !cmd.contains(path) {
        return false;
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let redirect = words.windows(2).any(|p| matches!(p[0], ">" | ">>") && p[1].ends_with(path))
        || words.iter().any(|w| w.starts_with('>') && w.trim_start_matches('>').ends_with(path))
        || words.windows(2).any(|p| p[0] == "tee" && p[1].ends_with(path))
        || words.windows(3).any(|p| p[0] == "tee" && p[1].starts_with('-') && p[2].ends_with(path));
    let in_place = words.iter().any(|w| matches!(*w, "sed" | "gsed" | "perl" | "ruby"))
        && words.iter().any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('i'));
    redirect || in_place
}

/// Prose, not code: documentation whose edit after a test run leaves the run valid.
fn is_prose(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    matches!(ext, "md" | "markdown" | "rst" | "txt" | "adoc")
        || ["readme", "changelog", "license", "authors", "notice"].iter().any(|p| name.starts_with(p))
}

/// The edited file a failing build's or test's output names (by its file name, with
/// an extension), unless the output says the failure came from outside the code (an
/// access refusal, an unreachable host, a timeout): then it is an obstacle, not the edit.
fn own_file_named(f: &SessionFacts, output: &str) -> Option<String> {
    const OUTSIDE: &[&str] = &[
        " connection refused",
        " timed out",
        " timeout",
        " could not resolve",
        " name resolution",
        " network",
        " unreachable",
        " rate limit",
        " service unavailable",
        " 503 ",
        " 502 ",
        " no space left",
        " out of memory",
    ];
    let n = norm(output);
    if has(&n, OUTSIDE) || super::readings::says_access_refused(output) {
        return None;
    }
    // A file of the same name inside a dependency (`~/.cargo/registry/.../src/lib.rs`,
    // `node_modules/x/index.js`) is not the session's edit.
    const DEPENDENCY: &[&str] =
        &["registry/", "node_modules/", "site-packages/", "dist-packages/", "vendor/", "pkg/mod/", "/usr/", ".m2/"];
    let tokens: Vec<&str> = output.split(|c: char| c.is_whitespace() || "'\"`()[]<>,".contains(c)).collect();
    f.edited_paths.iter().find_map(|p| {
        let name = p.rsplit('/').next().unwrap_or(p);
        let named = name.len() >= 4
            && name.contains('.')
            && !is_prose(p)
            && tokens.iter().any(|t| {
                // A file URL (`file:///repo/deno.json`, Deno's and Node's errors) names the file too.
                let t = t.strip_prefix("file://").unwrap_or(t);
                let file = t.split(':').next().unwrap_or(t);
                (file == name || file.ends_with(&format!("/{name}"))) && !DEPENDENCY.iter().any(|d| file.contains(d))
            });
        named.then(|| name.to_string())
    })
}

/// The lines of a test report that title a failing test (`● nextRun › handles ...`,
/// `1) test disconnects a client over the limit (...)`, `--- FAIL: TestX`, `FAILED
/// tests/a.py::test_x`) and the values an assertion compared (`left: :ok`, `right:
/// {:error, "rate_limited"}`, `Expected: ...`) left out: what is left is the runner's
/// and the environment's.
fn without_test_titles(output: &str) -> String {
    const TITLES: &[&str] = &[
        "●",
        "✕",
        "×",
        "✗",
        "✘",
        "--- fail",
        "test ",
        "it ",
        "left:",
        "right:",
        "expected",
        "received",
        "actual",
        "assertion",
        "assert ",
        "e   assert",
    ];
    output
        .lines()
        .filter(|l| {
            let t = l.trim_start().to_lowercase();
            let numbered = t.split_once(") ").is_some_and(|(n, rest)| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with("test")
            });
            let failed_id = t.starts_with("failed ") && t.contains("::");
            !(numbered || failed_id || TITLES.iter().any(|p| t.starts_with(p)))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Names of variables a tool's output shows set to a value (`NAME=value`, `export
/// NAME=value`): upper-case names of three letters or more with a non-empty value,
/// lower-cased.
fn assigned_names(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|l| {
            // `grep -n` prefixes `4:`; `export ` may lead.
            let l = l.trim();
            let l = l.split_once(':').filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit())).map_or(l, |(_, r)| r);
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (name, value) = l.split_once('=')?;
            let value = value.trim().trim_matches(['"', '\'']);
            let ok = name.len() >= 3
                && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && name.chars().any(|c| c.is_ascii_uppercase())
                && !value.is_empty();
            ok.then(|| name.to_lowercase())
        })
        .collect()
}

/// Programs that only show or search text: a test report they print is an old one.
const READ_ONLY_PROGRAMS: &[&str] = &[
    "cat", "less", "more", "head", "tail", "grep", "rg", "ag", "ls", "find", "fd", "sed", "awk", "jq", "git", "echo",
    "printf", "wc", "diff", "sort", "uniq", "tree", "stat", "file", "which", "type", "man", "bat", "cut", "tr",
];
/// Wrappers before the program that runs (`npx playwright test`, `uv run ward`).
const WRAPPERS: &[&str] = &[
    "sudo", "time", "env", "nice", "npx", "bunx", "pnpx", "exec", "run", "uv", "poetry", "pipenv", "hatch", "pdm",
    "bundle", "yarn", "pnpm", "npm", "bun", "deno", "python", "python3", "node", "sh", "bash", "m", "dotnet",
    "timeout", "xvfb", "docker", "compose", "podman", "kubectl", "nix", "develop", "c", "script", "task", "just",
];
/// Words naming a test run, as a program, a subcommand or a script's name.
const TEST_NAME_PARTS: &[&str] = &["test", "tests", "spec", "specs", "e2e", "integration", "acceptance", "smoke"];

/// Whether a shell command runs tests by its own words: in any `&&`/`;` segment
/// whose program is not a read-only one, a program or subcommand named like a test
/// run (`bin/run-tests`, `npm run test:e2e`, `ward test`, `./scripts/e2e.sh`), not
/// a path argument of another command.
fn looks_like_test_command(cmd: &str) -> bool {
    segments(cmd).any(|words| {
        // The program and its first two non-option words (`ward test`, `run test:e2e`).
        words.iter().filter(|w| !w.starts_with('-')).take(3).enumerate().any(|(k, w)| {
            // A later word with a path is an argument (`mytool tests/data.json`).
            if k > 0 && (w.contains('/') || w.contains('.')) {
                return false;
            }
            let base = w.rsplit('/').next().unwrap_or(w);
            let stem = base.split('.').next().unwrap_or(base);
            stem.split(['-', '_', ':']).any(|part| {
                TEST_NAME_PARTS.contains(&part.to_ascii_lowercase().as_str())
                    // A camel-case task (Gradle's `testDebugUnitTest`, `connectedAndroidTest`).
                    || camel_words(part).iter().any(|w| TEST_NAME_PARTS.contains(&w.as_str()))
            })
        })
    })
}

/// The lower-cased words of a camel-case name (`testDebugUnitTest`: test, debug,
/// unit, test); a name without an inner capital is one word.
fn camel_words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, c) in name.char_indices() {
        if i == 0 || c.is_ascii_uppercase() {
            out.push(String::new());
        }
        if let Some(w) = out.last_mut() {
            w.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Words naming a build or a check, as a program or its subcommand.
const CHECK_NAME_PARTS: &[&str] =
    &["build", "check", "lint", "typecheck", "compile", "vet", "clippy", "validate", "linter"];

/// Whether a shell command builds or checks by its own words, whatever the tool:
/// the program or its first non-option word is named like a build or a check
/// (`mkdocs build --strict`, `dbt build`, `npm run lint`, `./scripts/typecheck.sh`).
fn looks_like_check_command(cmd: &str) -> bool {
    segments(cmd).any(|words| {
        words.iter().filter(|w| !w.starts_with('-')).take(2).enumerate().any(|(k, w)| {
            if k > 0 && (w.contains('/') || w.contains('.')) {
                return false;
            }
            let base = w.rsplit('/').next().unwrap_or(w);
            let stem = base.split('.').next().unwrap_or(base);
            stem.split(['-', '_', ':']).any(|part| CHECK_NAME_PARTS.contains(&part.to_ascii_lowercase().as_str()))
        })
    })
}

/// The words of each `&&` / `;` / `||` segment of a command line from its program
/// on (wrappers, options and variable assignments before it skipped), for segments
/// whose program changes or runs something: not a read-only program, not a file
/// operation. Only a pipe's first stage: the later ones read its output.
fn segments(cmd: &str) -> impl Iterator<Item = Vec<&str>> {
    cmd.split("&&").flat_map(|c| c.split(';')).flat_map(|c| c.split("||")).filter_map(|segment| {
        let first = segment.split('|').next().unwrap_or("");
        let words: Vec<&str> = first.split_whitespace().filter(|w| !w.contains('=') || w.starts_with('-')).collect();
        let mut i = 0;
        while i < words.len() && (WRAPPERS.contains(&words[i]) || words[i].starts_with('-') || is_number(words[i])) {
            i += 1;
        }
        let program = words.get(i)?;
        let base = program.rsplit('/').next().unwrap_or(program);
        if READ_ONLY_PROGRAMS.contains(&base) || FILE_PROGRAMS.contains(&base) {
            return None;
        }
        Some(words[i..].to_vec())
    })
}

/// Programs that move files or install things, never a test run.
const FILE_PROGRAMS: &[&str] = &[
    "cd", "mkdir", "touch", "rm", "cp", "mv", "chmod", "chown", "ln", "vim", "vi", "nano", "code", "open", "curl",
    "wget", "pip", "pip3", "apt", "apt-get", "brew", "install", "tar", "unzip", "gh",
];

fn is_number(w: &str) -> bool {
    !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit() || b == b's' || b == b'm')
}

/// Whether output has the shape of a test runner's summary, whatever the runner: a
/// count of passed or failed tests, a count of tests with failures, a TAP `ok` /
/// `not ok` line, or a `PASS` / `FAIL` / `test result:` line.
fn looks_like_test_report(output: &str) -> bool {
    const COUNTED: &[&str] = &["passed", "passing", "failed", "failing"];
    const UNITS: &[&str] =
        &["tests", "test", "examples", "example", "specs", "spec", "scenarios", "cases", "assertions"];
    let n = norm(output);
    let words: Vec<&str> = n.split(' ').filter(|w| !w.is_empty()).collect();
    let counted = words.windows(2).any(|p| is_count(p[0]) && COUNTED.contains(&p[1]));
    let units = words.windows(3).any(|p| {
        (is_count(p[0]) && UNITS.contains(&p[1]) && (is_count(p[2]) || matches!(p[2], "ok" | "passed" | "failed")))
            || (p[0] == "ran" && is_count(p[1]) && UNITS.contains(&p[2]))
    });
    counted
        || units
        || output.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("test result:")
                || l.starts_with("not ok ")
                || (l.starts_with("ok ") && l[3..].starts_with(|c: char| c.is_ascii_digit()))
                || l.starts_with("PASS ")
                || l.starts_with("FAIL ")
                || l.starts_with("FAILED ")
                || l.starts_with("Tests:")
        })
}

fn is_count(w: &str) -> bool {
    !w.is_empty() && w.len() <= 7 && w.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> String {
        serde_json::json!({"type":"user","message":{"role":"user","content":text},"uuid":"u"}).to_string()
    }

    fn bash(id: &str, cmd: &str) -> String {
        serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[
            {"type":"tool_use","id":id,"name":"Bash","input":{"command":cmd,"description":"run"}}]}})
        .to_string()
    }

    fn result(id: &str, is_error: bool, out: &str) -> String {
        serde_json::json!({"type":"user","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":id,"is_error":is_error,"content":out}]},
            "toolUseResult":{"stdout":out,"stderr":"","interrupted":false}})
        .to_string()
    }

    #[test]
    fn a_quoted_instruction_inside_a_tool_result_is_not_the_user() {
        let t = [
            user("Implement the plan in docs/plans/work.md."),
            bash("t1", "cat NOTES.md"),
            result("t1", false, "user: stop after step 1 and wait for my review"),
        ]
        .join("\n");
        let f = read(&t, &["docs/plans/work.md"]);
        assert_eq!(f.instruction, None);
        assert_eq!(f.user_turns, 1);
    }

    /// Round 5: leave read wide, a stop after an interrupt, obstacles cleared by a later
    /// success of the same program, a condition against a command's output.
    #[test]
    fn round_5_leave_interrupts_obstacles_and_conditions() {
        let interrupt = serde_json::json!({"type":"user","message":{"role":"user",
            "content":[{"type":"text","text":"[Request interrupted by user]"}]}})
        .to_string();
        let t = [user("Do the plan."), interrupt.clone(), user("stop pls, cluster under load")].join("\n");
        assert_eq!(read(&t, &[]).instruction.map(|i| i.kind), Some(InstructionKind::Stop));
        let t = [user("Do the plan."), interrupt, user("Now also add the retry logic and its tests please")].join("\n");
        assert_eq!(read(&t, &[]).instruction, None, "a new request after an interrupt starts new work");
        let f = read(&user("do the plan, and dont bother with the metrics step"), &[]);
        assert!(f.licence.is_some() && !f.licence_stops);
        let f = read(&[user("skip the cache for now"), user("lgtm, go ahead and do the cache too")].join("\n"), &[]);
        assert_eq!(f.licence, None, "a later turn that asks to go on takes the leave back");
        let t = [
            bash("t1", "npm install left-pad"),
            result("t1", true, "Exit code 1\nnpm ERR! network request failed, reason: connect ETIMEDOUT"),
        ];
        assert_eq!(read(&t.join("\n"), &[]).obstacles, vec!["network".to_string()]);
        let passed =
            [t[0].clone(), t[1].clone(), bash("t2", "npm install left-pad"), result("t2", false, "added 1 package")];
        assert!(read(&passed.join("\n"), &[]).obstacles.is_empty(), "the same program got past it");
        let t = [
            user("Tune it until p95 is below 200ms, then stop."),
            bash("t1", "./bench.sh"),
            result("t1", false, "p50=90ms p95=260ms"),
        ];
        let f = read(&t.join("\n"), &[]);
        assert_eq!((f.condition.map(|c| c.op), f.condition_met), (Some("<"), Some(false)));
    }

    #[test]
    fn instructions_interrupts_and_lifting_them() {
        let t = [user("Do step 1 of the plan, then stop so I can look."), user("ok")].join("\n");
        let f = read(&t, &[]);
        assert_eq!(f.instruction.map(|i| i.kind), Some(InstructionKind::Stop));
        let t = [user("Only do the parser for now."), user("Looks good, continue with the rest.")].join("\n");
        assert_eq!(read(&t, &[]).instruction, None);
        let t = [user("Implement it all and don't stop until the plan is done.")].join("\n");
        assert_eq!(read(&t, &[]).instruction, None);
        let interrupted = serde_json::json!({"type":"user","message":{"role":"user","content":[
            {"type":"text","text":"[Request interrupted by user for tool use]"}]}})
        .to_string();
        let f = read(&[user("Refactor the cache."), interrupted.clone()].join("\n"), &[]);
        assert_eq!(f.instruction.map(|i| i.kind), Some(InstructionKind::Interrupt));
        let f = read(&[user("Refactor the cache."), interrupted, user("Now rename the module.")].join("\n"), &[]);
        assert_eq!(f.instruction, None);
    }

    #[test]
    fn test_runs_their_status_and_failure_counts() {
        let t = [
            bash("a", "cargo test --all"),
            result("a", true, "Exit code 101\ntest result: FAILED. 10 passed; 2 failed; 0 ignored"),
            bash("b", "git commit -qm wip"),
            result("b", false, "[main abc123] wip"),
            bash("c", "npx jest 2>&1 | tail -5"),
            result("c", false, "Tests:       3 failed, 41 passed, 44 total"),
        ]
        .join("\n");
        let f = read(&t, &[]);
        assert_eq!(f.test_runs, 2);
        assert_eq!(f.commits, 1);
        assert_eq!(
            f.last_test,
            Some(CommandRun { command: "npx jest 2>&1 | tail -5".into(), ok: false, failures: Some(3) })
        );
        assert_eq!(f.tool_errors, 1);
        let ok = [bash("a", "pytest -q"), result("a", false, "52 passed in 1.20s")].join("\n");
        assert_eq!(read(&ok, &[]).last_test.map(|r| r.ok), Some(true));
    }

    #[test]
    fn torn_lines_foreign_entries_and_harness_turns_are_skipped() {
        let t = [
            r#"{"type":"summary","summary":"Earlier work","leafUuid":"x"}"#.to_string(),
            serde_json::json!({"type":"user","isMeta":true,"message":{"role":"user","content":"Caveat: stop here"}})
                .to_string(),
            serde_json::json!({"type":"user","isCompactSummary":true,"message":{"role":"user",
                "content":"This session is being continued. The user said: stop after step 1."}})
            .to_string(),
            r#"{"type":"system","content":"hook ran"}"#.to_string(),
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."},{"type":"future_block","x":1},7]}}"#.to_string(),
            r#"{"type":"assistant","message":{"role":"assist"#.to_string(),
        ]
        .join("\n");
        let f = read(&t, &[]);
        assert_eq!(f.instruction, None);
        assert_eq!(f.user_turns, 0);
        assert_eq!(f.last_assistant_text.as_deref(), Some("Done."));
        assert_eq!(f.skipped, 3, "{f:?}");
    }

    #[test]
    fn scope_limits_by_their_structure() {
        let scope = |t: &str| read(&user(t), &[]).instruction.map(|i| i.kind);
        for t in [
            "Please only handle the backend part.",
            "For now, just rename the error type.",
            "Could you just bump the version?",
            "Keep this change really small: fix the typo.",
            "Don't modify any files, explain the retry loop.",
            "Review it without changing any code.",
            "Make the smallest possible change.",
        ] {
            assert_eq!(scope(t), Some(InstructionKind::Scope), "{t}");
        }
        for t in [
            "Just implement the whole plan.",
            "I just noticed the endpoint is slow; implement the plan.",
            "Don't change the public API. Implement the caching layer.",
            "Implement the plan, it only needs the parser and the evaluator.",
        ] {
            assert_eq!(scope(t), None, "{t}");
        }
    }

    #[test]
    fn hand_backs_and_ends_by_their_structure() {
        let kind = |t: &str| read(&user(t), &[]).instruction.map(|i| i.kind);
        assert_eq!(kind("Add it, then hand it back to me so I can test it."), Some(InstructionKind::Pause));
        assert_eq!(kind("Draft the migration and then I'll look it over."), Some(InstructionKind::Pause));
        assert_eq!(kind("Do the CSV parser; that's all I need for now."), Some(InstructionKind::Stop));
        assert_eq!(kind("Implement the caching plan. I'll check back in an hour."), None);
        assert_eq!(kind("Build the export so I can use it in the demo."), None);
        assert_eq!(kind("Do the whole plan; I'll test it after."), None);
    }

    #[test]
    fn questions_only_and_work_left_to_the_user() {
        assert!(read(&user("How does the consumer retry a message?"), &[]).questions_only);
        assert!(!read(&user("Can you implement the plan?"), &[]).questions_only);
        assert!(!read(&user("Why is CI slow? Fix it."), &[]).questions_only);
        // Round 6: by structure, lead-ins and several questions included.
        assert!(
            read(&user("unrelated question - why does our CI take 20+ min? I thought it was 8"), &[]).questions_only
        );
        assert!(read(&user("quick q: are our tests xunit or nunit? and do they run in parallel?"), &[]).questions_only);
        assert!(read(&user("can you explain what retry_budget does? docs are vague"), &[]).questions_only);
        assert!(!read(&user("could you wire up the webhook retries from the plan?"), &[]).questions_only);
        assert!(!read(&user("how would you structure it? go ahead and build it per the plan"), &[]).questions_only);
        let two = [user("Where is the config read?"), user("Now move it to main.")].join("\n");
        assert!(!read(&two, &[]).questions_only);
        let f = read(&user("I'll write the docs myself, do the rest of the plan."), &[]);
        assert_eq!(f.left_to_user, vec![" ill write the docs myself ".to_string()]);
        assert_eq!(f.instruction, None);
    }

    #[test]
    fn test_runs_known_by_their_words_or_their_output() {
        let last = |cmd: &str, code: bool, out: &str| {
            read(&[bash("a", cmd), result("a", code, out)].join("\n"), &[]).last_test.map(|t| (t.command, t.ok))
        };
        assert_eq!(
            last("./scripts/run-tests.sh", true, "3 examples, 1 failure"),
            Some(("./scripts/run-tests.sh".into(), false))
        );
        assert_eq!(last("npm run test:integration", false, "done"), Some(("npm run test:integration".into(), true)));
        assert_eq!(last("make e2e", true, "FAIL checkout"), Some(("make e2e".into(), false)));
        assert_eq!(last("bin/check-all", false, "ok 1 - a\nnot ok 2 - b"), Some(("bin/check-all".into(), false)));
        assert_eq!(last("cat ci.log", false, "2 failed, 118 passed"), None);
        assert_eq!(last("mkdir -p tests", false, ""), None);
        assert_eq!(last("rg -n test src", false, "src/a.rs:1: fn test_a()"), None);
    }

    #[test]
    fn quiet_results_are_skipped_without_losing_a_fact() {
        let read_call = serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[
            {"type":"tool_use","id":"r1","name":"Read","input":{"file_path":"/repo/a.rs"}}]}})
        .to_string();
        let t = [
            bash("t1", "cargo test"),
            read_call,
            result("r1", false, "fn main() {}"),
            result("t1", true, "Exit code 101\ntest result: FAILED. 1 passed; 1 failed"),
            bash("x", "ls missing"),
            serde_json::json!({"type":"user","message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":"x","is_error": true,"content":"ls: missing: No such file"}]}})
            .to_string(),
        ]
        .join("\n");
        let f = read(&t, &[]);
        assert_eq!(f.entries, 6);
        assert_eq!(f.last_test.map(|r| r.ok), Some(false));
        assert_eq!((f.tool_errors, f.last_error.as_deref()), (2, Some("ls: missing: No such file")));
        assert!(is_quiet_result(
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"q","content":"x"}]}}"#,
            &HashMap::new()
        ));
    }

    #[test]
    fn bytes_are_read_as_a_lossy_text_would_be_crlf_and_bad_bytes_included() {
        let user = |t: &str| serde_json::json!({"type":"user","message":{"role":"user","content":t}}).to_string();
        let mut t = Vec::new();
        t.extend_from_slice(user("Implement the plan.").as_bytes());
        t.extend_from_slice(b"\r\n\xe2\x80\x83\r\n");
        // A user turn with a cut character (a tail that starts mid-character elsewhere).
        let at = t.len() + user("stop after step one, I will review caf@").find('@').unwrap();
        t.extend_from_slice(user("stop after step one, I will review caf@").as_bytes());
        t[at] = 0xff;
        t.extend_from_slice(b"\n");
        let f = read_bytes(&t, &[]);
        let lossy = read(&String::from_utf8_lossy(&t), &[]);
        assert_eq!((f.user_turns, f.skipped), (2, 0));
        assert_eq!((lossy.user_turns, lossy.skipped), (f.user_turns, f.skipped));
        assert_eq!(f.instruction.map(|i| i.kind), lossy.instruction.map(|i| i.kind));
    }

    #[test]
    fn the_quiet_filter_never_skips_a_result_that_is_waited_for_or_failed() {
        let mut pending = HashMap::new();
        pending.insert("t1".to_string(), Call::Shell("make check".into()));
        let quiet = |line: &str| is_quiet_result(line.as_bytes(), &pending);
        let r = |id: &str, rest: &str| {
            format!(
                r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":{id},"content":"ok"{rest}}}]}}}}"#
            )
        };
        // Another call's successful result is skipped; spacing around the colon is JSON.
        assert!(quiet(&r(r#""r9""#, "")));
        assert!(quiet(&r(r#""r9""#, r#","is_error" : false"#)));
        // The waited-for call's result, in any spacing, or an id serde might decode to it.
        assert!(!quiet(&r(r#""t1""#, "")));
        assert!(!quiet(&r(r#""t1""#, "").replace(r#""tool_use_id":"#, r#""tool_use_id" :  "#)));
        assert!(!quiet(&r(r#""t\u0031""#, "")));
        assert!(!quiet(&r("7", "")));
        // A second result block in the same line naming the waited-for call.
        let two = r(r#""r9""#, "").replace(
            r#""content":"ok"}"#,
            r#""content":"ok"},{"type":"tool_result","tool_use_id":"t1","content":"x"}"#,
        );
        assert!(!quiet(&two));
        // Errors, exit codes and the user's text are always parsed.
        assert!(!quiet(&r(r#""r9""#, r#","is_error":  true"#)));
        assert!(!quiet(&r(r#""r9""#, "").replace(r#""ok""#, r#""Exit code 2""#)));
        assert!(!quiet(
            &r(r#""r9""#, "")
                .replace(r#"{"type":"tool_result""#, r#"{"type":"text","text":"stop"},{"type":"tool_result""#)
        ));
    }

    #[test]
    fn stop_points_by_number_and_by_step() {
        let point = |t: &str| read(&user(t), &[]).stop_point;
        assert_eq!(point("Do steps 1-3 and stop.").and_then(|p| p.last_step), Some(3));
        assert_eq!(point("Only the first two steps, then stop.").and_then(|p| p.last_step), Some(2));
        let p = point("Do the plan but stop before the rebuild command, I need to think.").unwrap();
        assert_eq!((p.last_step, p.before), (None, vec!["rebuild".to_string(), "command".to_string()]));
        assert_eq!(
            point("Stop after the config loader.").map(|p| p.after),
            Some(vec!["config".into(), "loader".into()])
        );
        assert_eq!(point("Implement the parser, then stop."), None);
        assert_eq!(point("Do step 3 and stop."), None, "one step alone is no bound");
        assert_eq!(point("Do step 3 and stop; steps 1 and 2 wait for the vendor."), None);
        // A condition on the checks is read since round 4, against the last check.
        let p = point("Stop once the tests pass.").unwrap();
        assert!(p.when_passing && p.last_step.is_none() && p.before.is_empty() && p.after.is_empty());
        assert!(!point("Do steps 1-3 and stop.").unwrap().when_passing);
        assert!(!point("Stop after step 2. I'll check when CI passes.").unwrap().when_passing);
        // A point by description: the step to finish, the step to stop before.
        let p = point("Do it up to and including the REST controller, then stop before the frontend.").unwrap();
        assert_eq!((p.after, p.before), (vec!["rest".to_string(), "controller".into()], vec!["frontend".to_string()]));
        assert_eq!(
            point("Take it up to the billing page and stop.").map(|p| p.before),
            Some(vec!["billing".into(), "page".into()])
        );
        assert_eq!(point("It's up to you how to split it, then stop."), None, "\"up to you\" names no step");
        // A pause names its point too.
        let t = user("Build it up to and including the validator, I'll review then.");
        assert_eq!(read(&t, &[]).stop_point.map(|p| p.after), Some(vec!["validator".to_string()]));
        assert_eq!(point("Go up to step 2, then stop.").and_then(|p| p.last_step), Some(2));
        // A later turn that lifts the stop lifts its point.
        let t = [user("Do step 1 and stop."), user("Looks good, continue.")].join("\n");
        assert_eq!(read(&t, &[]).stop_point, None);
    }

    fn edit(id: &str, path: &str) -> String {
        serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[
            {"type":"tool_use","id":id,"name":"Edit","input":{"file_path":path,"old_string":"a","new_string":"b"}}]}})
        .to_string()
    }

    #[test]
    fn round_4_facts_edits_commands_own_errors_and_question_turns() {
        // A question with a short remark after it is still a question-only turn; one
        // that asks for a change is not.
        assert!(read(&user("how big is the image now? just want the number"), &[]).questions_only);
        assert!(!read(&user("why is the CI slow? move it to the big runners"), &[]).questions_only);
        // Words of limiting in the last turn are a hint for a claimed instruction.
        assert!(read(&user("csv today, the pdf one waits on legal"), &[]).last_turn_limits);
        assert!(!read(&user("Build the search feature from the plan."), &[]).last_turn_limits);
        // A plan ticked by a shell command is a plan edit; reading it is not.
        let plan = ["docs/plans/p.md"];
        let t = [bash("a", "sed -i 's/- \\[ \\]/- [x]/' docs/plans/p.md"), result("a", false, "")].join("\n");
        assert_eq!(read(&t, &plan).plan_edits, 1);
        let t = [bash("a", "grep -c x docs/plans/p.md"), bash("b", "echo done >> docs/plans/p.md")].join("\n");
        assert_eq!(read(&t, &plan).plan_edits, 1);
        // A failing build naming an edited file is the agent's own error, unless the
        // output says the cause is outside (an unreachable host).
        let t = [
            edit("e", "/repo/src/uart.rs"),
            bash("b", "cargo build"),
            result("b", true, "Exit code 101\nerror[E0308]: mismatched types\n --> src/uart.rs:52:30"),
        ]
        .join("\n");
        let f = read(&t, &[]);
        assert_eq!((f.own_error.as_deref(), f.edited_paths.len()), (Some("uart.rs"), 1));
        let t = [
            edit("e", "/repo/tests/test_client.py"),
            bash("b", "pytest tests/test_client.py"),
            result("b", true, "FAILED tests/test_client.py::test_charge - connection refused"),
        ]
        .join("\n");
        assert_eq!(read(&t, &[]).own_error, None);
        let t = [
            edit("e", "/repo/src/lib.rs"),
            bash("b", "cargo build"),
            result("b", true, "Exit code 101\nerror: --> /home/u/.cargo/registry/src/ring-0.17/src/lib.rs:9:1"),
        ]
        .join("\n");
        assert_eq!(read(&t, &[]).own_error, None, "a dependency's file of the same name");
        // Prose edited after the last run leaves the code verified.
        let t = [
            edit("e", "/repo/src/lib.rs"),
            bash("t", "cargo test"),
            result("t", false, "test result: ok. 3 passed; 0 failed"),
            edit("d", "/repo/README.md"),
            edit("c", "/repo/src/main.rs"),
        ]
        .join("\n");
        let f = read(&t, &[]);
        assert_eq!((f.edits_after_check, f.code_edits_after_check), (2, 1));
    }

    #[test]
    fn hurried_spelling_small_tasks_and_early_looks() {
        assert!(near_miss("jsut", "just") && near_miss("nothng", "nothing") && near_miss("reveiw", "review"));
        assert!(!near_miss("just", "just") && !near_miss("ony", "only") && !near_miss("spot", "stop"));
        let kind = |t: &str| read(&user(t), &[]).instruction.map(|i| i.kind);
        assert_eq!(kind("can u jsut fix the footer link, nothng else"), Some(InstructionKind::Scope));
        assert_eq!(kind("small fix: the last row repeats on page 2"), Some(InstructionKind::Scope));
        assert_eq!(kind("The plan is three small changes, please do it."), None);
        assert_eq!(kind("Start on search; open a draft PR once results show up."), Some(InstructionKind::Pause));
        assert_eq!(kind("Add the screen. The design team wants to see it before the rest."), None, "widened");
        assert_eq!(kind("Add the screen. The design team wants to see it first."), Some(InstructionKind::Pause));
        assert_eq!(kind("Implement the plan. Open a draft PR early and keep pushing to it."), None);
        assert_eq!(kind("Push the bump, wait for the CI run and fix what breaks."), None);
    }

    #[test]
    fn the_last_check_and_access_refusals() {
        let t = [
            bash("a", "cargo test"),
            result("a", false, "test result: ok. 9 passed; 0 failed"),
            bash("b", "cargo clippy -- -D warnings"),
            result("b", true, "Exit code 101\nerror: needless borrow"),
            bash("c", "mkdocs build --strict"),
            result("c", false, "INFO - Documentation built in 1.2 seconds"),
        ];
        let f = read(&t[..4].join("\n"), &[]);
        assert_eq!(f.last_check.map(|c| (c.command, c.ok)), Some(("cargo clippy -- -D warnings".into(), false)));
        let f = read(&t.join("\n"), &[]);
        assert_eq!(f.last_check.map(|c| (c.command, c.ok)), Some(("mkdocs build --strict".into(), true)));
        let unset = [bash("d", "echo ${API_TOKEN:-unset}"), result("d", false, "unset")].join("\n");
        assert_eq!(read(&unset, &[]).access_failures, 1);
        let set = [bash("d", "printenv API_TOKEN | wc -c"), result("d", false, "41")].join("\n");
        assert_eq!(read(&set, &[]).access_failures, 0);
    }

    #[test]
    fn plan_edits_are_told_from_work_edits() {
        let edit = |id: &str, path: &str| {
            serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[
                {"type":"tool_use","id":id,"name":"Edit","input":{"file_path":path,"old_string":"- [ ]","new_string":"- [x]"}}]}})
            .to_string()
        };
        let t = [
            edit("a", "/repo/docs/plans/work.md"),
            edit("b", "/repo/src/lib.rs"),
            edit("c", "/repo/xdocs/plans/work.md"),
        ]
        .join("\n");
        let f = read(&t, &["docs/plans/work.md"]);
        assert_eq!((f.plan_edits, f.work_edits), (1, 2));
    }

    #[test]
    fn a_tail_streamed_in_chunks_reads_as_the_tail_read_whole() {
        use crate::input::{Kind, Tail, read_tail};
        let user = |t: &str| serde_json::json!({"type":"user","message":{"role":"user","content":t}}).to_string();
        let call = |id: &str, cmd: &str| {
            serde_json::json!({"type":"assistant","message":{"role":"assistant","content":[
                {"type":"text","text":format!("Running {cmd}.")},
                {"type":"tool_use","id":id,"name":"Bash","input":{"command":cmd}}]}})
            .to_string()
        };
        let result = |id: &str, err: bool, out: &str| {
            serde_json::json!({"type":"user","message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":id,"is_error":err,"content":out}]}})
            .to_string()
        };
        let big = "line of a long output\n".repeat(2000);
        let mut t = Vec::new();
        for line in [
            user("Implement the plan; stop after step two so I can review."),
            call("a", "cargo test"),
            result("a", false, &format!("{big}test result: ok. 9 passed; 0 failed")),
            call("b", "rg -n fn src"),
            result("b", false, &big),
            call("c", "cargo test"),
            result("c", true, "Exit code 101\ntest result: FAILED. 8 passed; 1 failed"),
        ] {
            t.extend_from_slice(line.as_bytes());
            t.extend_from_slice(b"\r\n");
        }
        // A line with a bad byte, then a torn last line without a line end.
        let bad = user("Also check the docs please");
        let at = t.len() + bad.find("docs").unwrap();
        t.extend_from_slice(bad.as_bytes());
        t[at] = 0xff;
        t.extend_from_slice(b"\n");
        t.extend_from_slice(
            br#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"All done."#,
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("session.jsonl");
        std::fs::write(&p, &t).unwrap();
        let len = t.len() as u64;
        for limit in [len, len - 100, len / 2, 3000, 200] {
            let whole = read_tail(&p, Kind::Transcript, limit).unwrap();
            let want = read_bytes(&whole, &["docs/plans/work.md"]);
            let tail = Tail::open(&p, Kind::Transcript, limit).unwrap();
            for chunk in [1, 5, 4096, crate::input::TAIL_CHUNK] {
                let got = read_lines(&["docs/plans/work.md"], |each| tail.for_each_line_in(chunk, each)).unwrap();
                assert_eq!(got, want, "limit {limit} chunk {chunk}");
            }
            // The stop reason searched from the end is the one the whole tail gives.
            let last = super::super::payload::last_assistant_text(&whole);
            for window in [1, 64, 1024, 64 * 1024] {
                let found = tail.find_from_end(window, |l| super::super::payload::last_assistant_text(l)).unwrap();
                assert_eq!(found, last, "limit {limit} window {window}");
            }
        }
        // Sanity: the whole file's facts are the full session's.
        let f = read_bytes(&t, &[]);
        assert_eq!(f.last_test.map(|r| r.ok), Some(false));
        assert_eq!(f.user_turns, 2);
    }
}
