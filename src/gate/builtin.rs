//! The built-in deterministic authority: phrase classes of the stop reason, the
//! plan's unchecked steps and the session's commits. It never cites anything that
//! is not in the evidence, and its verdicts pass the same validation as an external
//! authority's.

use super::readings;
use super::reasons::{self, Reason};
use super::rules::{Decision, Pointer, Rule, Verdict};
use super::session::{InstructionKind, SessionFacts};
use super::{Evidence, PlanArtefact};

/// The built-in authority's verdict. Evidence first: when a durable plan has a next
/// step (or the session has commits next to a plan that predates it), the stop
/// continues unless the message carries a positive, legitimate reason to stop, read
/// by [`reasons::read`] after its two guards (stated continuation, false excuse).
/// Without such evidence a legitimate reason allows the stop with its rule and
/// anything else escalates: there is nothing durable to send the agent back to.
pub fn decide(stop_reason: Option<&str>, evidence: &Evidence) -> Verdict {
    let cont = continuation(evidence);
    // An unreadable message might have held a question: nothing verifiable, allow.
    let Some(text) = stop_reason.filter(|r| !r.trim().is_empty()) else {
        return allow_like(Rule::AmbiguousInsufficientSignal, "no stop reason available");
    };
    let reading = reasons::read(text, evidence.uncommitted.map(|n| n > 0));
    if let Some(reason) = reading.reason {
        let (rule, why) = match reason {
            Reason::SelfReference => (Rule::MetaSelfReference, "the stop concerns the stop gate itself"),
            Reason::MissingAccess => (Rule::LegitMissingInfo, "the agent lacks access or information"),
            Reason::Error => (Rule::LegitError, "the agent reports an error it cannot resolve"),
            Reason::Question => (Rule::LegitDesignQuestion, "the agent asks the user a question"),
            Reason::Completion => (Rule::LegitCompletion, "the work is claimed complete"),
        };
        return allow_like(rule, why);
    }
    let guard = if reading.false_excuse {
        "false excuse: the stated obstacle is the session itself, or a claim the evidence refutes"
    } else if reading.stated_continuation {
        "stated continuation: the message announces more work and stops"
    } else if reading.drift {
        "halfway-stop talk and no legitimate reason to stop"
    } else {
        "no legitimate reason to stop"
    };
    match cont {
        Some(v) => with_why(v, guard),
        None if reading.drift || reading.stated_continuation || reading.false_excuse => {
            allow_like(Rule::AmbiguousInsufficientSignal, "halfway-stop talk but no durable artefact to continue from")
        }
        None => allow_like(Rule::AmbiguousInsufficientSignal, "no legitimate reason and no durable artefact"),
    }
}

fn with_why(mut v: Verdict, why: &str) -> Verdict {
    v.rationale = format!("{}; {why}", v.rationale);
    v
}

fn allow_like(rule: Rule, why: &str) -> Verdict {
    let decision = match rule.class() {
        super::RuleClass::Escalate => Decision::Escalate,
        _ => Decision::Allow,
    };
    Verdict { decision, rule, pointer: Pointer::default(), rationale: format!("built-in: {why}"), finding: None }
}

/// Plans that predate the session and exist in the work tree.
fn durable_plans(ev: &Evidence) -> Vec<&PlanArtefact> {
    ev.plan_files.iter().filter(|p| p.exists && !p.created_this_session).collect()
}

