//! What a stop message says, read by the built-in authority: whether it carries a
//! positive, legitimate reason to stop (the work is claimed complete, a question or
//! decision only the user can answer, access or information the agent lacks, an
//! error it cannot resolve, the gate itself), and the two guards that discount a
//! reason: a **stated continuation** (the message announces the agent's own next
//! piece of work, then stops) and a **false excuse** (an inability whose only cause
//! is the agent's own session: context, tokens, conversation length, compaction,
//! time; or a claim that everything is committed while the working tree has changes).
//!
//! The vocabulary below is general: classes of words (totality words, done words,
//! access nouns, error nouns, blockers, remaining-work words) combined per sentence,
//! not phrases lifted from any test message. `tests/fixtures/gate/` holds a labelled
//! corpus written before these lists; `docs/gate.md` reports the agreement.

/// A legitimate reason to stop, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The stop concerns the stop gate or its hook.
    SelfReference,
    /// Access, a secret, credentials, permissions or information the agent lacks.
    MissingAccess,
    /// An error the agent cannot resolve.
    Error,
    /// A question or decision only the user can answer.
    Question,
    /// The whole piece of work is claimed complete.
    Completion,
}

/// What [`read`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    /// The legitimate reason, after the guards.
    pub reason: Option<Reason>,
    /// Talk of saving context, sessions, length, checkpoints, pausing, later work.
    pub drift: bool,
    /// The message announces the agent's own next work (`I'll build that now`).
    pub stated_continuation: bool,
    /// A reason was discounted as a false excuse.
    pub false_excuse: bool,
    /// The missing access is a credential, key, secret or permission the agent says
    /// it lacks (not information only the user has, and not for an action the user
    /// must own such as a deploy): a tool call that met it can show it.
    pub credential: bool,
    /// The sentence (normalised) in which the agent says it lacks a credential or
    /// access, whatever the action: `builtin` ties it to an open plan step, because a
    /// credential claimed missing for the plan's own next step is one a tool call
    /// would have met.
    pub lack_sentence: Option<String>,
}

/// Lower-case, apostrophes dropped (`can't` -> `cant`), every other non-alphanumeric
/// character a single space, padded with one space each side so that ` word `
/// matches whole words.
pub(crate) fn norm(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(' ');
    let mut space = true;
    for c in s.chars().flat_map(char::to_lowercase) {
        if c == '\'' || c == '\u{2019}' {
            continue;
        }
        if c.is_alphanumeric() || c == '/' {
            out.push(c);
            space = false;
        } else if !space {
            out.push(' ');
            space = true;
        }
    }
    if !space {
        out.push(' ');
    }
    out
}

fn has(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| text.contains(w))
}

// Each entry is written normalised (see `norm`): spaces mark word boundaries, and an
// entry without a trailing space is a stem (` complet` matches complete, completed).

/// Causes that belong to the agent's own session, never a reason to stop while a
/// durable plan exists.
const SESSION_CAUSES: &[&str] = &[
    " context",
    " tokens",
    " token limit",
    " token budget",
    " conversation",
    " session",
    " chat ",
    " thread ",
    " compact",
    " summaris",
    " summariz",
    " condensed",
    " long ",
    " longer ",
    " length",
    " lengthy",
    " headroom",
    " capacity",
    " clean slate",
    " out of time",
    " single turn",
    " one turn",
    " in one go",
];

/// Talk that accompanies a halfway stop.
const DRIFT: &[&str] = &[
    " checkpoint",
    " milestone",
    " pause",
    " pausing",
    " wrap ",
    " wrapping",
    " later",
    " follow up",
    " followup",
    " follow on",
    " next time",
    " another time",
    " tomorrow",
    " stopping point",
    " stop here",
    " stopping here",
    " stop now",
    " stopping now",
    " for now",
    " fresh ",
    " new session",
    " new conversation",
    " new chat",
];

/// The whole: a claim about every part of the work.
const TOTALITY: &[&str] =
    &[" all ", " every", " everything ", " whole ", " entire", " fully ", " full ", " requested "];
/// Nouns that name the whole piece of work.
const WHOLE_WORK: &[&str] = &[
    " task ",
    " work ",
    " feature ",
    " refactor ",
    " fix ",
    " migration ",
    " implementation ",
    " plan ",
    " pr ",
    " rollout ",
    " job ",
    " bug ",
    " request ",
];
/// Words that say something is done.
const DONE: &[&str] = &[
    " done ",
    " complete ",
    " completed ",
    " completes ",
    " finished ",
    " implemented ",
    " in place ",
    " merged ",
    " shipped ",
    " fixed ",
    " checked ",
    " wrapped up ",
    " ready for review ",
    " pass ",
    " passes ",
    " green ",
];
/// Idioms that report the end of the work wherever they stand.
const DONE_IDIOMS: &[&str] = &[" thats everything", " thats all ", " were done", " we are done", " nothing left to do"];
/// A sentence that is only one of these is a completion report (`Done.`).
const DONE_ALONE: &[&str] = &[
    " done ",
    " all done ",
    " finished ",
    " complete ",
    " shipped ",
    " task complete ",
    " were done ",
    " we are done ",
];
/// The claim covers a part only.
const PARTIAL: &[&str] = &[
    " so far",
    " first ",
    " half",
    " part ",
    " partly",
    " partial",
    " some ",
    " most ",
    " bulk",
    " up to ",
    " phase one",
    " step 1",
    " step 2",
    " step 3",
    " one of ",
    " / ",
];
/// Words that say work remains.
const REMAINING: &[&str] = &[
    " remaining",
    " remain",
    " left ",
    " still ",
    " next ",
    " todo",
    " to do ",
    " not yet",
    " later",
    " follow up",
    " pending",
    " outstanding",
    " the rest",
    " didnt get to",
    " havent ",
    " not started",
    " unchecked",
    " afterwards",
    " will have to wait",
];
/// Negations that turn a remaining-work word into a completion (`nothing left`).
const NOTHING_REMAINS: &[&str] = &[
    " nothing is left",
    " nothing left",
    " nothing remaining",
    " nothing remains",
    " no remaining",
    " none left",
    " no steps left",
    " nothing else",
];

