//! Round 5's readings of a session, broad on purpose (docs/gate.md, "The session's
//! structure"): the user's **leave** to stop short in a wide vocabulary, the
//! **obstacles outside the code** a tool result met (access, network, rate limit,
//! disk, a service down), a **numeric condition** the user set and the numbers the
//! tools printed, the agent's **own slips** (a mistyped command, a path it typed
//! wrong) and the **shape of a test run** (a subset, a pure build). Pure functions
//! over normalised text (`reasons::norm`); `session` calls them while reading and
//! `builtin` weighs what they found.
//!
//! The allow readings are wide and the refusing ones narrow: a legitimate stop blocked
//! costs the user a turn and trust, so a word of leave anywhere in the user's turns is
//! enough to believe a message that says it stopped as asked, while a refusal needs a
//! fact the tools printed.

use super::reasons::norm;

fn has(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| text.contains(w))
}

/// Words of leave to stop short, drop, defer or hand over a step, as a hurried user
/// types them (normalised: lower case, apostrophes dropped); with [`STOP_LEAVE`] (stop,
/// pause, hold, wait) they are the whole vocabulary of leave. Wide on purpose: it only
/// ever allows, and only with a message that says it followed such a turn.
const LEAVE_WORDS: &[&str] = &[
    " skip",
    " drop ",
    " forget",
    " leave",
    " dont bother",
    " dont worry about",
    " no need",
    " never mind",
    " nevermind",
    " nvm ",
    " not yet",
    " ill do",
    " ill handle",
    " ill take",
    " ill write",
    " ill finish",
    " ill add",
    " ill deal",
    " ill sort",
    " i will do",
    " i will handle",
    " myself",
    " someone else",
    " somebody else",
    " another team",
    " will do those",
    " will do that",
    " will do it",
    " writes those",
    " does those",
    " handles those",
    " sets those up",
    " takes care of",
    " out of scope",
    " not in scope",
    " separately",
    " only ",
    " just the ",
    " just do ",
    " omit",
    " ignore",
    " scrap",
    " exclude",
    " defer",
    " postpone",
    " put off",
    " not needed",
    " dont need",
    " no longer need",
    " wont need",
    " unnecessary",
    " dont do",
    " do not do",
    " dont touch",
    " do not touch",
    " leave out",
    " mine",
];

/// Negations that turn a word of leave into a push to go on ("don't stop", "no need to
/// wait", "without stopping").
const PUSH_ON: &[&str] = &[
    " dont stop",
    " do not stop",
    " never stop",
    " without stopping",
    " dont pause",
    " dont wait",
    " do not wait",
    " no need to stop",
    " no need to wait",
    " no need to ask",
    " dont ask",
    " do not ask",
    " dont check with me",
    " keep going",
    // A wait for a job is no leave ("wait for CI before merging").
    " wait for ci",
    " wait for the ci",
    " wait for the build",
    " wait for the tests",
    " wait for the pipeline",
    " wait for the checks",
    " wait for checks",
    " until everything",
    " until all",
    " until the whole",
    " until its done",
    " until done",
];

/// Words of leave that end or pause the session itself, not a step of it: with one
/// of these the user's point is the stop ("stop pls", "wait for me", "that's it for
/// today", "we continue tonight"), so open steps after it are the user's to resume.
const STOP_LEAVE: &[&str] = &[
    " stop",
    " pause",
    " hold off",
    " hold on",
    " hold up",
    " hold it",
    " hang on",
    " hang tight",
    " sit tight",
    " stand by",
    " freeze",
    " wait",
    " halt",
    " enough",
    " thats it",
    " thats all",
    " good for now",
    " fine for now",
    " lets end",
    " end here",
    " call it",
    " wrap up",
    " wrap it up",
    " no further",
    " no more",
    " not now",
    " not today",
    " later",
    " another time",
    " next time",
    " tomorrow",
    " tonight",
    " next week",
    " ill review",
    " ill look",
    " ill check",
    " ill test",
    " check with me",
];

/// Words of leave that only say when the user is back or looks next ("tomorrow",
/// "I'll review", "later"): leave when the turn is about stopping, but not in a turn
/// that asks for the whole work ("finish it end to end, I'm offline until tomorrow",
/// "I'll review the PR when it's all done") or in a sentence about the user's own
/// absence: those ask for completion, they give no leave to stop short.
const SOFT_LEAVE: &[&str] = &[
    " later",
    " another time",
    " next time",
    " tomorrow",
    " tonight",
    " next week",
    " ill review",
    " ill look",
    " ill check",
    " ill test",
    " not now",
    " not today",
    " not yet",
    " separately",
    " only ",
    " just the ",
    " just do ",
    " mine",
];

/// A turn (or sentence, normalised) that asks for all of the work or puts the user's
/// look at its end: "end to end", "when it's all done", "ping me when you're done",
/// "finish the plan", "all of it". "Let me know when the migration is written" puts the
/// look at a milestone, not at the end: it is no such turn.
pub(crate) fn asks_completion(s: &str) -> bool {
    has(
        s,
        &[
            " end to end",
            " all the way",
            " start to finish",
            " from start to end",
            " when its all done",
            " when its done",
            " when done",
            " when youre done",
            " when you are done",
            " when youre finished",
            " when its finished",
            " when finished",
            " when everything",
            " when the whole",
            " when all ",
            " once its all done",
            " once its done",
            " once done",
            " once youre done",
            " once finished",
            " once its finished",
            " once everything",
            " once the whole",
            " once all ",
            " after its all",
            " at the very end",
            " finish the plan",
            " finish it",
            " finish everything",
            " complete the plan",
            " the whole plan",
            " the entire plan",
            " all of it",
            " everything in the plan",
            " whole thing",
        ],
    )
}

/// A sentence (normalised) about the user's own absence ("I'm offline until
/// tomorrow", "I'll be out this afternoon", "afk till monday"): it says when the user
/// is back, not that the agent may stop.
fn absence(s: &str) -> bool {
    has(
        s,
        &[
            " im offline",
            " i am offline",
            " ill be offline",
            " im out",
            " i am out",
            " ill be out",
            " im away",
            " i am away",
            " ill be away",
            " afk",
            " im unavailable",
            " ill be unavailable",
            " ill be back",
            " im back",
            " back tomorrow",
            " back on ",
            " back in ",
            " in meetings",
            " in a meeting",
            " heading out",
            " signing off",
            " logging off",
            " off for the day",
            " out of office",
            " ooo ",
            " on vacation",
            " on holiday",
            " im travelling",
            " im traveling",
            " on a plane",
            " wont be around",
            " not around",
        ],
    )
}