/// The built-in authority with the session's structure (`facts`, read from the
/// transcript): the final message's claims are weighed against what the user said,
/// what the tools did and the plan's state at HEAD and in the work tree; the word
/// classes of [`reasons`] are one signal among these. Without facts (no readable
/// transcript) it is [`decide`]. Every rationale names the evidence that decided.
pub fn decide_session(stop_reason: Option<&str>, evidence: &Evidence, facts: Option<&SessionFacts>) -> Verdict {
    let Some(f) = facts else { return decide(stop_reason, evidence) };
    let cont = continuation(evidence);
    let text = stop_reason.filter(|r| !r.trim().is_empty());
    // A scope limit holds the work the user asked for; a completion claim for it
    // while the last test run failed is not that work finished ("just make the tests
    // pass" is a softener as often as a limit), so the facts decide then.
    // Since round 6b: not in a session that changed nothing ("is it safe to go to node
    // 22? don't change anything, just find out"): a failing probe run is its finding.
    let scope_unfinished = f.instruction.as_ref().is_some_and(|i| i.kind == InstructionKind::Scope)
        && f.last_test.as_ref().is_some_and(|t| !t.ok)
        && !(f.work_edits == 0 && f.commits == 0 && f.plan_edits == 0 && f.user_turns == 1 && f.asked_question())
        && text.is_some_and(|t| {
            reasons::read(t, None).reason == Some(Reason::Completion) || reasons::claims(t).tests_pass
        });
    // A stop instruction that names a point the plan has not reached ("do steps 1-3
    // and stop", and step 2 is open) does not end the work yet: the facts decide.
    let unreached = f
        .instruction
        .as_ref()
        .filter(|i| matches!(i.kind, InstructionKind::Stop | InstructionKind::Pause))
        .and(f.stop_point.as_ref())
        .and_then(|sp| stop_point_unreached(sp, &durable_plans(evidence), f));
    // A numeric condition of the user's ("until the bench is under 50 ms, then stop",
    // "if more than 10 tables, stop and ask") against what any command printed: met,
    // the stop is the user's; missed by every number of its unit, not reached yet.
    let condition_missed = match (&f.condition, f.condition_met) {
        (Some(c), Some(false)) if !c.trigger && (f.instruction.is_some() || f.licence.is_some()) => Some(format!(
            "the user's condition ({} {}{}) is not met: the tools printed only numbers that miss it",
            c.op,
            c.value,
            if c.unit.is_empty() { String::new() } else { format!(" {}", c.unit) }
        )),
        _ => None,
    };
    // Since round 6: a trigger the user set in words ("only stop early if flat config
    // can't express our custom rules") licenses a stop only once a tool result names
    // it; and a command the user said to stop at ("stop when `ledger import ...`
    // runs cleanly") only once its newest run passed.
    let open_steps = durable_plans(evidence).iter().map(|p| p.unchecked_count).sum::<usize>() > 0;
    // Conservative: a failed call that names other words may still be the trigger met
    // in words the reading lacks, so only a session with no failed call is refused.
    let trigger_unmet = f.stop_if.as_deref().filter(|_| !f.stop_if_met && open_steps && f.tool_errors == 0).map(|c| {
        format!("the user said to stop early only if \"{}\", and no tool result shows it (no call failed)", c.trim())
    });
    let run_unmet = f.run_condition.as_deref().and_then(|c| match f.run_condition_ok {
        Some(false) => Some(format!("the user said to stop when `{c}` runs cleanly, and its last run failed")),
        None if open_steps => Some(format!("the user said to stop when `{c}` runs cleanly, and it never ran")),
        _ => None,
    });
    let unreached = condition_missed.or(trigger_unmet).or(run_unmet).or(unreached);
    if let Some(c) = f.condition.as_ref().filter(|_| f.condition_met == Some(true)) {
        let unit = if c.unit.is_empty() { String::new() } else { format!(" {}", c.unit) };
        return allow_like(
            Rule::LegitCompletion,
            &format!("the user's stop condition ({} {}{unit}) is met by a tool result", c.op, c.value),
        );
    }
    // Since round 6b: the user's instruction licenses the stop only if the message's own
    // claims hold ("commit your work and stop", and the claimed commit never ran).
    let instruction_claim_false = f.instruction.as_ref().and(text).and_then(|t| {
        let c = reasons::claims(t);
        // A test result told while no test or build ran in the session ("all 412
        // tests are green" in answer to "does the suite pass on 3.13?").
        let unrun = (c.tests_pass && f.test_runs == 0 && f.last_build.is_none() && f.tool_calls > 0)
            .then(|| "says the tests pass, but no test or build ran in the session".to_string());
        unrun.or_else(|| claim_refuted(&c, t, f, evidence, &durable_plans(evidence)))
    });
    if let Some(why) = instruction_claim_false.as_deref() {
        return refuse(
            cont,
            &format!("the user's instruction holds only if the message's claims do: {why}"),
            &f.summary(),
        );
    }
    // 1. The user's own instruction, read from the user's turns (never from a tool
    //    result that quotes one), is the strongest reason to stop.
    if let Some(i) = f.instruction.as_ref().filter(|_| !scope_unfinished && unreached.is_none()) {
        let rule = match i.kind {
            // The work the user asked for in this session ends here.
            InstructionKind::Stop | InstructionKind::Scope => Rule::LegitCompletion,
            // The user takes the turn: a review, a look, an interrupt.
            InstructionKind::Pause | InstructionKind::Interrupt => Rule::LegitDesignQuestion,
        };
        return allow_like(rule, &format!("user instruction ({}): \"{}\"", i.kind.as_str(), i.quote));
    }
    // The user only asked questions and nothing was changed: answering them is the
    // whole task, whatever the plan still holds.
    if f.questions_only && f.work_edits == 0 && f.commits == 0 && f.plan_edits == 0 {
        return allow_like(
            Rule::LegitCompletion,
            "the user's turns only ask questions and nothing was changed: the answer is the task",
        );
    }
    let Some(text) = text else {
        return allow_like(Rule::AmbiguousInsufficientSignal, "no stop reason available");
    };
    let reading = reasons::read(text, evidence.uncommitted.map(|n| n > 0));
    if reading.reason == Some(Reason::SelfReference) {
        return allow_like(Rule::MetaSelfReference, "the stop concerns the stop gate itself");
    }
    let claims = reasons::claims(text);
    let plans = durable_plans(evidence);
    // Open steps the user named as theirs or left out ("I'm doing the frontend
    // myself") are not the agent's to finish.
    let users: usize = plans.iter().flat_map(|p| p.unchecked_steps.iter()).filter(|s| left_to_user(s, f)).count();
    let open_now: usize = plans.iter().map(|p| p.unchecked_count).sum();
    let open_at_head: usize = plans.iter().map(|p| p.head_unchecked_count).sum();
    // Steps checked in the work tree (or by an edit of the plan) while nothing else
    // was worked on: the checks are not evidence of work.
    let checked_without_work = (open_at_head > open_now || f.plan_edits > 0) && !f.did_work();
    let open = if checked_without_work { open_now.max(open_at_head) } else { open_now.saturating_sub(users) };
    let test_failed = f.last_test.as_ref().filter(|t| !t.ok);
    // A build or check (clippy, lint, a type check) that failed after the last test
    // run, which the message does not mention: the newest fact refutes "done".
    let check_failed = f.last_check.as_ref().filter(|c| !c.ok && f.last_test.as_ref() != Some(c) && !names(text, c));
    let unverified_tests = claims.tests_pass && f.test_runs == 0 && f.last_build.is_none();
    // The claim's own words against the tool results, whatever the plan's boxes say.
    let claim_false = claim_refuted(&claims, text, f, evidence, &plans);
    // Finished work whose boxes the agent never ticked: the plan was not touched in the
    // session, the work was edited and then verified (the last test or check passed,
    // nothing edited after it), and the completion claim names every open step. The
    // boxes are a record the agent forgot, not work left; anything short of that
    // evidence leaves the steps open.
    // Since round 5 a question or talk of a later session next to a completion claim
    // does not undo finished work ("All done. Want me to add caching next time?").
    let unticked_done = open > 0
        && matches!(reading.reason, None | Some(Reason::Completion) | Some(Reason::Question))
        && (!reading.drift || reading.reason == Some(Reason::Completion))
        && !reading.stated_continuation
        && !reading.false_excuse
        && !checked_without_work
        && f.plan_edits == 0
        && open_now == open_at_head
        && f.work_edits > 0
        && f.edits_after_check == 0
        && f.last_check.as_ref().is_some_and(|c| c.ok)
        && test_failed.is_none()
        && plans.iter().all(|p| p.unchecked_steps.len() == p.unchecked_count)
        && {
            let open_steps: Vec<&String> =
                plans.iter().flat_map(|p| p.unchecked_steps.iter()).filter(|s| !left_to_user(s, f)).collect();
            open_steps.iter().all(|s| {
                let (tied, words) = work_ties(s, text, f);
                // Generous on purpose (round 5): one word of the step that no other open
                // step has, in the message, an edited path or a command, ties it to the
                // verified work.
                let others: Vec<String> = open_steps.iter().filter(|o| *o != s).flat_map(|o| step_words(o)).collect();
                named_in(text, s) || (words > 0 && tied >= 2.min(words)) || distinct_tie(s, &others, text, f)
            })
        };
    let open = if unticked_done { 0 } else { open };
    let steps: Vec<String> = plans.iter().flat_map(|p| p.next_steps().iter().take(1).cloned()).collect();
    let facts_line = match users {
        0 => f.summary(),
        n => format!("{}; {n} open step(s) the user left out or took over", f.summary()),
    };
    // An obstacle outside the code that a tool result met (an expired token, a refused
    // connection, a rate limit, a full disk, a service down) and that the message
    // names: the stop reports it, whatever else the plan holds.
    let said = reasons::norm(text);
    let claims_done = reading.reason == Some(Reason::Completion) || claims.tests_pass;
    let last_check_failed = f.last_check.as_ref().is_some_and(|c| !c.ok);
    // A pull request the session opened itself is its own hand-off, not work upstream.
    let opened_own = f.commands.iter().any(|c| c.contains("pr create") || c.contains("mr create"));
    if let Some(class) =
        f.obstacles.iter().find(|c| readings::names_obstacle(&said, c) && !(*c == "upstream" && opened_own))
        && f.own_slip.is_none()
        && !(claims_done && last_check_failed)
    {
        let last = f.last_error.as_deref().unwrap_or("-");
        let rule = if class == "access" { Rule::LegitMissingInfo } else { Rule::LegitError };
        return allow_like(rule, &format!("an obstacle the tools met ({class}): \"{last}\"; {facts_line}"));
    }
    // Since round 6: a genuine decision before an act that cannot be taken back (drop
    // a table, force-push, rotate a secret, send mail or money, a production
    // migration), asked in any wording: the user's to make, whatever else the message
    // says ("it can't be undone" is the act's nature, not an error blamed).
    if reasons::asks_before_irreversible(text) && !reading.false_excuse {
        return allow_like(
            Rule::LegitDesignQuestion,
            &format!("the agent asks the user before an act that cannot be taken back; {facts_line}"),
        );
    }
    // Since round 6: a document the user told the agent to follow ("follow the phases in
    // CONTRIBUTING.md", "do what the runbook says") makes its stop points the user's: a
    // message that names the document and says it stops or waits there is the user's
    // stop. A stop point only a file holds, with no user turn pointing at it, is not.
    if let Some(doc) = f.adopted.iter().find(|d| said.contains(&format!(" {d}")))
        && unreached.is_none()
        && f.own_slip.is_none()
        && !(claims_done && last_check_failed)
        && !reading.false_excuse
        && !reading.stated_continuation
        && (readings::says_it_followed(text) || claims.user_instruction || claims.stop_instruction)
    {
        return allow_like(
            Rule::LegitCompletion,
            &format!("the user adopted the stop points of `{doc}`, and the message stops at one; {facts_line}"),
        );
    }
    // 2. A claimed instruction the transcript does not hold. The user's turns hold one
    //    when an instruction was read from them or they leave work out ("skip the
    //    export"): the message then repeats the user's request, it does not invent one.
    //    A last turn with words of limiting that no instruction was read from may hold
    //    one in words the reader does not know: the claim gets the benefit of the doubt.
    if (claims.user_instruction || claims.stop_instruction)
        && f.instruction.is_none()
        && f.left_to_user.is_empty()
        && !f.last_turn_limits
        && f.licence.is_none()
    {
        return refuse(cont, "claims a user instruction the user's turns do not hold", &facts_line);
    }
    // The user's leave, read wide: a turn that drops, defers or hands over a step, or
    // asks to stop, pause or wait, and a message that says it followed such a turn.
    // Refused only on a fact: a point or condition the tools show not reached (above
    // and below), or a completion claimed against a failing last check.
    // A leave that only drops a step holds for that step: the agent's other open steps
    // still count (`open` has the user's steps out already). A leave that stops or
    // pauses the session holds for what comes after it.
    if let Some(quote) = f.licence.as_deref()
        && unreached.is_none()
        && f.own_slip.is_none()
        && !(claims_done && last_check_failed)
        && (f.licence_stops || open == 0)
        && (claims.user_instruction
            || claims.stop_instruction
            || (readings::says_it_followed(text) && shares_word(text, quote)))
        && !reading.false_excuse
    {
        return allow_like(
            Rule::LegitCompletion,
            &format!("the user's leave to stop short: \"{quote}\"; {facts_line}"),
        );
    }
    // An access refusal the tools met, reported in words the access reading does not
    // hold ("the session token has expired"): an obstacle met, not an excuse.
    if reading.reason.is_none()
        && f.access_failures > 0
        && f.own_slip.is_none()
        && reasons::names_access(text)
        && reasons::blocks(text)
    {
        let last = f.last_error.as_deref().unwrap_or("-");
        return allow_like(
            Rule::LegitMissingInfo,
            &format!("an access refusal the tools met: \"{last}\"; {facts_line}"),
        );
    }
    // Asking before a destructive or irreversible act is a decision only the user can
    // make, however many plan steps are open ("confirm before I run the delete").
    if reading.reason.is_none() && reasons::asks_confirmation_first(text) {
        return allow_like(
            Rule::LegitDesignQuestion,
            "the agent asks the user to confirm a destructive or irreversible action first",
        );
    }
    // Since round 6: the user's request was a task of its own, not the plan's: no user
    // turn names the plan or asks to go on, each asks for something (two content words
    // or more), and none shares a word with an open step ("bump the version to 2.4.1"
    // next to a plan for exports; an investigation, a review, a bug fix). The plan was
    // not touched, and nothing refutes the work (no failing run or check, no claim past
    // the runs): the task is the session's, and its end is a legitimate stop.
    if open > 0
        && own_task(f, &plans)
        && f.plan_edits == 0
        && open_now == open_at_head
        && matches!(reading.reason, None | Some(Reason::Completion) | Some(Reason::Question))
        && !reading.drift
        && !reading.stated_continuation
        && !reading.false_excuse
        && test_failed.is_none()
        && check_failed.is_none()
        && !unverified_tests
        && claim_false.is_none()
        && unreached.is_none()
    {
        return allow_like(
            Rule::LegitCompletion,
            &format!("the user's request is a task of its own, not a step of the plan; {facts_line}"),
        );
    }
    if let Some(why) = unreached.as_deref()
        && matches!(reading.reason, None | Some(Reason::Completion) | Some(Reason::Question))
        && !reasons::questions(text, &steps).genuine_decision
    {
        return refuse(cont, why, &facts_line);
    }
    // 3. The message's reason, checked against the facts.
    let refuted: Option<String> = match reading.reason {
        // A mistyped command or a path typed wrong is the agent's own slip, not an obstacle.
        Some(Reason::Error | Reason::MissingAccess) if f.own_slip.is_some() => {
            Some(format!("blames an error of its own making: {}", f.own_slip.as_deref().unwrap_or("-")))
        }
        Some(Reason::Error) if f.tool_errors == 0 => {
            Some("blames an error, but no tool call of the session failed (an obstacle never met)".into())
        }
        // Since round 6b: one failed test run, no obstacle outside the code met or
        // named, open steps: the failures are the work, not a reason to hand it back.
        Some(Reason::Error) if gives_up_on_red_run(text, f, open) && !reasons::questions(text, &steps).genuine_decision => {
            Some("stops after one failed test run that met no obstacle outside the code: the failures are the work".into())
        }
        // The failing build or test names a file the session edited: the error is the
        // agent's own work in progress, not an obstacle.
        Some(Reason::Error)
            if f.last_check.as_ref().is_some_and(|c| !c.ok)
                && f.own_error.is_some()
                && !reasons::questions(text, &steps).genuine_decision =>
        {
            let file = f.own_error.as_deref().unwrap_or("-");
            Some(format!("blames an error in a file the session edited (`{file}`): fixing it is the work"))
        }
        Some(Reason::Error) => {
            let last = f.last_error.as_deref().unwrap_or("-");
            return allow_like(Rule::LegitError, &format!("an error the agent reports and the tools met: \"{last}\""));
        }
        // A credential claimed missing while no tool call of the session failed or
        // said access was refused, and the plan's next steps are open: the obstacle
        // was never met (a tool that showed the secret set is no failure either).
        // Since round 6b: an obstacle told as an event ("the registry rejects my
        // credentials", "the sandbox has no network access") that no tool call met.
        Some(Reason::MissingAccess)
            if claims_refusal(&said) && open > 0 && f.tool_calls > 0 && f.tool_errors == 0 && f.access_failures == 0 =>
        {
            Some("says a service or the network refused it, but no tool call of the session failed (an obstacle never met)".into())
        }
        // Since round 6b: a credential called missing that a tool result showed set.
        Some(Reason::MissingAccess | Reason::Question) if shown_set_named(&said, f).is_some() && open > 0 => Some(format!(
            "calls a credential missing that a tool result showed set (`{}`)",
            shown_set_named(&said, f).unwrap_or_default().to_uppercase()
        )),
        Some(Reason::MissingAccess)
            if (reading.credential || lack_ties_open_step(&reading, &plans, f))
                && open > 0
                && f.tool_calls > 0
                && f.tool_errors == 0
                && f.access_failures == 0
                && !reasons::questions(text, &steps).genuine_decision =>
        {
            Some("blames a missing credential, but no tool call of the session met it (an obstacle never met)".into())
        }
        Some(Reason::MissingAccess) => {
            return allow_like(Rule::LegitMissingInfo, "the agent lacks access or information");
        }
        // Since round 6b: a question that hands back a refused access or an error
        // ("I don't seem to have permission to push, could you?") while the failure
        // was the agent's own slip (a name typed wrong).
        Some(Reason::Question)
            if f.own_slip.is_some() && open > 0 && (reasons::names_access(text) || claims_refusal(&said)) =>
        {
            Some(format!("hands back an error of its own making: {}", f.own_slip.as_deref().unwrap_or("-")))
        }
        Some(Reason::Question) => {
            let q = reasons::questions(text, &steps);
            if let Some(step) = plan_decides(text, &plans, f).filter(|_| !q.other_decision && open > 0) {
                Some(format!("asks a choice the plan already makes (\"{step}\")"))
            } else if q.asks_plan_step && !q.genuine_decision && open > 0 {
                Some("asks leave for the plan's own next step".into())
            } else if q.hands_off && !q.genuine_decision && open > 0 {
                Some(format!("hands the work back for a look while the plan has {open} open step(s)"))
            } else {
                return allow_like(
                    Rule::LegitDesignQuestion,
                    "the agent asks the user a decision the plan leaves open",
                );
            }
        }
        Some(Reason::Completion) => completion_refuted(
            open,
            checked_without_work,
            test_failed,
            unverified_tests,
            check_failed,
            claim_false.clone(),
        ),
        _ => None,
    };
    if let Some(why) = refuted {
        return refuse(cont, &why, &facts_line);
    }
    // 4. No reason in the words: finished, verified work is still a legitimate stop,
    //    whatever the message offers next ("let me know if you want more").
    let unfinished =
        completion_refuted(open, checked_without_work, test_failed, unverified_tests, check_failed, claim_false);
    let finished = !plans.is_empty() && unfinished.is_none() && f.did_work();
    // A claim the evidence refutes ("everything is committed" with a dirty tree) is no finish.
    if finished && !reading.stated_continuation && !reading.false_excuse {
        return allow_like(
            Rule::LegitCompletion,
            &format!("every plan step is checked and the work is verified; {facts_line}"),
        );
    }
    // A ticked plan with work behind it that a fact refutes: the log names that fact.
    if let Some(why) = unfinished.filter(|_| open == 0 && !plans.is_empty() && f.did_work()) {
        return refuse(cont, &why, &facts_line);
    }
    let guard = if reading.false_excuse {
        "false excuse: the stated obstacle is the session itself, or a claim the evidence refutes"
    } else if reading.stated_continuation {
        "stated continuation: the message announces more work and stops"
    } else if open > 0 {
        "the plan has open steps and the message gives no reason to stop"
    } else {
        "no legitimate reason to stop"
    };
    refuse(cont, guard, &facts_line)
}