/// Nouns of access the agent lacks.
const ACCESS: &[&str] = &[
    " credential",
    " secret",
    " api key",
    " password",
    " passphrase",
    " permission",
    " access ",
    " authoriz",
    " authoris",
    " unauthoriz",
    " forbidden",
    " 401 ",
    " 403 ",
    " 2fa",
    " mfa ",
    " otp ",
    " vpn ",
    " certificate",
    " keystore",
    " key ",
    " keys ",
    " gpg",
    " publickey",
    " license",
    " licence",
    " rights ",
    " read only",
    " admin",
    " login",
    " registry credentials",
];
/// Words that the agent lacks or needs something.
const LACK: &[&str] = &[
    " dont have",
    " do not have",
    " doesnt have",
    " does not have",
    " lack",
    " missing",
    " not configured",
    " arent configured",
    " isnt set",
    " not set ",
    " need ",
    " needs ",
    " requires",
    " required",
    " cant ",
    " cannot ",
    " denied",
    " rejects",
    " rejected",
    " no way to",
    " not available",
    " isnt available",
    " unavailable",
    " only has",
    " is read only",
];
/// Information the user has and the repository does not.
const MISSING_INFO: &[&str] = &[
    " missing information",
    " isnt in the repo",
    " not in the repo",
    " isnt in the issue",
    " doesnt say",
    " does not say",
    " isnt specified",
    " not specified",
    " dont know the real",
    " cant reach",
    " could you paste",
    " could you provide",
    " can you provide",
    " can you share",
    " could you share",
    " please provide",
    " please add",
    " please share",
];

/// Nouns and verbs of an error or a broken environment.
const ERROR: &[&str] = &[
    " error",
    " fail",
    " crash",
    " segfault",
    " panic",
    " ice ",
    " exception",
    " broken",
    " broke ",
    " times out",
    " timed out",
    " timeout",
    " 500 ",
    " 502 ",
    " 503 ",
    " enospc",
    " disk is full",
    " no space left",
    " out of memory",
    " exit code",
    " no outbound network",
    " not running",
    " isnt running",
    " cannot be installed",
    " cant be installed",
    " dont compile",
    " doesnt compile",
    " does not compile",
    " conflicts",
    " no longer exists",
    " unpublished",
    " flaky",
    " cant run",
    " there s no",
    " theres no",
    " no such",
];
/// Words that the agent cannot get past the error.
const BLOCKER: &[&str] = &[
    " cant ",
    " cannot ",
    " can not ",
    " unable",
    " couldnt",
    " could not ",
    " not able",
    " no way",
    " outside ",
    " out of scope",
    " beyond ",
    " no control",
    " sudo",
    " root",
    " stuck",
    " blocks me",
    " blocked",
    " dont know",
    " tried ",
    " requires a license",
    " nothing i can",
    " nothing we can",
    " nothing in our code",
    " is down",
    " down for",
];

/// A question that only asks leave to go on with the plan: not a decision for the user.
const ASKS_LEAVE: &[&str] = &[
    " shall i ",
    " should i ",
    " do you want me to ",
    " would you like me to ",
    " want me to ",
    " let me know if you want",
    " let me know if youd like",
    " if youd like me to",
    " if you want me to",
];
const GO_ON: &[&str] = &[
    " continue",
    " proceed",
    " keep going",
    " carry on",
    " go on ",
    " move on",
    " resume",
    " next ",
    " remaining",
    " the rest",
    " finish ",
];
/// A decision or an answer the user is asked for, without a question mark.
const ASKS_USER: &[&str] = &[
    " need you to ",
    " need a decision",
    " decision from you",
    " decision only you",
    " only you can",
    " your decision",
    " your go ahead",
    " your explicit",
    " please confirm",
    " let me know which",
    " waiting on your",
    " waiting for your",
    " need your ",
    " please decide",
    " need to know whether",
    " need to know which",
    " can you clarify",
    " could you clarify",
];

/// The agent announces its own next work.
const ANNOUNCE: &[&str] =
    &[" ill ", " i will ", " let me ", " going to ", " moving on", " now i ", " i am going to ", " im going to "];