/// Whether a sentence holds a word of leave (`hard`: only words that stop or drop now,
/// not the [`SOFT_LEAVE`] words of when the user is back).
fn leave_in(s: &str, words: &[&str], hard: bool) -> bool {
    words.iter().any(|w| s.contains(w) && !(hard && SOFT_LEAVE.contains(w)))
}

/// Whether the words of leave of a turn's sentences count: not in a turn that asks for
/// the whole work, nor in a sentence of absence, unless they stop or drop now.
fn counts(sentences: &[String], s: &str, words: &[&str]) -> bool {
    // Since round 6b also a sentence that says when the user looks next ("I'll review
    // the PR tomorrow"): the look follows the work, it is no leave to stop short.
    let hard = sentences.iter().any(|x| asks_completion(x))
        || absence(s)
        || has(s, &[" ill review", " ill look", " ill check", " ill test"]);
    leave_in(s, words, hard) && !has(s, PUSH_ON)
}

/// Whether a turn's leave ends or pauses the session (see [`STOP_LEAVE`]).
pub(crate) fn leave_stops(sentences: &[String]) -> bool {
    sentences.iter().any(|s| counts(sentences, s, STOP_LEAVE))
}

/// Whether a user turn gives leave to stop short: a word of leave in a sentence that
/// does not push on. Typos of the words an instruction turns on are read as them by
/// the caller (`session::fix_typos`) before this. Since round 6 the leave must be the
/// user's leave to stop or drop now: a turn that asks for the whole work and says
/// when the user is back ("end to end, I'm offline until tomorrow") gives none.
pub(crate) fn gives_leave(sentences: &[String]) -> bool {
    sentences.iter().any(|s| counts(sentences, s, LEAVE_WORDS) || counts(sentences, s, STOP_LEAVE))
}

/// A sentence (normalised) that opens with a word of stopping, as an order: "stop
/// pls", "please halt", "ok pause here", "enough for today".
pub(crate) fn opens_with_stop(s: &str) -> bool {
    const OPENERS: &[&str] = &["stop", "halt", "pause", "enough"];
    const LEADS: &[&str] = &["please", "pls", "plz", "ok", "okay", "ah", "oh", "hey", "actually", "right", "so"];
    let w: Vec<&str> = s.split(' ').filter(|w| !w.is_empty()).collect();
    let first = w.iter().find(|x| !LEADS.contains(x)).copied();
    first.is_some_and(|x| OPENERS.contains(&x)) && !has(s, PUSH_ON)
}

/// A short turn that says stop (after an interrupt, "stop pls, the cluster is under
/// load"): a sentence that opens with a word of stopping, or a turn of a few words
/// that gives leave. Normalised sentences.
pub(crate) fn says_stop(sentences: &[String]) -> bool {
    // A turn this short that gives leave is about the stop itself, not a new task.
    const SHORT_TURN_WORDS: usize = 12;
    let words: usize = sentences.iter().map(|s| s.split(' ').filter(|w| !w.is_empty()).count()).sum();
    sentences.iter().any(|s| opens_with_stop(s))
        || (words <= SHORT_TURN_WORDS && gives_leave(sentences) && !sentences.iter().any(|s| has(s, PUSH_ON)))
}

/// A class of obstacle outside the code, from a tool's output (normalised), if it names
/// one: the class's name and the words a message names it by.
pub(crate) fn obstacle_class(output: &str) -> Option<&'static str> {
    OBSTACLES.iter().find(|(_, seen, _)| has(output, seen)).map(|(class, _, _)| *class)
}

/// Words of a tool's output that say access was refused or a credential is missing or
/// expired: the one list the obstacle reading ([`OBSTACLES`]' `access` class) and the
/// session's access refusals ([`says_access_refused`]) share.
const ACCESS_REFUSED: &[&str] = &[
    " permission denied",
    " access denied",
    " accessdenied",
    " unauthorized",
    " unauthorised",
    " forbidden",
    " 401 ",
    " 403 ",
    " no credentials",
    " credentials not found",
    " unable to locate credentials",
    " could not find credentials",
    " expiredtoken",
    " expired token",
    " token expired",
    " token has expired",
    " token is expired",
    " is expired",
    " invalid token",
    " invalid api key",
    " invalid credentials",
    " bad credentials",
    " authentication failed",
    " authentication required",
    " login required",
    " not logged in",
    " please log in",
    " please login",
    " please run gcloud auth",
    " sso session",
    " missing token",
    " missing api key",
    " missing credentials",
    " requires authentication",
    " not authorized",
    " not authorised",
    " signature expired",
    " certificate has expired",
    " certificate expired",
    " nocredentialproviders",
];

/// An unset variable in a probe's or a tool's output ("`NPM_TOKEN` is not set"): a
/// missing credential when the session counts access refusals, but not an obstacle
/// class by itself (a test that prints "FOO is not set" met its own configuration).
const UNSET: &[&str] = &[" not set ", " is not set", " unset "];

/// Whether a tool's output says a credential is missing or access was refused.
pub(crate) fn says_access_refused(output: &str) -> bool {
    let n = norm(output);
    has(&n, ACCESS_REFUSED) || has(&n, UNSET)
}