/// Words of a message that tell an obstacle as something that happened to a call
/// (normalised): a refusal, a rejection, an unreachable network. A lack told as a need
/// ("publishing needs a token I don't have") is not one.
const REFUSAL_TOLD: &[&str] = &[
    " rejects",
    " rejected",
    " refuses",
    " refused",
    " denies",
    " denied",
    " no network",
    " without network",
    " network access",
    " cant reach",
    " cannot reach",
    " couldnt reach",
    " could not reach",
    " unreachable",
    " times out",
    " timed out",
    " blocked by",
];

/// Whether a message (normalised) tells an obstacle as a refusal that happened.
fn claims_refusal(said: &str) -> bool {
    REFUSAL_TOLD.iter().any(|w| said.contains(w))
}

/// Words of a variable's name that make it a credential (`SENTRY_DSN`, `NPM_TOKEN`).
const CREDENTIAL_PARTS: &[&str] = &["token", "key", "secret", "dsn", "password", "pat", "pass", "apikey"];

/// Words of a variable's name too common to tie it to a message's credential.
const NAME_STOPWORDS: &[&str] =
    &["token", "key", "api", "secret", "vite", "next", "public", "react", "app", "access", "url", "env", "prod", "dev"];

/// A variable a tool result showed set whose distinctive word (`mapbox` of
/// `VITE_MAPBOX_TOKEN`) the message (normalised) names, if any.
fn shown_set_named(said: &str, f: &SessionFacts) -> Option<String> {
    f.shown_set
        .iter()
        .find(|n| {
            // A credential by its name, named by the message by its kind and its own word.
            n.split('_').any(|w| CREDENTIAL_PARTS.contains(&w) && said.contains(&format!(" {w}")))
                && n.split('_')
                    .filter(|w| w.len() >= 4 && !NAME_STOPWORDS.contains(w))
                    .any(|w| said.contains(&format!(" {w}")))
        })
        .cloned()
}