const WORK_VERBS: &[&str] = &[
    " build",
    " implement",
    " add ",
    " write",
    " move on",
    " tackle",
    " start",
    " begin",
    " update",
    " create",
    " fix ",
    " wire",
    " port ",
    " refactor",
    " run ",
    " work on",
    " do ",
    " set up",
    " now",
];
/// Words that put the announced work off: not a stated continuation.
const DEFERRED: &[&str] = &[
    " later",
    " follow up",
    " next time",
    " another time",
    " session",
    " conversation",
    " tomorrow",
    " afterwards",
    " after this",
    " as soon as you",
    " once you",
    " when you",
    " if you",
    " let me know",
    " stop",
    " pause",
    " wrap",
];
/// A claim that the work is saved.
const CLAIMS_SAVED: &[&str] = &[" committed", " pushed", " saved"];

/// A sentence of the message and whether it ended with a question mark.
struct Sentence {
    text: String,
    question: bool,
}

fn sentences(message: &str) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        // A dot inside a word (`work.md`, `3.11`) does not end a sentence.
        let end = match c {
            '.' => chars.peek().is_none_or(|n| n.is_whitespace()),
            '!' | '?' | ';' | '\n' => true,
            _ => false,
        };
        if !end {
            cur.push(c);
            continue;
        }
        let n = norm(&cur);
        cur.clear();
        if !n.trim().is_empty() {
            out.push(Sentence { text: n, question: c == '?' });
        } else if c == '?'
            && let Some(last) = out.last_mut()
        {
            last.question = true;
        }
    }
    let n = norm(&cur);
    if !n.trim().is_empty() {
        out.push(Sentence { text: n, question: false });
    }
    out
}

fn asks_leave(s: &str) -> bool {
    has(s, ASKS_LEAVE) && has(s, GO_ON)
}

fn announces_work(s: &str) -> bool {
    ANNOUNCE.iter().any(|a| {
        s.match_indices(a).any(|(i, _)| {
            let after: String = s[i + a.len() - 1..].split(' ').take(5).collect::<Vec<_>>().join(" ") + " ";
            let after = format!(" {}", after.trim_start());
            has(&after, WORK_VERBS) && !after.starts_with(" know")
        })
    }) && !has(s, DEFERRED)
}

/// Read a stop message. `uncommitted`: whether the working tree has uncommitted
/// changes (`None`: unknown), which makes a claim that everything is committed false.
pub fn read(message: &str, uncommitted: Option<bool>) -> Reading {
    let marked = mark_secret_names(message);
    let message = marked.as_str();
    let all = norm(message);
    let ss = sentences(message);
    let mut r = Reading {
        drift: has(&all, DRIFT) || has(&all, SESSION_CAUSES),
        stated_continuation: ss.last().is_some_and(|s| announces_work(&s.text))
            || ss.iter().rev().take(2).any(|s| announces_work(&s.text) && !has(&s.text, SESSION_CAUSES)),
        ..Reading::default()
    };
    if has(&all, &[" stop gate", " stop hook", " premerge gate"]) {
        r.reason = Some(Reason::SelfReference);
        return r;
    }
    // A sentence whose only cause is the session itself is a false excuse: its
    // "cannot" or "blocked" is no blocker.
    let excuse = |s: &Sentence| has(&s.text, SESSION_CAUSES) && !has(&s.text, ACCESS) && !has(&s.text, ERROR);
    let mut access = false;
    let mut error_noun = false;
    let mut blocker = false;
    let mut question = false;
    for s in &ss {
        let t = &s.text;
        if excuse(s) {
            if has(t, BLOCKER) || has(t, LACK) {
                r.false_excuse = true;
            }
            if s.question && !asks_leave(t) && !has(t, &[" new session", " fresh", " new conversation", " new chat"]) {
                question = true;
            }
            if has(t, ASKS_USER) {
                question = true;
            }
            continue;
        }
        let lacks = has(t, ACCESS) && has(t, LACK);
        // Only a lack the agent states as its own ("I don't have", "isn't set"); "needs
        // a key" or "requires access" states what a step takes, not what was met.
        const OWN_LACK: &[&str] = &[
            " dont have",
            " do not have",
            " lack",
            " missing",
            " not configured",
            " arent configured",
            " isnt set",
            " not set ",
            " not available",
            " isnt available",
            " unavailable",
            " no access",
            " cant access",
            " cannot access",
        ];
        let own_lack = lacks && has(t, OWN_LACK) && !s.question && !has(t, MISSING_INFO);
        r.credential |= own_lack && !has(t, DESTRUCTIVE);
        if own_lack && r.lack_sentence.is_none() {
            r.lack_sentence = Some(t.clone());
        }
        access |= lacks || has(t, MISSING_INFO);
        error_noun |= has(t, ERROR);
        blocker |= has(t, BLOCKER);
        question |= (s.question && !asks_leave(t)) || has(t, ASKS_USER);
    }
    let completion = completion(&ss, &all);
    let saved_claim_false = uncommitted == Some(true) && has(&all, CLAIMS_SAVED);
    r.reason = if access {
        Some(Reason::MissingAccess)
    } else if error_noun && blocker {
        Some(Reason::Error)
    } else if question {
        Some(Reason::Question)
    } else if completion && !r.stated_continuation && !saved_claim_false {
        Some(Reason::Completion)
    } else {
        if completion && saved_claim_false {
            r.false_excuse = true;
        }
        None
    };
    r
}