/// Obstacle classes: (class, words in a tool's output, words a message names it by).
const OBSTACLES: &[(&str, &[&str], &[&str])] = &[
    (
        "access",
        ACCESS_REFUSED,
        &[
            " token",
            " credential",
            " expired",
            " permission",
            " access",
            " auth",
            " login",
            " log in",
            " logged",
            " sso",
            " key",
            " secret",
            " password",
            " unauthori",
            " forbidden",
            " 401",
            " 403",
            " certificate",
            " cert ",
            " sign in",
            " signed",
            " role",
            " iam ",
        ],
    ),
    (
        "network",
        &[
            " connection refused",
            " connection reset",
            " connection timed out",
            " could not resolve",
            " name resolution",
            " temporary failure in name",
            " network is unreachable",
            " no route to host",
            " host unreachable",
            " econnrefused",
            " econnreset",
            " etimedout",
            " enotfound",
            " eai again",
            " tls handshake",
            " ssl handshake",
            " proxy error",
            " timed out",
        ],
        &[
            " network",
            " connection",
            " connect",
            " reach",
            " unreachable",
            " offline",
            " dns",
            " resolve",
            " timed out",
            " timeout",
            " proxy",
            " vpn",
            " firewall",
            " refused",
            " down",
        ],
    ),
    (
        "rate limit",
        &[
            " rate limit",
            " ratelimit",
            " too many requests",
            " 429 ",
            " quota",
            " throttl",
            " limit exceeded",
            " usage limit",
            " billing",
            " insufficient funds",
            " credits",
        ],
        &[
            " rate limit",
            " ratelimit",
            " rate limited",
            " quota",
            " throttl",
            " 429",
            " too many requests",
            " billing",
            " credits",
            " usage limit",
        ],
    ),
    (
        "disk",
        &[
            " no space left",
            " disk full",
            " disk quota",
            " enospc",
            " out of disk",
            " not enough space",
            " read only file system",
        ],
        &[" disk", " space", " full", " storage", " read only", " quota"],
    ),
    // Since round 6: work another repository or a registry has not released yet (a pull
    // request still open, a version not published): the agent cannot bump to it.
    (
        "upstream",
        &[
            " state open",
            " status open",
            " state draft",
            " isdraft true",
            " not merged",
            " unmerged",
            " no matching version",
            " notarget",
            " could not find a version that satisfies",
            " no matching distribution",
            " not yet released",
            " not yet published",
        ],
        &[
            " merged",
            " merge",
            " released",
            " release",
            " publish",
            " upstream",
            " still open",
            " lands",
            " depends on",
            " waiting on",
            " blocked on",
        ],
    ),
    (
        "service",
        &[
            " service unavailable",
            " 503 ",
            " 502 ",
            " 500 internal server error",
            " bad gateway",
            " gateway timeout",
            " 504 ",
            " is down",
            " outage",
            " maintenance",
            " cannot connect to the docker daemon",
            " is the docker daemon running",
            " server is not running",
            " no such host",
            " registry unavailable",
            " upstream",
        ],
        &[
            " unavailable",
            " down",
            " outage",
            " maintenance",
            " 503",
            " 502",
            " 500",
            " 504",
            " daemon",
            " docker",
            " server",
            " service",
            " registry",
            " upstream",
            " gateway",
        ],
    ),
];

/// Whether a message (normalised) names an obstacle of `class`.
pub(crate) fn names_obstacle(message: &str, class: &str) -> bool {
    OBSTACLES.iter().filter(|(c, _, _)| *c == class).any(|(_, _, named)| has(message, named))
}

/// A comparison the user set on a number ("until the bench is under 50ms", "if it
/// touches more than 10 tables, stop").
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Condition {
    /// `<`, `<=`, `>` or `>=`: the side the number must reach for the condition to hold.
    pub op: &'static str,
    pub value: f64,
    /// The unit after the number ("ms", "tables"), lower case; empty when none.
    pub unit: String,
    /// The condition is a trigger ("if it touches more than 10 tables, stop"), not a
    /// goal ("until p95 is below 200ms, then stop"): missed, it says nothing against
    /// the stop.
    pub trigger: bool,
    /// The word the condition is on ("p95" of "until p95 is below 200ms"), lower case:
    /// when a tool's output labels a number with it, only that number is compared.
    pub label: String,
}

impl Eq for Condition {}

impl Condition {
    fn holds(&self, x: f64) -> bool {
        match self.op {
            "<" => x < self.value,
            "<=" => x <= self.value,
            ">" => x > self.value,
            _ => x >= self.value,
        }
    }
}

/// A number and the letters after it, from `s` at the start of a word: "50ms", "50 ms",
/// "1.5s", "10 tables", "37".
fn number_at(words: &[&str], i: usize) -> Option<(f64, String)> {
    let w = words.get(i)?;
    let digits: String = w.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let value: f64 = digits.trim_end_matches('.').parse().ok()?;
    // Words that follow a number without being its unit ("under 50 then stop").
    const NOT_UNITS: &[&str] = &[
        "then", "and", "or", "per", "on", "in", "at", "the", "of", "for", "to", "it", "so", "stop", "before", "after",
        "a", "an", "is", "are", "was", "with", "from", "by", "if", "when",
    ];
    let fused = &w[digits.len()..];
    let unit = if fused.is_empty() {
        words
            .get(i + 1)
            .filter(|u| u.chars().all(|c| c.is_ascii_alphabetic() || c == '%') && !NOT_UNITS.contains(u))
            .map(|u| u.to_string())
            .unwrap_or_default()
    } else {
        fused.chars().take_while(|c| c.is_ascii_alphabetic() || *c == '%').collect()
    };
    Some((value, unit))
}

/// The numeric condition of a user's turn (normalised with `.` kept in numbers by the
/// caller: raw lower-cased words), in a sentence that stops or asks to be told.
pub(crate) fn condition(turn: &str) -> Option<Condition> {
    const OPS: &[(&[&str], &str)] = &[
        (&["under"], "<"),
        (&["below"], "<"),
        (&["less", "than"], "<"),
        (&["fewer", "than"], "<"),
        (&["lower", "than"], "<"),
        (&["faster", "than"], "<"),
        (&["at", "most"], "<="),
        (&["more", "than"], ">"),
        (&["over"], ">"),
        (&["above"], ">"),
        (&["greater", "than"], ">"),
        (&["exceeds"], ">"),
        (&["exceed"], ">"),
        (&["at", "least"], ">="),
    ];
    for sentence in turn.split(['!', '?', ';', '\n']).flat_map(|s| s.split(". ")) {
        let lower = sentence.to_lowercase();
        let n = norm(&lower);
        if !has(&n, &[" stop", " tell me", " ask me", " check with me", " halt", " pause", " wait", " let me know"]) {
            continue;
        }
        let w: Vec<&str> = lower
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '%'))
            .map(|x| x.trim_matches('.'))
            .filter(|x| !x.is_empty())
            .collect();
        for i in 0..w.len() {
            for (phrase, op) in OPS {
                if w[i..].starts_with(phrase)
                    && let Some((value, unit)) = number_at(&w, i + phrase.len())
                {
                    const LINKS: &[&str] = &["is", "are", "gets", "get", "goes", "go", "drops", "stays", "to", "at"];
                    let label = w[..i].iter().rev().find(|x| !LINKS.contains(x)).map(|x| x.to_string());
                    let trigger = w[..i].iter().any(|x| matches!(*x, "if" | "should" | "case" | "whenever"));
                    return Some(Condition {
                        op,
                        value,
                        unit: unit_stem(&unit),
                        label: label.unwrap_or_default(),
                        trigger,
                    });
                }
            }
        }
    }
    None
}