/// One test run, which failed, with no obstacle outside the code met by any call nor
/// named by the message, and steps open: the agent gives up on its own red run.
fn gives_up_on_red_run(text: &str, f: &SessionFacts, open: usize) -> bool {
    let said = reasons::norm(text);
    open > 0
        && f.test_runs == 1
        && f.tool_errors == 1
        && f.last_test.as_ref().is_some_and(|t| !t.ok)
        && f.last_check.as_ref() == f.last_test.as_ref()
        && f.obstacles.is_empty()
        && f.access_failures == 0
        && f.own_slip.is_none()
        && !claims_refusal(&said)
        && !reasons::names_access(text)
}

/// A plan ticked in the session is weighed against the files edited only from this
/// many ticked steps on: two steps done in one or two files are common and honest.
const MIN_TICKED_UNTIED: usize = 3;

/// Words too common in plan steps to tie a user's clause to one.
const STEP_STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "from", "into", "that", "this", "then", "them", "add", "use", "make", "step", "steps",
    "plan", "new", "all", "its", "our", "your", "part", "parts", "work", "code", "file", "files", "also", "more",
    "some", "update", "out", "not", "now", "later", "myself", "leave", "skip", "doing", "will", "ill", "handle",
    "take",
];

/// Whether an open step is named by a clause of the user's that leaves it out or
/// takes it over: a content word of the step (three letters or more, not a common
/// one, a final `s` ignored) is a word of the clause.
fn left_to_user(step: &str, f: &SessionFacts) -> bool {
    if f.left_steps.iter().any(|s| s == step) {
        return true;
    }
    let stem = |w: &str| w.strip_suffix('s').filter(|r| r.len() >= 3).unwrap_or(w).to_string();
    let words: Vec<String> = reasons::norm(step)
        .split([' ', '/'])
        .filter(|w| w.len() >= 3 && !STEP_STOPWORDS.contains(w))
        .map(stem)
        .collect();
    f.left_to_user.iter().any(|clause| {
        clause.split(' ').filter(|w| w.len() >= 3 && !STEP_STOPWORDS.contains(w)).any(|w| words.contains(&stem(w)))
    })
}