/// Suffixes of an environment variable that holds a secret (`NPM_TOKEN`, `DD_API_KEY`).
const SECRET_SUFFIXES: &[&str] = &["_TOKEN", "_KEY", "_SECRET", "_PASSWORD", "_PAT", "_CREDENTIALS", "_PASSPHRASE"];

/// The message with `(credential)` after each name of a secret-holding variable:
/// whatever the service, `SENTRY_AUTH_TOKEN` or `NPM_TOKEN` names a credential, which
/// the access words would otherwise only know as "token".
fn mark_secret_names(message: &str) -> String {
    let mut out = String::with_capacity(message.len() + 16);
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(word);
        let upper = word.len() >= 4 && word.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if upper && SECRET_SUFFIXES.iter().any(|s| word.ends_with(s)) {
            out.push_str(" (credential)");
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The whole work is claimed done and nothing is said to remain.
fn completion(ss: &[Sentence], all: &str) -> bool {
    // A sentence that says nothing remains reports no remaining work.
    if ss.iter().any(|s| has(&s.text, REMAINING) && !has(&s.text, NOTHING_REMAINS)) {
        return false;
    }
    if has(all, DONE_IDIOMS) {
        return true;
    }
    ss.iter().any(|s| {
        let t = &s.text;
        if DONE_ALONE.contains(&t.as_str()) {
            return true;
        }
        let scope = has(t, TOTALITY) || has(t, WHOLE_WORK) || has(t, NOTHING_REMAINS);
        let partial = has(t, PARTIAL) || t.split(' ').any(|w| w.contains('/') && w.chars().any(|c| c.is_ascii_digit()));
        (scope && has(t, DONE) && !partial) || has(t, NOTHING_REMAINS)
    })
}

/// Claims a final message makes that the session's facts can refute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Claims {
    /// The tests (or the build, or CI) are said to pass.
    pub tests_pass: bool,
    /// The stop is said to follow the user's own instruction.
    pub user_instruction: bool,
    /// Open work is waved away as optional, out of scope, trivial or for someone else.
    pub waves_away: bool,
    /// A sentence says the work is committed or pushed (not "uncommitted", not a question).
    pub committed: bool,
    /// A sentence says the agent stops or waits because it was told to ("following
    /// the instruction to stop after the first step"): an instruction to stop that
    /// must be in the user's turns.
    pub stop_instruction: bool,
    /// Since round 5: the work is said to be verified or to pass in words beyond
    /// "tests pass" ("verified locally, everything passes").
    pub verified: bool,
    /// Since round 5: the whole suite is said to pass ("the full test suite passes").
    pub suite: bool,
    /// Since round 5: tests by name are said to pass ("the parser tests pass"), not
    /// only a build or CI.
    pub tests_named: bool,
}

/// A test, build or check word next to a passing word, not negated.
const TESTS: &[&str] = &[" test", " suite", " build", " ci ", " checks", " clippy", " lint", " specs"];
/// Words that say the work itself was tested: a claim of a passing run.
const TESTED: &[&str] = &[" and tested", " fully tested", " all tested", " is tested", " are tested"];
const PASSING: &[&str] = &[" pass", " green", " succeed", " clean", " all ok", " no failures"];
const NOT_PASSING: &[&str] =
    &[" not ", " fail", " dont ", " doesnt ", " didnt ", " havent ", " isnt ", " red ", " couldnt "];
/// The agent says it follows the user's own instruction.
const CLAIMS_INSTRUCTION: &[&str] = &[
    " as you asked",
    " as requested",
    " as you requested",
    " you asked me to",
    " you asked for",
    " per your instruction",
    " per your request",
    " as instructed",
    " you wanted me to",
    " you told me to",
    " as you said",
    " like you asked",
    " at your request",
    " as you wanted",
    " your instruction",
    " you said to",
];
/// Open work called unnecessary.
/// A test runner named as a word of a claim ("PHPUnit is green", "pytest passes",
/// "jest is clean"): a name ending like a test framework's, or a runner without one.
fn names_runner(w: &str) -> bool {
    const RUNNERS: &[&str] = &["jest", "mocha", "rspec", "vitest", "ava", "jasmine", "karma", "cypress", "playwright"];
    (w.len() > 4 && (w.ends_with("unit") || w.ends_with("test") || w.ends_with("spec"))) || RUNNERS.contains(&w)
}

/// Words that say the agent was told something ("the instruction to ...", "I was
/// told to", "as directed").
const TOLD: &[&str] = &[" instruction", " instructed", " told to", " directed", " asked to", " the request to"];
/// Words of stopping or waiting, next to [`TOLD`] in a claim of a stop instruction.
const HALTS: &[&str] = &[" stop", " wait", " pause", " halt", " approval", " hold off"];
/// The agent's own stop now, next to a claimed instruction ("I'm waiting", "here").
const HERE: &[&str] = &[" here", " waiting", " wait for", " your approval", " your review", " until you", " now"];

const WAVES_AWAY: &[&str] = &[
    " optional",
    " out of scope",
    " outside the scope",
    " trivial",
    " someone else",
    " nice to have",
    " not essential",
    " can be skipped",
    " not strictly",
    " not needed",
    " not necessary",
    " unnecessary",
    " easy to finish",
    " easy follow",
    " straightforward to",
    " minor polish",
    " cosmetic",
    " left as an exercise",
];

/// Read the message's checkable claims.
pub fn claims(message: &str) -> Claims {
    let mut c = Claims::default();
    for s in sentences(message) {
        let t = &s.text;
        let names_tests = has(t, TESTS) || t.split(' ').any(names_runner);
        c.tests_pass |= names_tests && has(t, PASSING) && !has(t, NOT_PASSING) && !s.question;
        // Since round 6b: "done and tested" claims a passing run as much as "tests pass".
        c.tests_pass |= has(t, TESTED) && !has(t, NOT_PASSING) && !s.question;
        let tests_by_name = has(t, &[" test", " spec"]) || t.split(' ').any(names_runner);
        c.tests_named |= tests_by_name && has(t, PASSING) && !has(t, NOT_PASSING) && !s.question;
        const NOT_SAVED: &[&str] = &[" nothing", " no ", " without", " yet", " left", " leave", " once ", " when "];
        c.committed |= has(t, &[" committed", " pushed"]) && !has(t, NOT_PASSING) && !has(t, NOT_SAVED) && !s.question;
        c.user_instruction |= has(t, CLAIMS_INSTRUCTION);
        c.stop_instruction |= has(t, TOLD) && has(t, HALTS) && has(t, HERE) && !s.question;
        c.waves_away |= has(t, WAVES_AWAY);
    }
    c.verified = super::readings::claims_verified(message);
    c.suite = super::readings::claims_suite(message);
    c
}

/// Words of an action the user must own: destructive, irreversible, outward.
const DESTRUCTIVE: &[&str] = &[
    " delete",
    " drop ",
    " force push",
    " rm rf",
    " irreversib",
    " cannot be undone",
    " cant be undone",
    " production",
    " prod ",
    " wipe",
    " truncate",
    " reset hard",
    " purge",
    " deploy",
    " release now",
    " cut the release",
    " cut a release",
    " tag the release",
    " publish",
    " overwrite",
    " rewrite history",
    " destroy",
    " live data",
    " customers",
    " paid",
    " billing",
];
/// A question asking leave to act.
const PERMISSION: &[&str] = &[
    " should i ",
    " shall i ",
    " can i ",
    " may i ",
    " ok to ",
    " okay to ",
    " go ahead",
    " want me to ",
    " would you like me to ",
    " do you want",
    " should we ",
    " shall we ",
    " proceed",
    " ready to ",
    " good to go",
];
/// The agent as the subject of its own next act inside a question ("I can begin now
/// with the filters, yes?", "we continue with the export?"): leave asked in the words
/// of a speaker who does not use "shall I" (since round 6).
const AGENT_NEXT: &[&str] = &[
    " i can ",
    " i may ",
    " i begin",
    " i start",
    " i continue",
    " i proceed",
    " i go ahead",
    " i go on",
    " i move on",
    " i do the",
    " i make the",
    " we continue",
    " we proceed",
    " we go on",
    " we move on",
];
/// Phrases that ask for the user's opinion on a look ("tell me what you think"):
/// feedback, not an open question.
const FEEDBACK: &[&str] = &[
    " what you think",
    " what do you think",
    " what you make of it",
    " how it looks",
    " how that looks",
    " if it looks ok",
    " if it looks good",
    " if it looks right",
    " if its ok",
    " if that works for you",
];
/// Words too common to tie a question to a plan step.
const COMMON: &[&str] = &[
    "should",
    "shall",
    "would",
    "could",
    "with",
    "that",
    "this",
    "then",
    "next",
    "step",
    "steps",
    "plan",
    "ahead",
    "want",
    "like",
    "start",
    "move",
    "onto",
    "into",
    "from",
    "them",
    "there",
    "have",
    "will",
    "also",
    "now",
    "the",
    "and",
    "for",
    "you",
    "proceed",
    "continue",
    "implement",
    "implementing",
    "add",
    "adding",
    "go",
];

fn content_words(s: &str) -> Vec<String> {
    norm(s)
        .split(' ')
        .filter(|w| w.len() >= 3 && !COMMON.contains(w))
        // A plural and its singular are one word here ("tests" / "test").
        .map(|w| w.strip_suffix('s').filter(|r| r.len() >= 3).unwrap_or(w).to_string())
        .collect()
}

/// What the questions of a message ask.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Questions {
    /// A question asks leave for one of `steps` (the plan's own next steps).
    pub asks_plan_step: bool,
    /// A question or request leaves a genuine decision to the user: a choice between
    /// alternatives, a destructive or irreversible action, access the agent lacks.
    pub genuine_decision: bool,
    /// A question or request hands the work to the user for a look ("Could you
    /// review it?", "please take a look at the PR"): a hand-off, not a decision.
    pub hands_off: bool,
    /// A genuine decision for a reason other than a choice between alternatives or an
    /// open question: a destructive action, access the agent lacks, information only
    /// the user has. A plan that names the choice never answers these.
    pub other_decision: bool,
}