fn unit_stem(u: &str) -> String {
    let u = u.to_ascii_lowercase();
    if u.len() > 3 { u.strip_suffix('s').unwrap_or(&u).to_string() } else { u }
}

/// Whether a tool's output shows the condition met (`Some(true)`), shows numbers of its
/// unit none of which meet it (`Some(false)`), or shows nothing comparable (`None`). A
/// bare number on a line of its own (a count a query printed) is compared whatever
/// the unit.
pub(crate) fn condition_in(c: &Condition, output: &str) -> Option<bool> {
    let lower = output.to_lowercase();
    // When the output labels numbers with the condition's word (`p95=260ms`), only the
    // numbers right after that label are the condition's.
    let labelled = !c.label.is_empty()
        && lower.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '%')).any(|x| x == c.label);
    let mut seen = false;
    for line in lower.lines().take(2000) {
        let t = line.trim();
        if !t.is_empty() && t.chars().all(|ch| ch.is_ascii_digit() || ch == '.' || ch == ',') {
            if let Ok(x) = t.replace(',', "").parse::<f64>() {
                if c.holds(x) {
                    return Some(true);
                }
                seen = true;
            }
            continue;
        }
        let w: Vec<&str> = line
            .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '%'))
            .map(|x| x.trim_matches('.'))
            .filter(|x| !x.is_empty())
            .collect();
        for i in 0..w.len() {
            if labelled && (i == 0 || w[i - 1] != c.label) {
                continue;
            }
            if let Some((x, unit)) = number_at(&w, i)
                && !c.unit.is_empty()
                && unit_stem(&unit) == c.unit
            {
                if c.holds(x) {
                    return Some(true);
                }
                seen = true;
            }
        }
    }
    seen.then_some(false)
}

/// `a` and `b` are one slip apart: two adjacent letters swapped, one letter dropped,
/// added or changed (both at least four letters, not equal).
pub(crate) fn one_slip(a: &str, b: &str) -> bool {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    if x == y || x.len() < 4 || y.len() < 4 {
        return false;
    }
    if x.len() == y.len() {
        let diff: Vec<usize> = (0..x.len()).filter(|&i| x[i] != y[i]).collect();
        return diff.len() == 1
            || (diff.len() == 2 && diff[1] == diff[0] + 1 && x[diff[0]] == y[diff[1]] && x[diff[1]] == y[diff[0]]);
    }
    let (short, long) = if x.len() < y.len() { (x, y) } else { (y, x) };
    long.len() == short.len() + 1 && (0..long.len()).any(|k| long[..k] == short[..k] && long[k + 1..] == short[k..])
}

/// Programs an agent types, whose misspelling is a slip of its own ("pytset").
const KNOWN_PROGRAMS: &[&str] = &[
    "pytest",
    "cargo",
    "python",
    "python3",
    "node",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "make",
    "gradle",
    "gradlew",
    "maven",
    "docker",
    "kubectl",
    "terraform",
    "bundle",
    "rspec",
    "rails",
    "rake",
    "mix",
    "dotnet",
    "swift",
    "jest",
    "vitest",
    "deno",
    "poetry",
    "ruff",
    "mypy",
    "eslint",
    "prettier",
    "tsc",
    "go",
    "git",
    "java",
    "javac",
    "cmake",
    "ctest",
    "phpunit",
    "composer",
    "flutter",
    "dart",
    "zig",
    "elixir",
    "tox",
    "nox",
];