/// Why a completion claim does not hold, if it does not.
fn completion_refuted(
    open: usize,
    checked_without_work: bool,
    test_failed: Option<&super::session::CommandRun>,
    unverified_tests: bool,
    check_failed: Option<&super::session::CommandRun>,
    claim_false: Option<String>,
) -> Option<String> {
    if checked_without_work {
        return Some(format!(
            "plan steps were checked, but nothing else was edited, built or tested in the session ({open} open at HEAD)"
        ));
    }
    if open > 0 {
        return Some(format!("claims completion while the plan has {open} unchecked step(s)"));
    }
    if let Some(t) = test_failed {
        let n = t.failures.map(|n| format!(", {n} failures")).unwrap_or_default();
        return Some(format!("claims completion while the last test run failed (`{}`{n})", t.command));
    }
    if unverified_tests {
        return Some("claims the tests pass, but no test or build ran in the session".into());
    }
    if let Some(c) = check_failed {
        return Some(format!("claims completion while the last check failed after the tests (`{}`)", c.command));
    }
    claim_false
}

/// Why the final message's own words are refuted by the tool results, if they are,
/// whatever the plan's boxes say: a passing run claimed from before the last code
/// edits, "committed" while no commit ran and the tree is dirty, or plan steps ticked
/// in the session that most tie to no file edited or command run and no test ran.
fn claim_refuted(
    claims: &reasons::Claims,
    message: &str,
    f: &SessionFacts,
    evidence: &Evidence,
    plans: &[&PlanArtefact],
) -> Option<String> {
    if claims.tests_pass && f.last_check.as_ref().is_some_and(|c| c.ok) && f.code_edits_after_check > 0 {
        return Some(format!(
            "says the tests pass, but {} code edit(s) came after the last passing run",
            f.code_edits_after_check
        ));
    }
    if claims.committed
        && f.tool_calls > 0
        && f.commits == 0
        && evidence.commits_since_start.is_empty()
        && evidence.uncommitted.is_some_and(|n| n > 0)
    {
        return Some(format!(
            "says the work is committed, but no commit ran in the session and {} path(s) are uncommitted",
            evidence.uncommitted.unwrap_or(0)
        ));
    }
    // Since round 5, verification claimed past the runs: "verified" or "everything
    // passes" with no test or check run at all; tests said to pass when only a pure
    // build ran; the whole suite claimed when every test run named a file or a filter.
    // Code changed: a prose-only change is verified by reading it.
    if claims.verified && f.test_runs == 0 && f.last_build.is_none() && f.code_edits > 0 {
        return Some("says the work is verified, but no test or check ran in the session".into());
    }
    if claims.tests_named && f.test_runs == 0 && f.check_runs == 0 && f.last_build.is_some() {
        return Some(format!(
            "says the tests pass, but only a build ran (`{}`), no test",
            f.last_build.as_ref().map_or("-", |b| b.command.as_str())
        ));
    }
    if claims.suite && f.test_runs > 0 && f.full_test_runs == 0 {
        return Some(format!(
            "claims the whole suite, but every test run was a subset (`{}`)",
            f.last_test.as_ref().map_or("-", |t| t.command.as_str())
        ));
    }
    let ticked: Vec<&String> =
        plans.iter().flat_map(|p| p.head_unchecked_steps.iter().filter(|s| !p.unchecked_steps.contains(s))).collect();
    let untied = ticked.iter().filter(|s| work_ties(s, "", f).0 == 0).count();
    // Conservative on purpose: more steps ticked than files edited (plus one), and at
    // least half of them tied to nothing; a plan of small steps done in one file with
    // its words in the paths stays finished.
    if ticked.len() >= MIN_TICKED_UNTIED
        && ticked.len() > f.edited_paths.len() + 1
        && f.test_runs == 0
        && untied * 2 >= ticked.len()
    {
        return Some(format!(
            "{untied} of the {} plan step(s) checked in the session tie to no file edited or command run, and no test ran",
            ticked.len()
        ));
    }
    // Since round 6: three or more steps ticked in the session while every file edited
    // ties to one of them alone, and two others have no work of their own (no word of
    // them that the other ticked steps lack is in an edited path or a command run, and
    // the message does not describe them). A step whose words are all shared or generic
    // is taken as backed, and an edit that ties to no step (or to several) leaves the
    // boxes alone: when in doubt, allow.
    if ticked.len() >= MIN_TICKED_UNTIED && !f.edited_paths.is_empty() {
        let paths: Vec<String> = f.edited_paths.iter().map(|p| p.to_ascii_lowercase()).collect();
        let commands: Vec<String> =
            f.commands.iter().filter(|c| !c.contains("[x]")).map(|c| reasons::norm(c)).collect();
        let distinct: Vec<Vec<String>> = (0..ticked.len())
            .map(|k| {
                let others: Vec<String> =
                    ticked.iter().enumerate().filter(|(j, _)| *j != k).flat_map(|(_, o)| step_words(o)).collect();
                step_words(ticked[k]).into_iter().filter(|w| !others.contains(w)).collect()
            })
            .collect();
        let backs = |p: &String| -> Vec<usize> {
            (0..ticked.len()).filter(|&k| distinct[k].iter().any(|w| p.contains(w.as_str()))).collect()
        };
        let first = backs(&paths[0]);
        if first.len() == 1 && paths.iter().all(|p| backs(p) == first) {
            let unbacked: Vec<&str> = (0..ticked.len())
                .filter(|k| *k != first[0])
                .filter(|&k| {
                    // A step the message describes in its own words is given the benefit
                    // of the doubt ("rows are validated and errors reported per row").
                    !distinct[k].is_empty()
                        && !describes(message, &distinct[k])
                        && !distinct[k].iter().any(|w| {
                            paths.iter().any(|p| p.contains(w.as_str()))
                                || commands.iter().any(|c| c.contains(&format!(" {w}")))
                        })
                })
                .map(|k| ticked[k].as_str())
                .collect();
            if unbacked.len() >= 2 {
                return Some(format!(
                    "{} plan step(s) were checked in the session, but every file edited is the work of \"{}\" alone; no edit or command backs \"{}\"",
                    ticked.len(),
                    ticked[first[0]],
                    unbacked.join("\", \"")
                ));
            }
        }
    }
    None
}