/// The user as the subject of a look the agent asks for (`t` normalised).
fn asks_for_a_look(t: &str) -> bool {
    const LOOK: &[&str] =
        &["review", "look", "check", "test", "try", "verify", "approve", "merge", "glance", "eyeball", "skim", "read"];
    let w: Vec<&str> = t.split(' ').filter(|w| !w.is_empty()).collect();
    w.iter()
        .enumerate()
        .any(|(i, x)| matches!(*x, "you" | "please" | "pls") && w[i + 1..].iter().take(3).any(|y| LOOK.contains(y)))
}

/// Read the questions of a message against the plan's next unchecked steps.
pub fn questions(message: &str, steps: &[String]) -> Questions {
    let step_words: Vec<Vec<String>> = steps.iter().map(|s| content_words(s)).collect();
    let mut q = Questions::default();
    for s in sentences(message) {
        let t = &s.text;
        let asks = s.question || has(t, ASKS_USER);
        if !asks {
            continue;
        }
        let alternatives = s.question && t.contains(" or ") && !t.contains(" or not ") && !t.ends_with(" or ");
        let other = has(t, DESTRUCTIVE) || (has(t, ACCESS) && has(t, LACK)) || has(t, MISSING_INFO);
        if alternatives || other {
            q.genuine_decision = true;
            q.other_decision |= other;
            continue;
        }
        // "tell me what you think", "your thoughts": feedback on the look, not a question
        // of its own (since round 6).
        let open_words = FEEDBACK.iter().fold(t.clone(), |acc, f| acc.replace(f, " "));
        if asks_for_a_look(t) && !has(&open_words, &[" which ", " what ", " how ", " whether ", " who ", " if "]) {
            q.hands_off = true;
            continue;
        }
        if !has(t, PERMISSION) && !has(t, ASKS_LEAVE) && !has(t, AGENT_NEXT) {
            // An open question ("Which timezone should the report use?") is the user's to answer.
            if has(t, &[" which ", " what ", " how ", " where ", " whether ", " who "]) {
                q.genuine_decision = true;
            }
            continue;
        }
        let words = content_words(t);
        let ties = step_words.iter().any(|sw| {
            let overlap = sw.iter().filter(|w| words.contains(w)).count();
            overlap >= 2.min(sw.len()) && overlap > 0
        });
        if ties || has(t, GO_ON) {
            q.asks_plan_step = true;
        }
    }
    q
}