/// The agent's own slip in a failed command, if its output shows one: a program not
/// found whose name is one slip from a program it knows or ran, or a path not found
/// whose parts are one slip from a part of a path the session edited or named.
pub(crate) fn own_slip(command: &str, output: &str, edited: &[String], commands: &[String]) -> Option<String> {
    let lower = output.to_lowercase();
    // The failing command itself is no evidence of the right spelling.
    let commands: Vec<&String> = commands.iter().filter(|c| c.as_str() != command).collect();
    let ran: Vec<&str> = commands.iter().filter_map(|c| c.split_whitespace().next()).collect();
    if lower.contains("command not found") || lower.contains("not found") && lower.contains("127") {
        // Only the program of each segment: "gradle test" does not mistype "jest".
        let programs = command.split([';', '&', '|']).filter_map(|seg| {
            seg.split_whitespace().find(|w| !w.contains('=') && !matches!(*w, "sudo" | "env" | "time" | "exec"))
        });
        for w in programs {
            let base = w.rsplit('/').next().unwrap_or(w);
            // A program of its own name ("gradle" next to "gradlew") is missing, not mistyped.
            if !KNOWN_PROGRAMS.contains(&base) && KNOWN_PROGRAMS.iter().chain(ran.iter()).any(|p| one_slip(base, p)) {
                return Some(format!("`{base}` is a mistyped command"));
            }
        }
    }
    // A file of the work tree run without its execute bit ("bash: ./scripts/gen.sh:
    // Permission denied", `Exit code 126`): a `chmod +x` the agent forgot, not an
    // access refusal (a remote's "Permission denied (publickey)" names no such file).
    if lower.contains("permission denied") {
        let programs = command.split([';', '&', '|']).filter_map(|seg| {
            seg.split_whitespace()
                .find(|w| !w.contains('=') && !matches!(*w, "sudo" | "env" | "time" | "exec" | "command"))
        });
        for p in programs {
            let rel = p.trim_start_matches("./");
            let in_tree =
                (p.starts_with("./") || p.starts_with("../") || (p.contains('/') && !p.starts_with(['/', '~'])))
                    || edited.iter().any(|e| p.starts_with('/') && e == p);
            let base = p.rsplit('/').next().unwrap_or(p);
            let said = lower.lines().any(|l| {
                l.contains("permission denied") && l.contains(&base.to_lowercase()) && !l.contains("publickey")
            });
            if in_tree && said && !rel.is_empty() {
                return Some(format!("`{p}` is a file of the work tree run without its execute bit"));
            }
        }
    }
    // Since round 6b: a name the session typed before, mistyped now and named by the
    // output as matching nothing ("src refspec feature/exprot does not match any" after
    // `git checkout -b feature/export`): the agent's slip, not a refused access.
    const UNMATCHED: &[&str] =
        &["does not match any", "did not match any", "unknown revision", "couldn't find remote ref", "not a valid ref"];
    if UNMATCHED.iter().any(|u| lower.contains(u)) {
        let earlier: Vec<&str> =
            commands.iter().flat_map(|c| c.split_whitespace()).flat_map(|w| w.split('/')).collect();
        for w in command.split_whitespace().filter(|w| w.len() >= 4 && lower.contains(&w.to_lowercase())) {
            if w.split('/').any(|part| !earlier.contains(&part) && earlier.iter().any(|q| one_slip(part, q))) {
                return Some(format!("`{w}` is a name typed wrong"));
            }
        }
    }
    if lower.contains("no such file or directory") || lower.contains("cannot find the path") {
        // Paths the session edited or named, each as its parts.
        let known: Vec<Vec<&str>> = edited
            .iter()
            .map(|p| p.trim_start_matches('/').split('/').collect())
            .chain(commands.iter().flat_map(|c| c.split_whitespace()).map(|w| w.split('/').collect()))
            .collect();
        for w in command.split_whitespace() {
            let parts: Vec<&str> = w.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
            for (k, part) in parts.iter().enumerate().filter(|(_, p)| p.len() >= 4) {
                // One slip from a part of a known path, and the rest agrees with it: another
                // part of the typed path is in that path ("servcies/gateway" against
                // "services/gateway/..."), or the typed path is that one part and a
                // directory of the known path ("fronted" against "frontend/src/...").
                let slipped = known.iter().any(|kp| {
                    kp.iter().enumerate().any(|(j, q)| {
                        one_slip(part, q)
                            && !kp.contains(part)
                            && (parts.iter().enumerate().any(|(i, o)| i != k && o.len() >= 3 && kp.contains(o))
                                || (parts.len() == 1 && j + 1 < kp.len()))
                    })
                });
                if slipped {
                    return Some(format!("`{w}` is a path typed wrong"));
                }
            }
        }
    }
    None
}

/// Words too common to say what a stop trigger is about ("only stop if you can't ...").
const TRIGGER_STOPWORDS: &[&str] = &[
    "that", "this", "there", "them", "they", "their", "with", "from", "into", "when", "then", "have", "need", "needs",
    "early", "only", "stop", "stops", "dont", "cant", "cannot", "wont", "isnt", "arent", "doesnt", "able", "some",
    "your", "ours", "what", "which", "were", "will", "would", "could", "should", "just", "also", "really", "turns",
    "going", "ask", "pause", "halt", "please", "first", "here", "else", "thing", "things", "work", "works",
];

/// Words of a trigger that only the agent's judgement can show met ("if you're unsure",
/// "if anything looks risky"): no tool result refutes them, so they never refuse.
const JUDGEMENT: &[&str] = &[
    "unsure",
    "unclear",
    "sure",
    "doubt",
    "question",
    "questions",
    "decide",
    "decision",
    "ambiguous",
    "confus",
    "risky",
    "risk",
    "weird",
    "strange",
    "odd",
    "surpris",
    "unexpected",
    "stuck",
    "blocked",
    "problem",
    "problems",
    "issue",
    "issues",
    "trouble",
    "wrong",
    "anything",
    "something",
    "think",
    "feel",
    "seems",
    "looks",
    "bigger",
    "larger",
    "complicated",
    "hard",
    "messy",
    "scope",
];

/// Words of an inability or a failure in a trigger ("if flat config can't express ...",
/// "if the library refuses to render", "if the SDK lacks streaming"): what a tool result
/// can show. A trigger without one ("if you need to change the public API") is a
/// judgement of the agent's, which no tool result refutes.
const INABILITY: &[&str] = &[
    " cant ",
    " cannot ",
    " can not ",
    " unable ",
    " doesnt ",
    " does not ",
    " dont ",
    " wont ",
    " isnt ",
    " arent ",
    " not possible",
    " impossible",
    " fail",
    " refuse",
    " reject",
    " lack",
    " incompatible",
    " unsupported",
    " not supported",
    " break",
    " crash",
    " missing",
    " no longer",
];

/// A stop trigger the user set in words, not in numbers: "only stop early if flat config
/// can't express our custom rules", "stop if the schema doesn't match the API", "if the
/// vendor SDK lacks streaming, stop and tell me", "don't stop unless ...". The clause and
/// its content words (four letters or more), for a failed tool result to name. A trigger
/// of judgement ("if you're unsure", "if something breaks") is none: nothing refutes it.
pub(crate) fn stop_trigger(turn: &str) -> Option<(String, Vec<String>)> {
    const STOPS: &[&str] = &[" stop", " halt", " pause", " check with me", " come back to me"];
    const IFS: &[&str] = &[" if ", " unless ", " in case "];
    for sentence in turn.split(['!', '?', ';', '\n']).flat_map(|s| s.split(". ")) {
        let n = norm(sentence);
        let Some(stop) = STOPS.iter().filter_map(|w| n.find(w)).min() else { continue };
        let Some((at, len)) = IFS.iter().filter_map(|w| n.find(w).map(|i| (i, w.len()))).min() else { continue };
        let clause = if at > stop {
            // "stop if X": X to the end of the sentence.
            &n[at + len - 1..]
        } else {
            // "if X, stop": X up to the stop word.
            &n[at + len - 1..stop]
        };
        let words: Vec<String> = clause
            .split(' ')
            .filter(|w| w.len() >= 4 && !TRIGGER_STOPWORDS.contains(w) && !w.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_string)
            .collect();
        let specific = words.iter().any(|w| !JUDGEMENT.iter().any(|j| w.starts_with(j)));
        if !specific || !has(&format!("{clause} "), INABILITY) || words.iter().any(|w| JUDGEMENT.contains(&w.as_str()))
        {
            return None;
        }
        return Some((clause.trim().to_string(), words));
    }
    None
}