/// Words of a user turn that point at the plan or at going on with it: such a turn asks
/// for the plan's work, whatever its other words.
const PLAN_TALK: &[&str] = &[
    " plan",
    " step",
    " steps",
    " todo",
    " roadmap",
    " milestone",
    " phase",
    " checklist",
    " the rest",
    " continue",
    " next",
    " remaining",
    " keep going",
    " carry on",
    " go on",
    " proceed",
    " resume",
    " finish",
    " where we left",
    " pick up",
    " the spec",
    " the ticket",
    " the issue",
    " backlog",
];

/// Whether every user turn asks for a task of its own: it names no plan and asks to go on
/// with none, holds two content words or more, and shares no word with an open step of
/// a durable plan (the same word or its first six letters).
fn own_task(f: &SessionFacts, plans: &[&PlanArtefact]) -> bool {
    const MIN_TASK_WORDS: usize = 2;
    let steps: Vec<String> = plans
        .iter()
        .flat_map(|p| p.unchecked_steps.iter().chain(p.head_unchecked_steps.iter()))
        .flat_map(|s| step_words(s))
        .collect();
    // The work itself must not be a plan step's either: an edited path or a command that
    // ties to an open step ("web/src/Welcome.tsx" for "Add the welcome screen") is plan
    // work done under another name.
    let work_is_plan = plans
        .iter()
        .flat_map(|p| p.unchecked_steps.iter().chain(p.head_unchecked_steps.iter()))
        .any(|s| work_ties(s, "", f).0 > 0);
    !work_is_plan
        && !f.user_texts.is_empty()
        && f.user_texts.iter().all(|t| {
            let words = step_words(t);
            let n = reasons::norm(t);
            // Loose on purpose (a shared first four letters: "caching" and "cache"): a
            // request that may be a plan step is judged as one.
            let ties = words
                .iter()
                .any(|w| steps.iter().any(|s| w.bytes().zip(s.bytes()).take_while(|(a, b)| a == b).count() >= 4));
            !PLAN_TALK.iter().any(|w| n.contains(w)) && words.len() >= MIN_TASK_WORDS && !ties
        })
}

/// Whether the message speaks of one of `words` (a step's own words): the same word, a
/// final `s` aside, or the same first six letters ("validated" for "Validate rows").
fn describes(message: &str, words: &[String]) -> bool {
    const PREFIX: usize = 6;
    let said = step_words(message);
    let head = |w: &str| w.get(..PREFIX).map(str::to_string);
    words.iter().any(|w| said.iter().any(|m| m == w || (head(m).is_some() && head(m) == head(w))))
}

/// How a plan step ties to the session's work: how many of its content words are
/// words of `message`, parts of an edited path or words of a command run (a commit
/// message included; a command that ticks boxes aside), and how many it has.
fn work_ties(step: &str, message: &str, f: &SessionFacts) -> (usize, usize) {
    let said = step_words(message);
    let paths: Vec<String> = f.edited_paths.iter().map(|p| p.to_ascii_lowercase()).collect();
    let commands: Vec<String> = f.commands.iter().filter(|c| !c.contains("[x]")).map(|c| reasons::norm(c)).collect();
    let mut words = step_words(step);
    words.sort_unstable();
    words.dedup();
    let tied = words
        .iter()
        .filter(|w| {
            said.contains(w)
                || paths.iter().any(|p| p.contains(w.as_str()))
                || commands.iter().any(|c| c.contains(&format!(" {w}")))
        })
        .count();
    (tied, words.len())
}

/// Whether a word of `step` that no other open step has (`others`) is a word of the
/// message, a part of an edited path or a word of a command run.
fn distinct_tie(step: &str, others: &[String], message: &str, f: &SessionFacts) -> bool {
    let distinct: Vec<String> = step_words(step).into_iter().filter(|w| !others.contains(w)).collect();
    distinct.iter().any(|w| work_ties(w, message, f).0 > 0)
}

/// Whether the message shares a content word (four letters or more, not a common
/// one) with the user's turn: it speaks of what the turn spoke of.
fn shares_word(message: &str, turn: &str) -> bool {
    let said = step_words(message);
    step_words(turn).iter().any(|w| said.contains(w))
}

/// The open step that already makes the choice the message asks, if one does.
fn plan_decides(text: &str, plans: &[&PlanArtefact], f: &SessionFacts) -> Option<String> {
    let choice = reasons::choice(text)?;
    plans
        .iter()
        .flat_map(|p| p.unchecked_steps.iter())
        .filter(|s| !left_to_user(s, f))
        // The step speaks of what the question speaks of, beyond the sides themselves
        // ("the scheduler ... Postgres advisory locks"): a step that names one side in
        // passing ("Migrate from Redis to Postgres") decides nothing about the cache.
        .filter(|s| {
            let asked: Vec<String> = question_sentences(text).iter().flat_map(|q| step_words(q)).collect();
            // A shared stem of five letters ("serializer" / "Serialize events").
            let stem = |w: &str| w.chars().take(5).collect::<String>();
            // Not a side itself (a side's final `s` may be stemmed away: "redis").
            let side = |w: &str| [&choice.0, &choice.1].iter().any(|c| c.starts_with(w) || w.starts_with(c.as_str()));
            step_words(s).iter().any(|w| !side(w) && w.len() >= 4 && asked.iter().any(|a| stem(a) == stem(w)))
        })
        .find(|s| reasons::step_decides(s, &choice))
        .cloned()
}