/// Whether a normalised text names a destructive or irreversible action, or one the
/// user owns (drop, delete, force push, publish, production).
pub(crate) fn destructive(t: &str) -> bool {
    has(t, DESTRUCTIVE)
}

/// Words too common to be one side of a choice ("in Postgres or in Redis").
const CHOICE_FILLER: &[&str] = &[
    "in", "on", "at", "to", "with", "use", "using", "the", "a", "an", "as", "by", "via", "it", "we", "be", "into",
    "of", "for", "keep", "go", "just", "through", "thru", "via", "over", "behind", "across", "both",
];

/// The two sides of the first choice the message asks ("should the flags live in
/// Postgres or in Redis?"): the word before ` or ` and the first word after it that
/// is not a filler, both normalised.
pub fn choice(message: &str) -> Option<(String, String)> {
    sentences(message).into_iter().filter(|s| s.question).find_map(|s| {
        let (before, after) = s.text.split_once(" or ")?;
        // "Can you push it, or refresh the token?" asks the user to act, not to choose.
        if has(before, &[" can you ", " could you ", " would you ", " will you ", " do you mind"]) {
            return None;
        }
        // Each side by a word the other side lacks ("Redis locks or Postgres advisory
        // locks": redis against postgres, not locks against locks).
        let a_words: Vec<&str> = before.split(' ').filter(|w| !w.is_empty()).collect();
        let b_words: Vec<&str> = after.split(' ').filter(|w| !w.is_empty()).collect();
        let a = a_words.iter().rev().find(|w| !CHOICE_FILLER.contains(w) && !b_words.contains(w))?;
        let b = b_words.iter().find(|w| !CHOICE_FILLER.contains(w) && !a_words.contains(w))?;
        (a.len() >= 3 && b.len() >= 3 && a != b && *b != "not").then(|| (a.to_string(), b.to_string()))
    })
}

/// Whether a plan step makes the choice `(a, b)`: it names one side and not the
/// other, or names both and rules one out ("Postgres, not Redis", "instead of
/// Redis"). A step that leaves it open ("Postgres or Redis", "decide", "choose",
/// "TBD") makes none.
pub fn step_decides(step: &str, choice: &(String, String)) -> bool {
    let t = norm(step);
    let (a, b) = (format!(" {} ", choice.0), format!(" {} ", choice.1));
    // A step that leaves the choice open or only proposes one decides nothing.
    const OPEN: &[&str] = &[
        " or ",
        " decide ",
        " choose ",
        " tbd ",
        " pick ",
        " confirm",
        " maybe ",
        " probably ",
        " tentativ",
        " propos",
        " option",
        " vs ",
        " versus ",
        " undecided",
        " unclear",
        " to be decided",
        " either ",
    ];
    if has(&t, OPEN) || step.contains('?') {
        return false;
    }
    let rules_out = |x: &str| {
        [" not", " instead of", " rather than", " over", " no", " without", " drop"]
            .iter()
            .any(|n| t.contains(&format!("{n}{x}")))
    };
    match (t.contains(&a), t.contains(&b)) {
        (true, false) | (false, true) => true,
        (true, true) => rules_out(&a) || rules_out(&b),
        (false, false) => false,
    }
}