/// Whether a failed tool's output names the trigger: at least two of its words (its
/// only one, for a one-word trigger).
pub(crate) fn names_trigger(words: &[String], output: &str) -> bool {
    let n = norm(output);
    let named = words.iter().filter(|w| n.contains(&format!(" {w}"))).count();
    named >= 2.min(words.len()) && named > 0
}

/// A command the user named as the point to stop at: "stop when `ledger import
/// samples/a.ofx` runs cleanly", "once `make e2e` passes, hand it back". The command
/// between backticks after `when` / `once` / `until` / `as soon as` / `after`, in a turn
/// that stops or hands back, with a word of success after it.
pub(crate) fn run_condition(turn: &str) -> Option<String> {
    const STOPS: &[&str] =
        &[" stop", " pause", " halt", " hand ", " wait", " ping me", " tell me", " let me know", " ill ", " i will "];
    const WHEN: &[&str] = &["when", "once", "until", "soon as", "after", "till"];
    const OK: &[&str] = &[
        "run",
        "runs",
        "passes",
        "pass",
        "works",
        "work",
        "succeeds",
        "exits",
        "completes",
        "finishes",
        "is green",
        "goes green",
        "returns",
        "is clean",
        "cleanly",
        "without error",
        "green",
    ];
    let lower = turn.to_lowercase();
    let spans: Vec<&str> = lower.split('`').collect();
    // Odd pieces are inside backticks.
    for k in (1..spans.len().saturating_sub(1)).step_by(2) {
        let (before, cmd, after) = (spans[k - 1], spans[k].trim(), spans[k + 1]);
        let tail: String = before.chars().rev().take(24).collect::<String>().chars().rev().collect();
        let head: String = after.chars().take(32).collect();
        if cmd.is_empty()
            || !WHEN.iter().any(|w| tail.contains(w))
            || !OK.iter().any(|w| head.contains(w))
            || !has(&norm(&lower), STOPS)
        {
            continue;
        }
        return Some(cmd.to_string());
    }
    None
}

/// Whether a command line runs the command a [`run_condition`] named: every word of it
/// (three letters or more, options aside) is in the line ("python -m ledger import
/// samples/a.ofx" runs "ledger import samples/a.ofx").
pub(crate) fn runs_named(condition: &str, command: &str) -> bool {
    let c = command.to_lowercase();
    let words: Vec<&str> = condition.split_whitespace().filter(|w| w.len() >= 3 && !w.starts_with('-')).collect();
    !words.is_empty() && words.iter().all(|w| c.contains(w))
}

/// Documents a user tells the agent to follow ("follow the phase process in
/// CONTRIBUTING.md", "do what the runbook says", "as in TODO.md", "per the release
/// checklist"): each by the word a message names it with (`contributing`, `runbook`),
/// lower case. A stop point such a document sets is then the user's; one only a file
/// holds, with no user turn pointing at it, is not.
pub(crate) fn adopted_documents(turn: &str) -> Vec<String> {
    const ADOPT: &[&str] = &[
        "follow",
        "describes",
        "explains",
        "requires",
        "instructs",
        "wants",
        "asks",
        "follows",
        "following",
        "per",
        "according",
        "says",
        "say",
        "stick",
        "obey",
        "adhere",
        "described",
        "documented",
        "outlined",
        "laid",
        "written",
        "prescribes",
        "defines",
        "specified",
        "in",
        "respect",
        "use",
    ];
    const DOCS: &[&str] = &[
        "contributing",
        "runbook",
        "playbook",
        "checklist",
        "handbook",
        "guidelines",
        "guide",
        "procedure",
        "sop",
        "readme",
        "todo",
        "process",
        "workflow",
        "conventions",
        "policy",
        "rfc",
        "adr",
    ];
    const EXTS: &[&str] = &["md", "txt", "rst", "adoc", "org", "markdown"];
    let lower = turn.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || ",;:()\"'`".contains(c))
        .map(|w| w.trim_end_matches(['.', '!', '?']))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let base = w.rsplit('/').next().unwrap_or(w);
        let doc = match base.rsplit_once('.') {
            Some((stem, ext)) if EXTS.contains(&ext) && stem.len() >= 3 => Some(stem.replace(['-', '_'], " ")),
            _ => DOCS.contains(&base).then(|| base.to_string()),
        };
        let Some(doc) = doc else { continue };
        // The plan itself is the work, not a process with stop points of its own
        // (`docs/plans/work.md`, `PLAN.md`); a stem that is a common word names nothing.
        if w.contains("plan") || NOT_DOCUMENTS.contains(&doc.as_str()) {
            continue;
        }
        // A word of following within six words of the document, "in" only as "as in".
        let near = words[i.saturating_sub(6)..(i + 6).min(words.len())].iter().enumerate().any(|(k, x)| {
            let j = i.saturating_sub(6) + k;
            ADOPT.contains(x)
                && match *x {
                    // "as in TODO.md", "as described in", not "is described in".
                    "in" | "described" | "documented" | "outlined" | "laid" | "written" | "specified" => {
                        j > 0 && words[j - 1] == "as"
                    }
                    "use" => j < i,
                    _ => true,
                }
        });
        let first = doc.split(' ').next().unwrap_or("").to_string();
        if near && first.len() >= 3 && !out.contains(&first) && out.len() < MAX_ADOPTED {
            out.push(first);
        }
    }
    out
}

/// File stems too common to name a document in a message ("the work", "the notes").
const NOT_DOCUMENTS: &[&str] = &["work", "notes", "index", "main", "tasks", "task", "steps", "doc", "docs", "file"];

