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

/// Whether a turn's leave ends or pauses the session (see [`STOP_LEAVE`]).
pub(crate) fn leave_stops(sentences: &[String]) -> bool {
    sentences.iter().any(|s| has(s, STOP_LEAVE) && !has(s, PUSH_ON))
}

/// Whether a user turn gives leave to stop short: a word of leave in a sentence that
/// does not push on. Typos of the words an instruction turns on are read as them by
/// the caller (`session::fix_typos`) before this.
pub(crate) fn gives_leave(sentences: &[String]) -> bool {
    sentences.iter().any(|s| (has(s, LEAVE_WORDS) || has(s, STOP_LEAVE)) && !has(s, PUSH_ON))
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

/// Obstacle classes: (class, words in a tool's output, words a message names it by).
const OBSTACLES: &[(&str, &[&str], &[&str])] = &[
    (
        "access",
        &[
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
        ],
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
}