/// Whether the message asks the user to confirm a destructive or irreversible action
/// before the agent takes it ("please confirm before I run the delete"): a sentence
/// with a word of confirmation, a destructive action and the agent's pending act.
pub fn asks_confirmation_first(message: &str) -> bool {
    const CONFIRM: &[&str] =
        &[" confirm", " approv", " sign off", " go ahead", " green light", " say so", " your ok", " your okay"];
    const PENDING: &[&str] = &[" before ", " ill ", " i will ", " then i ", " until "];
    // The destructive act is the one pending: it follows the marker ("... before I run
    // the delete", "I'll purge them"), not a thing already built ("the delete endpoint").
    sentences(message).iter().any(|s| {
        has(&s.text, CONFIRM)
            && PENDING.iter().any(|p| s.text.match_indices(p).any(|(i, _)| has(&s.text[i..], DESTRUCTIVE)))
    })
}

/// Acts that cannot be taken back or that reach past the repository: dropping or
/// deleting data, force-pushing, deleting a branch, bucket or volume, rotating or
/// revoking a secret, a production migration, mail or money sent (normalised words).
const IRREVERSIBLE: &[&str] = &[
    " drop ",
    " drop table",
    " delete",
    " deleting",
    " truncat",
    " force push",
    " force pushing",
    " push force",
    " rm rf",
    " wipe",
    " purge",
    " destroy",
    " irreversib",
    " cannot be undone",
    " cant be undone",
    " cant undo",
    " cannot undo",
    " no way back",
    " rotate",
    " rotating",
    " revoke",
    " reset hard",
    " rewrite history",
    " rewriting history",
    " overwrite",
    " production",
    " prod ",
    " send the",
    " send out",
    " sending",
    " send it",
    " send them",
    " send an",
    " send a ",
    " email them",
    " email the",
    " email all",
    " mail them",
    " mail out",
    " transfer",
    " refund",
    " payout",
    " charge the",
    " charging",
    " decommission",
    " tear down",
    " teardown",
];

/// Whether the message asks the user before an act that cannot be taken back: a
/// sentence that asks (a question, or a request for a go-ahead) whether to take it
/// ("Do you want me to run the DROP now, or snapshot first?", "Shall I force-push?",
/// "Let me know whether to rotate the key", "waiting for your OK before I truncate"),
/// with the act after the asking words, not a thing already built ("can you review the
/// delete endpoint?").
pub fn asks_before_irreversible(message: &str) -> bool {
    const ASKING: &[&str] = &[
        " should i ",
        " shall i ",
        " can i ",
        " may i ",
        " ok to ",
        " okay to ",
        " ok if i ",
        " want me to ",
        " would you like me to ",
        " do you want",
        " should we ",
        " shall we ",
        " go ahead",
        " whether to ",
        " whether i ",
        " whether we ",
        " if i should",
        " if you want",
        " before i ",
        " before we ",
        " until you ",
        " if i ",
        " if we ",
        " confirm ",
        " confirm that",
        " approve ",
        " approval",
        " your ok",
        " your okay",
        " sign off",
        " green light",
        " say the word",
        " your call",
        " permission to ",
        " ready to ",
        " or should",
        " or do you",
    ];
    sentences(message).iter().any(|s| {
        let asks = s.question
            || has(&s.text, ASKS_USER)
            || has(&s.text, &[" confirm ", " approve ", " approval", " your ok", " let me know", " tell me"]);
        asks && ASKING.iter().any(|a| s.text.match_indices(a).any(|(i, _)| has(&s.text[i..], IRREVERSIBLE)))
    })
}

/// Whether the message says something stands in the way (a blocker or a lack).
pub fn blocks(message: &str) -> bool {
    let t = norm(message);
    has(&t, BLOCKER) || has(&t, LACK) || has(&t, &[" expired", " revoked", " refused"])
}