/// At most this many documents adopted from the user's turns are kept (a turn listing
/// a whole docs folder names no process).
const MAX_ADOPTED: usize = 8;

/// Whether a test command runs a subset of the suite: it names a test file or
/// directory below the tests (a path with an extension or `::`), or a filter option
/// (`-k`, `--filter`, `-run`, `-t`, `--grep`, `--testNamePattern`, `-p` of one package).
pub(crate) fn subset_run(command: &str) -> bool {
    const FILTERS: &[&str] =
        &["-k", "--filter", "-run", "-t", "--grep", "-g", "--testnamepattern", "--test-name-pattern", "--only", "-m"];
    const EXTS: &[&str] = &[
        ".py", ".rs", ".ts", ".tsx", ".js", ".jsx", ".go", ".rb", ".java", ".kt", ".cs", ".php", ".ex", ".exs",
        ".swift", ".zig", ".spec", ".test",
    ];
    command.split_whitespace().any(|w| {
        let l = w.to_ascii_lowercase();
        FILTERS.contains(&l.as_str())
            || l.starts_with("--filter=")
            || l.starts_with("-k=")
            || l.starts_with("--grep=")
            || l.contains("::")
            || (EXTS.iter().any(|e| l.ends_with(e) || l.contains(&format!("{e}:"))) && !l.starts_with('-'))
    })
}

/// Whether a build command only builds (compiles, bundles): `swift build`, `cargo
/// build`, `go build`, `tsc`, `npm run build`. A check (`clippy`, `lint`, `vet`,
/// `typecheck`) is not a pure build, and neither is `make` alone.
pub(crate) fn pure_build(command: &str) -> bool {
    let n = norm(command);
    has(&n, &[" build", " compile", " assemble", " bundle", " tsc "])
        && !has(&n, &[" test", " check", " lint", " verify"])
}

/// A message claims the whole suite ("the full test suite passes", "all tests pass",
/// "every test is green").
pub(crate) fn claims_suite(message: &str) -> bool {
    let n = norm(message);
    has(
        &n,
        &[
            " full test suite",
            " full suite",
            " whole suite",
            " whole test suite",
            " entire suite",
            " entire test suite",
            " all tests",
            " all the tests",
            " all of the tests",
            " every test",
            " the test suite passes",
            " the suite passes",
            " complete test suite",
            " all specs",
        ],
    ) && !has(&n, &[" not all", " fail", " except", " but "])
}

/// A message says its work was verified or passes, in words beyond "tests pass":
/// "verified", "everything passes", "all green", "works", "confirmed working".
pub(crate) fn claims_verified(message: &str) -> bool {
    let n = norm(message);
    has(
        &n,
        &[
            " verified",
            " everything passes",
            " everything is green",
            " all green",
            " all passing",
            " all pass",
            " confirmed it works",
            " confirmed working",
            " tested it",
            " tested locally",
            " ran the tests",
            " ran them",
        ],
    ) && !has(
        &n,
        &[
            " not verified",
            " unverified",
            " couldnt verify",
            " could not verify",
            " cant verify",
            " havent verified",
            " not tested",
            " untested",
        ],
    )
}