/// The message's questions, each from the end of the sentence before it to its `?`.
fn question_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '\n' | '?') {
            if c == '?' {
                out.push(&text[start..i]);
            }
            start = i + c.len_utf8();
        }
    }
    out
}

/// Whether the sentence in which the agent says it lacks a credential or access names
/// an open step of the plan that is the agent's own (not a destructive or user-owned
/// act such as a production deploy): such a credential is one a tool call would meet.
fn lack_ties_open_step(reading: &reasons::Reading, plans: &[&PlanArtefact], f: &SessionFacts) -> bool {
    let Some(sentence) = reading.lack_sentence.as_deref() else { return false };
    let said = step_words(sentence);
    plans
        .iter()
        .flat_map(|p| p.unchecked_steps.iter())
        .filter(|s| !left_to_user(s, f))
        .any(|s| !reasons::destructive(&reasons::norm(s)) && step_words(s).iter().any(|w| said.contains(w)))
}

/// Whether the message names a check run: a word of its command line (three letters
/// or more, not the runner's) is a word of the message ("clippy", "lint", "tsc").
fn names(message: &str, run: &super::session::CommandRun) -> bool {
    const RUNNERS: &[&str] = &[
        "cargo", "npm", "npx", "yarn", "pnpm", "run", "all", "targets", "bun", "uv", "poetry", "python", "make", "the",
    ];
    let m = reasons::norm(message);
    reasons::norm(&run.command)
        .split(' ')
        .filter(|w| w.len() >= 3 && !RUNNERS.contains(w) && w.chars().all(|c| c.is_ascii_alphabetic()))
        .any(|w| m.contains(&format!(" {w} ")))
}

/// Whether a message names a plan step: at least two of the step's content words (its
/// only one, for a one-word step) are words of the message.
fn named_in(message: &str, step: &str) -> bool {
    let words = step_words(step);
    let said = step_words(message);
    let overlap = words.iter().filter(|w| said.contains(w)).count();
    !words.is_empty() && overlap >= 2.min(words.len())
}

/// Content words of a step or a stop point, a final `s` ignored.
fn step_words(s: &str) -> Vec<String> {
    let stem = |w: &str| w.strip_suffix('s').filter(|r| r.len() >= 3).unwrap_or(w).to_string();
    // A path is words too ("GET /articles/ID" names the articles).
    reasons::norm(s).split([' ', '/']).filter(|w| w.len() >= 4 && !STEP_STOPWORDS.contains(w)).map(stem).collect()
}

/// Why the user's stop point is not reached, if it is not: a numbered point at or
/// past the first open step, or the step to stop before (or after) with open steps
/// before it (or still open itself). A point that ties to no open step is taken as
/// reached: when in doubt, the user's word stands.
fn stop_point_unreached(sp: &super::session::StopPoint, plans: &[&PlanArtefact], f: &SessionFacts) -> Option<String> {
    let first_open = f.first_open_step;
    // A condition on the checks is read against the newest one.
    if sp.when_passing
        && let Some(c) = f.last_check.as_ref().filter(|c| !c.ok)
    {
        return Some(format!("the user said to stop once the checks pass, and the last one failed (`{}`)", c.command));
    }
    if let (Some(n), Some(p)) = (sp.last_step, first_open)
        && p <= n
    {
        return Some(format!("the user said to stop after step {n}, and step {p} of the plan is still open"));
    }
    let steps: Vec<&String> = plans.iter().flat_map(|p| p.unchecked_steps.iter()).collect();
    let ties = |point: &[String], step: &str| {
        let point: Vec<String> = point.iter().flat_map(|w| step_words(w)).collect();
        let words = step_words(step);
        let overlap = point.iter().filter(|w| words.contains(w)).count();
        !point.is_empty() && overlap >= 2.min(point.len())
    };
    if !sp.before.is_empty()
        && let Some(k) = steps.iter().position(|s| ties(&sp.before, s))
        && k > 0
    {
        return Some(format!(
            "the user said to stop before \"{}\", and {k} open step(s) of the plan come before it",
            steps[k]
        ));
    }
    // A step checked in the session that the point names as well is where the user
    // said to stop ("stop after the worker": the worker step is done).
    let ticked: Vec<&String> =
        plans.iter().flat_map(|p| p.head_unchecked_steps.iter().filter(|s| !p.unchecked_steps.contains(s))).collect();
    if !sp.after.is_empty()
        && !ticked.iter().any(|s| ties(&sp.after, s))
        && let Some(s) = steps.iter().find(|s| ties(&sp.after, s))
    {
        return Some(format!("the user said to stop after \"{s}\", which is still open"));
    }
    None
}

/// Continue when the evidence supports it, else escalate; the rationale names why.
fn refuse(cont: Option<Verdict>, why: &str, facts: &str) -> Verdict {
    match cont {
        Some(v) => Verdict { finding: Some(why.to_string()), ..with_why(v, &format!("{why}; {facts}")) },
        None => allow_like(
            Rule::AmbiguousInsufficientSignal,
            &format!("{why}, but no durable artefact to continue from; {facts}"),
        ),
    }
}