/// Whether the message names access or a credential in any form, an expiry included
/// ("the session token has expired"): with an access refusal the tools met, such a
/// sentence reports that refusal, it is no excuse.
pub fn names_access(message: &str) -> bool {
    let t = norm(message);
    has(&t, ACCESS) || has(&t, &[" token", " expired", " sso", " reauth", " sign in", " signed out", " logged out"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_4_claims_choices_and_confirmations() {
        assert!(claims("The export is done and PHPUnit is all green.").tests_pass);
        assert!(!claims("The export is done; phpunit is not green yet.").tests_pass);
        assert!(claims("It is tested and committed.").committed);
        assert!(!claims("Nothing is committed yet, so you can review the diff.").committed);
        assert!(claims("As the instructions say, I'm stopping here until you approve.").stop_instruction);
        assert!(!claims("Following the README's instructions I stopped the old workers; all done.").stop_instruction);
        let c = choice("Should the flags live in Postgres or in Redis? Which do you prefer?").unwrap();
        assert_eq!(c, ("postgres".to_string(), "redis".to_string()));
        assert!(step_decides("Store the flags in Postgres (decided, not Redis)", &c));
        assert!(step_decides("Add the Postgres flag table", &c));
        assert!(!step_decides("Pick the flag store: Postgres or Redis", &c));
        assert!(!step_decides("Use Postgres for flags (to confirm with ops)", &c));
        assert!(!step_decides("Add the admin endpoints", &c));
        assert_eq!(choice("Can you push it, or refresh the token?"), None, "a request to act, not a choice");
        assert!(asks_confirmation_first("Please look over the CSV and confirm before I run the delete."));
        assert!(asks_confirmation_first("Once you've confirmed the list I'll purge them."));
        assert!(!asks_confirmation_first("The delete endpoint is in; confirm the shape and I'll add the email."));
        let q = questions("Should I drop the table now or archive the rows first?", &[]);
        assert!(q.genuine_decision && q.other_decision);
        let q = questions("Should the cache be Memcached or Valkey?", &[]);
        assert!(q.genuine_decision && !q.other_decision);
        assert!(read("I don't have the deploy credentials, so I can't push the image.", None).lack_sentence.is_some());
    }

    #[test]
    fn norm_keeps_word_boundaries() {
        assert_eq!(norm("I can't -- stop!"), " i cant stop ");
        assert_eq!(norm(""), " ");
    }

    #[test]
    fn stated_continuation_and_its_deferral() {
        assert!(read("The model is in place. I'll add the serializer next.", None).stated_continuation);
        assert!(!read("I'll add the serializer in a follow-up.", None).stated_continuation);
        assert!(!read("Let me know if anything looks off.", None).stated_continuation);
    }

    #[test]
    fn secret_names_are_credentials() {
        assert_eq!(mark_secret_names("needs NPM_TOKEN, not NPM"), "needs NPM_TOKEN (credential), not NPM");
        let r = read("Publishing needs the NPM_TOKEN, which I don't have.", None);
        assert_eq!(r.reason, Some(Reason::MissingAccess));
        assert!(!r.credential, "publishing is an action the user owns");
        assert!(read("Uploading source maps needs SENTRY_AUTH_TOKEN, which I don't have.", None).credential);
    }

    #[test]
    fn a_session_cause_is_no_blocker() {
        let r = read("I cannot continue because the context window is nearly exhausted.", None);
        assert_eq!(r.reason, None);
        assert!(r.false_excuse);
        let r = read("I cannot continue: the build fails with a linker error I cannot fix.", None);
        assert_eq!(r.reason, Some(Reason::Error));
    }

    #[test]
    fn a_saved_claim_is_false_with_uncommitted_changes() {
        let msg = "All done, everything is committed.";
        assert_eq!(read(msg, Some(false)).reason, Some(Reason::Completion));
        let r = read(msg, Some(true));
        assert_eq!(r.reason, None);
        assert!(r.false_excuse);
    }

    #[test]
    fn claims_and_questions_against_the_plan() {
        let c = claims("All done. The tests pass and clippy is clean. The docs step is optional.");
        assert!(c.tests_pass && c.waves_away && !c.user_instruction);
        assert!(!claims("The tests do not pass yet.").tests_pass);
        assert!(claims("As you asked, I stopped after the parser.").user_instruction);
        let steps = vec!["Add retry logic to the HTTP client".to_string()];
        let q = questions("Should I go ahead and add the retry logic to the client?", &steps);
        assert_eq!(
            q,
            Questions { asks_plan_step: true, genuine_decision: false, hands_off: false, other_decision: false }
        );
        let q = questions("Should the retry use exponential backoff or a fixed delay?", &steps);
        assert!(q.genuine_decision);
        let q = questions("Shall I drop the legacy table in production now?", &steps);
        assert!(q.genuine_decision);
        let q = questions("Which timezone should the report use?", &steps);
        assert!(q.genuine_decision && !q.asks_plan_step);
    }

    #[test]
    fn leave_to_go_on_is_not_a_question_for_the_user() {
        assert_eq!(read("Shall I continue with the rest?", None).reason, None);
        assert_eq!(read("Should the cache be per user or global?", None).reason, Some(Reason::Question));
    }

    /// Round 6: a genuine decision before an act that cannot be taken back, in any wording.
    #[test]
    fn asking_before_an_irreversible_act() {
        assert!(asks_before_irreversible("Do you want me to run the DROP now, or take a fresh snapshot first?"));
        assert!(asks_before_irreversible("Shall I force-push now, or wait until she's pulled?"));
        assert!(asks_before_irreversible("Please tell me if I rotate now or you prefer to schedule a window."));
        assert!(asks_before_irreversible("Let me know whether to delete the old bucket now."));
        assert!(asks_before_irreversible("I'm waiting for your OK before I send it to the 412 admins."));
        assert!(!asks_before_irreversible("Can you review the delete endpoint before I move on?"));
        assert!(!asks_before_irreversible("As we discussed, I'll leave the confirmation email for now."));
        assert!(!asks_before_irreversible("Confirm the response shape and I'll add the confirmation email."));
        assert!(!asks_before_irreversible("The old table is dropped and the tests pass."));
    }
}