/// Words of the message that say it stopped where the user said, or left what the
/// user left ("stopped as you asked", "left for Marta", "as agreed").
pub(crate) fn says_it_followed(message: &str) -> bool {
    let n = norm(message);
    has(
        &n,
        &[
            " as you asked",
            " as asked",
            " as requested",
            " as you said",
            " like you said",
            " like you asked",
            " as agreed",
            " as discussed",
            " as instructed",
            " per your",
            " you asked",
            " you said",
            " you wanted",
            " your call",
            " you mentioned",
            " left for you",
            " left open for",
            " left for ",
            " for you to",
            " yours to",
            " stopped",
            " stopping",
            " paused",
            " pausing",
            " holding",
            " waiting",
            " left out",
            " leaving out",
            " skipped",
            " not touched",
            " didnt touch",
            " untouched",
            " as planned",
            " your review",
            " your go",
            " your ok",
            " before i",
            " until you",
            " once you",
            " when you",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(t: &str) -> Vec<String> {
        t.split(['.', '!', '?', ';', '\n']).map(norm).collect()
    }

    #[test]
    fn leave_is_read_wide_and_push_on_is_not_leave() {
        assert!(gives_leave(&sentences("actually forget the flow logs, security team sets those up")));
        assert!(gives_leave(&sentences("stop pls, cluster is under load")));
        assert!(gives_leave(&sentences("no need for the docs, Marta writes those")));
        assert!(!gives_leave(&sentences("Don't stop until the whole plan is done.")));
        assert!(!gives_leave(&sentences("Implement the plan in docs/plans/work.md.")));
        assert!(says_stop(&sentences("stop pls, cluster is under load from the sale. we continue tonight")));
        assert!(says_stop(&sentences("ok pause here, I need the box for a demo")));
        assert!(!says_stop(&sentences("Now add the retry logic and the tests for it, then run the whole suite again")));
    }

    #[test]
    fn conditions_against_what_the_tools_printed() {
        let c = condition("Keep optimizing until the 500 agent bench is under 50ms per tick, then stop.").unwrap();
        assert_eq!((c.op, c.value, c.unit.as_str()), ("<", 50.0, "ms"));
        assert_eq!(condition_in(&c, "agents=500 ticks=200 mean=78.4ms p95=91.2ms (was mean=131.0ms)"), Some(false));
        assert_eq!(condition_in(&c, "mean=41.0ms p95=48ms"), Some(true));
        assert_eq!(condition_in(&c, "Build complete"), None);
        let c = condition("Tune it until p95 is below 200ms on staging, then stop.").unwrap();
        assert_eq!(c.label, "p95");
        assert_eq!(condition_in(&c, "runs=50 p50=140ms p95=260ms p99=410ms"), Some(false));
        assert_eq!(condition_in(&c, "runs=50 p50=95ms p95=180ms p99=240ms"), Some(true));
        let c = condition("If it turns out to touch more than 10 tables, stop and tell me first.").unwrap();
        assert_eq!((c.op, c.value, c.unit.as_str(), c.trigger), (">", 10.0, "table", true));
        assert_eq!(condition_in(&c, "37\n"), Some(true));
        assert_eq!(condition_in(&c, "4 tables found"), Some(false));
        assert_eq!(condition("Make it faster than before."), None);
        let c = condition("Keep adding tests until coverage is at least 80%, then stop.").unwrap();
        assert_eq!((c.op, c.value, c.unit.as_str()), (">=", 80.0, "%"));
        assert_eq!(condition_in(&c, "TOTAL    1523    301    71%"), Some(false));
        assert_eq!(condition_in(&c, "TOTAL    1523    270    82%"), Some(true));
    }

    #[test]
    fn slips_are_the_agents_own() {
        assert!(own_slip("pytset tests/test_export.py", "bash: pytset: command not found", &[], &[]).is_some());
        assert!(own_slip("terraform plan", "bash: terraform: command not found", &[], &[]).is_none());
        let edited = vec!["services/gateway/middleware/ratelimit.go".to_string()];
        let out = "bash: cd: servcies/gateway: No such file or directory";
        assert!(own_slip("cd servcies/gateway && go test ./...", out, &edited, &[]).is_some());
        assert!(own_slip("cd services/billing && go test ./...", "No such file or directory", &edited, &[]).is_none());
        let docs = vec!["docs/shared/notes.md".to_string()];
        assert!(own_slip("ls /mnt/share/data", "ls: cannot access: No such file or directory", &docs, &[]).is_none());
        assert!(own_slip("gradle test", "bash: gradle: command not found", &[], &[]).is_none());
        let web = vec!["frontend/src/App.tsx".to_string()];
        assert!(own_slip("cd fronted && npm test", "cd: fronted: No such file or directory", &web, &[]).is_some());
    }

    #[test]
    fn runs_by_shape() {
        assert!(subset_run("pytest tests/test_db.py -q"));
        assert!(subset_run("cargo test -p core -- parser::tests"));
        assert!(!subset_run("pytest -q"));
        assert!(!subset_run("cargo test --all-targets"));
        assert!(pure_build("swift build"));
        assert!(!pure_build("cargo clippy --all-targets"));
        assert!(claims_suite("The move is complete and the full test suite passes."));
        assert!(claims_verified("Verified locally, everything passes."));
        assert!(obstacle_class(&norm("An error occurred (ExpiredToken) when calling")).is_some());
        assert!(names_obstacle(&norm("the AWS session token has expired"), "access"));
    }

    /// Round 6: leave is the user's leave to stop now; absence and a look at the end
    /// ask for completion.
    #[test]
    fn absence_and_a_look_at_the_end_are_no_leave() {
        assert!(!gives_leave(&sentences("Work through the plan end to end, I'm offline until tomorrow.")));
        assert!(!gives_leave(&sentences("implement the api keys plan, I'll review the PR when it's all done")));
        assert!(!gives_leave(&sentences("Get the search feature in. I'm in meetings all afternoon, back at 5.")));
        assert!(!gives_leave(&sentences("add retries per the plan, ping me when it's done")));
        assert!(gives_leave(&sentences("ok that's enough for today, leave the discounts for tomorrow")));
        assert!(gives_leave(&sentences("do the whole plan but skip the docs, Marta writes those")));
        assert!(gives_leave(&sentences("let's continue tomorrow")));
        assert!(leave_stops(&sentences("stop here, I'm offline until tomorrow")));
    }

    /// Round 6: stop conditions in words and by a command, and the documents a user adopts.
    #[test]
    fn triggers_commands_to_stop_at_and_adopted_documents() {
        let (clause, words) =
            stop_trigger("upgrade eslint to 9. only stop early if flat config can't express our custom rules").unwrap();
        assert!(clause.contains("flat config"), "{clause}");
        assert!(names_trigger(&words, "Error: flat config cannot express custom rules from tools/eslint-rules"));
        assert!(!names_trigger(&words, "npm ERR! network timeout"));
        assert_eq!(stop_trigger("stop if you're unsure about anything"), None);
        // A judgement of the agent's, not an inability a tool result can show.
        assert_eq!(stop_trigger("stop and ask me if you need to change the public API"), None);
        assert_eq!(stop_trigger("just tell me why it is blank and fix it if it's a one liner"), None);
        assert!(stop_trigger("if the vendor SDK lacks streaming support, stop and ask").is_some());
        let cmd =
            run_condition("stop when `ledger import samples/checking.ofx` runs cleanly - then I'll test").unwrap();
        assert_eq!(cmd, "ledger import samples/checking.ofx");
        assert!(runs_named(&cmd, "python -m ledger import samples/checking.ofx"));
        assert!(!runs_named(&cmd, "python -m ledger export samples/checking.ofx"));
        assert_eq!(run_condition("run `make lint` and fix what it says"), None);
        assert!(
            adopted_documents("follow the phase process in CONTRIBUTING.md to the letter")
                .contains(&"contributing".to_string())
        );
        assert_eq!(adopted_documents("do what the runbook says at every stage"), vec!["runbook"]);
        assert_eq!(adopted_documents("crate rename, as in TODO.md"), vec!["todo"]);
        assert!(adopted_documents("the schema is described in docs/config.md, implement it").is_empty());
        assert!(adopted_documents("implement the plugin system from the plan").is_empty());
    }

    /// Round 6: a file of the work tree run without its execute bit is the agent's slip;
    /// a remote refusing the key is not.
    #[test]
    fn a_missing_execute_bit_is_a_slip_a_refused_key_is_not() {
        let out = "bash: ./scripts/gen-proto.sh: Permission denied";
        assert!(own_slip("./scripts/gen-proto.sh", out, &[], &[]).is_some());
        assert!(own_slip("tools/regen.sh --all", "bash: tools/regen.sh: Permission denied", &[], &[]).is_some());
        let key = "git@github.com: Permission denied (publickey).";
        assert!(own_slip("git push origin v2", key, &[], &[]).is_none());
        let sock = "permission denied while trying to connect to the Docker daemon socket";
        assert!(own_slip("docker build .", sock, &[], &[]).is_none());
        assert!(own_slip("./scripts/export.sh", "error: API: permission denied for this key", &[], &[]).is_none());
    }
}