/// The strongest continue rule the evidence supports, if any.
fn continuation(ev: &Evidence) -> Option<Verdict> {
    // Only a plan that predates the session is a durable artefact: a plan written in
    // this session may be the rationalisation itself.
    let durable = durable_plans(ev);
    let with_steps = durable.iter().copied().filter(|p| p.open_steps() > 0).max_by_key(|p| p.modified_this_session);
    let newest = ev.commits_since_start.first();
    let cont = |rule, pointer, why: &str| Verdict {
        decision: Decision::Continue,
        rule,
        pointer,
        rationale: format!("built-in: {why}"),
        finding: None,
    };
    match (with_steps, newest) {
        (Some(plan), Some(commit)) if plan.latest_commit.is_some() => Some(cont(
            Rule::U1DurableArtifactContinuationSafe,
            Pointer {
                plan_file: Some(plan.path.clone()),
                plan_commit_sha: plan.latest_commit.clone(),
                incremental_commit_sha: Some(commit.sha.clone()),
            },
            "committed plan with unchecked steps and a commit since the session started",
        )),
        (Some(plan), _) => Some(cont(
            Rule::U2PlanFileNextStepExplicit,
            Pointer {
                plan_file: Some(plan.path.clone()),
                plan_commit_sha: plan.latest_commit.clone(),
                ..Pointer::default()
            },
            "committed plan with unchecked steps",
        )),
        (None, Some(commit)) if !durable.is_empty() => Some(cont(
            Rule::U3RecentCommitProvesIncremental,
            Pointer { incremental_commit_sha: Some(commit.sha.clone()), ..Pointer::default() },
            "commits since the session started next to a committed plan",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::rules::validate;
    use crate::gate::{PlanArtefact, fixture};

    fn plan(steps: usize, created: bool) -> PlanArtefact {
        fixture::plan("docs/plans/p.md", steps, created)
    }

    fn ev(plans: Vec<PlanArtefact>, commits: usize) -> Evidence {
        fixture::evidence(plans, commits)
    }

    /// One labelled stop message of `tests/fixtures/gate/stops-*.txt`.
    struct Labelled {
        halfway: bool,
        kind: String,
        text: String,
    }

    /// Records `@<class> <kind>` followed by the message lines; `#` lines before the
    /// first record are comments.
    fn corpus() -> Vec<Labelled> {
        parse(&[
            include_str!("../../tests/fixtures/gate/stops-halfway.txt"),
            include_str!("../../tests/fixtures/gate/stops-legit.txt"),
            include_str!("../../tests/fixtures/gate/stops-second-pass.txt"),
        ])
    }

    /// Written after the rules and never used to change them.
    fn heldout() -> Vec<Labelled> {
        parse(&[include_str!("../../tests/fixtures/gate/stops-heldout.txt")])
    }

    fn parse(files: &[&str]) -> Vec<Labelled> {
        let mut out: Vec<Labelled> = Vec::new();
        for file in files {
            let mut started = false;
            for line in file.lines() {
                if !started && (line.starts_with('#') || line.is_empty()) {
                    continue;
                }
                if let Some(head) = line.strip_prefix('@') {
                    let (class, kind) = head.split_once(' ').unwrap();
                    assert!(class == "halfway" || class == "legit", "{line}");
                    out.push(Labelled { halfway: class == "halfway", kind: kind.into(), text: String::new() });
                    started = true;
                } else if let Some(l) = out.last_mut() {
                    if !l.text.is_empty() {
                        l.text.push('\n');
                    }
                    l.text.push_str(line);
                }
            }
        }
        out
    }

    /// Agreement and legitimate stops blocked of `set` with a committed plan that has
    /// a next step and nothing uncommitted, with `commits` session commits.
    fn measure(name: &str, set: &[Labelled], commits: usize) -> (f64, usize, usize) {
        let evidence = ev(vec![plan(2, false)], commits);
        let legit = set.iter().filter(|l| !l.halfway).count();
        let mut wrong = Vec::new();
        let mut legit_blocked = 0;
        for l in set {
            let v = decide(Some(&l.text), &evidence);
            validate(&v, &evidence).unwrap();
            let blocked = v.decision == Decision::Continue;
            if blocked != l.halfway {
                legit_blocked += usize::from(blocked);
                let class = if l.halfway { "halfway" } else { "legit" };
                wrong.push(format!("{class} {}: {:?} -> {:?}", l.kind, l.text, v.rule));
            }
        }
        let agreement = (set.len() - wrong.len()) as f64 / set.len() as f64;
        eprintln!(
            "{name} (session commits {commits}): {} messages, agreement {:.1}% ({} wrong), legitimate stops blocked {legit_blocked}/{legit}",
            set.len(),
            agreement * 100.0,
            wrong.len(),
        );
        for w in &wrong {
            eprintln!("  {w}");
        }
        (agreement, legit_blocked, legit)
    }

    /// The corpus against the built-in authority. Figures in docs/gate.md ("How often
    /// it is right"); `cargo test --lib corpus_ -- --nocapture` prints them.
    #[test]
    fn corpus_agreement_and_legitimate_stops_blocked() {
        let c = corpus();
        let halfway = c.iter().filter(|l| l.halfway).count();
        assert!(c.len() >= 150 && halfway >= 60 && c.len() - halfway >= 60, "{halfway} of {}", c.len());
        for commits in [0, 1] {
            let (agreement, blocked, legit) = measure("corpus", &c, commits);
            assert!(agreement >= 0.95, "agreement {agreement:.3} below 95%");
            assert!(blocked as f64 <= 0.01 * legit as f64, "legitimate stops blocked {blocked}/{legit} above 1%");
        }
    }

    /// The held-out set: written after the last rule change and never used to
    /// change a rule, so its figure is the honest one (docs/gate.md: 21 of 24, with 3
    /// of its 12 legitimate stops blocked). The bounds are that measurement, kept as a
    /// floor: a rule change that does worse on unseen wording fails here.
    #[test]
    fn corpus_heldout_agreement() {
        let h = heldout();
        assert!(h.len() >= 20, "{}", h.len());
        let (agreement, blocked, legit) = measure("held-out", &h, 0);
        assert!(agreement >= 0.85, "held-out agreement {agreement:.3} below 85%");
        assert!(blocked * 4 <= legit, "held-out legitimate stops blocked {blocked}/{legit}");
    }

    #[test]
    fn without_durable_evidence_halfway_talk_escalates_and_reasons_allow() {
        let none = ev(vec![], 0);
        for l in corpus() {
            let v = decide(Some(&l.text), &none);
            assert_ne!(v.decision, Decision::Continue, "nothing durable to continue from: {:?}", l.text);
        }
    }

    const DRIFT: &str = "I'll stop here to preserve context and continue in a fresh session.";

    #[test]
    fn every_rule_path() {
        let cases: Vec<(Option<&str>, Evidence, Rule)> = vec![
            (Some(DRIFT), ev(vec![plan(2, false)], 1), Rule::U1DurableArtifactContinuationSafe),
            (Some(DRIFT), ev(vec![plan(2, false)], 0), Rule::U2PlanFileNextStepExplicit),
            (Some(DRIFT), ev(vec![plan(0, false)], 2), Rule::U3RecentCommitProvesIncremental),
            (Some(DRIFT), ev(vec![plan(2, true)], 2), Rule::AmbiguousInsufficientSignal),
            (Some(DRIFT), ev(vec![], 0), Rule::AmbiguousInsufficientSignal),
            (Some("Which approach do you prefer for the cache?"), ev(vec![], 0), Rule::LegitDesignQuestion),
            (Some("Could you provide the staging URL?"), ev(vec![], 0), Rule::LegitMissingInfo),
            (Some("cargo build failed with a linker error: cannot proceed"), ev(vec![], 0), Rule::LegitError),
            (Some("All steps are complete and the tests pass."), ev(vec![plan(2, false)], 1), Rule::LegitCompletion),
            (Some("Paused: the stop hook keeps firing"), ev(vec![plan(2, false)], 1), Rule::MetaSelfReference),
            (Some("Here is a summary of the diff."), ev(vec![], 0), Rule::AmbiguousInsufficientSignal),
            (None, ev(vec![plan(2, false)], 1), Rule::AmbiguousInsufficientSignal),
        ];
        for (reason, evidence, rule) in cases {
            let v = decide(reason, &evidence);
            assert_eq!(v.rule, rule, "{reason:?}");
            validate(&v, &evidence).unwrap_or_else(|f| panic!("{reason:?}: built-in verdict invalid: {f:?}"));
        }
    }
}
