//! The detector contract and the one pipeline that runs it.
//!
//! A [`Detector`] knows one language: its rules as data, how to read one version of a
//! file into an inventory of constraints, and how to compare two inventories. It does
//! not decide what gets parsed or how: [`run`] (called by the engine, and only by the
//! engine) does, once for every language: a panic inside one file's detector becomes
//! that file's error, never the scan's end.
//!
//! Detectors built on tree-sitter implement [`Grammar`] instead and get [`Detector`]
//! from it: [`tree_pair`] is the single place that parses both versions (a fresh parse
//! of the old one, an incremental reparse of the new one that tells which top-level
//! declarations stayed the same, the two side by side on two threads when the file was
//! rewritten) and takes the change window ([`super::window`]) when the detector says
//! the window's inventories stand alone, or else leaves out the function bodies the
//! detector says cannot matter ([`super::elide`]).

use tree_sitter::{Parser, Tree};

use super::elide;
use super::engine::InventoryCache;
use super::py_marshmallow;
use super::stored;
use super::syntax::{self, Unchanged};
use super::window;
use super::{DetectError, Language, RawFinding, RuleDef, go, go_tags, python, rust, schema, sql, ts, zod};
use super::{go_ozzo, py_attrs, ts_valibot, ts_yup};
use super::{prisma, py_django, py_pydantic, py_sqlalchemy, rust_decl, rust_diesel, ts_class_validator};

/// How a file may be read: what the engine's policy allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parse {
    /// The change window and body elision (off: `PREMERGE_SCAN_WINDOW=0`, every file
    /// parsed whole).
    pub window: bool,
    /// Test modules may be left out of the parse: their findings are not reported
    /// (`scan.include_tests` off). Findings in test code may then be missing from the
    /// detector's answer; none other may change.
    pub skip_tests: bool,
}

impl From<bool> for Parse {
    /// The window on or off, test code read.
    fn from(window: bool) -> Parse {
        Parse { window, skip_tests: false }
    }
}

/// Where the versions of a pair can be found in the inventory store
/// ([`crate::store::inventories`]): the store, and each version's blob id (`None` for a
/// version with no id, read from the working tree).
#[derive(Clone, Copy)]
pub(crate) struct Known<'a> {
    pub store: &'a dyn InventoryCache,
    pub old: Option<&'a str>,
    pub new: Option<&'a str>,
}

/// An inventory's encoding for the store, run when the store writes it.
pub(crate) type Encode = Box<dyn FnOnce() -> Option<Vec<u8>> + Send>;

/// One language's detector.
pub(crate) trait Detector: Sync {
    /// What one version of a file constrains, by symbol.
    type Inventory: Send;

    /// The rules this detector can report.
    fn rules(&self) -> &'static [RuleDef];

    /// Whether a file with no old version can yield a finding. Almost every rule needs
    /// an old constraint to loosen, so the engine does not parse an added file where
    /// this is false.
    fn added_may_fire(&self, _after: &str) -> bool {
        false
    }

    /// One version read whole; `side` is `"old"` or `"new"`, for the error message.
    fn parse(&self, path: &str, src: &str, side: &'static str) -> Result<Self::Inventory, DetectError>;

    /// Both versions' inventories, and whether the new one is a whole version's (one
    /// the store may keep). By default each is read whole and nothing is kept; `parse`
    /// says whether the detector may read only what the change touches, and `known`
    /// where a version read before may be found ([`Grammar`] detectors use both).
    fn pair(
        &self,
        path: &str,
        before: &str,
        after: &str,
        _parse: Parse,
        _known: Option<Known>,
    ) -> Result<(Self::Inventory, Self::Inventory, bool), DetectError> {
        Ok((self.parse(path, before, "old")?, self.parse(path, after, "new")?, false))
    }

    /// How to encode a version's inventory for the store, deferred (the store encodes
    /// on its writer thread, after the scan); `None` for a detector whose inventories
    /// are not stored.
    fn keep(&self, _inventory: Self::Inventory) -> Option<Encode> {
        None
    }

    /// A version of `src` the parser can read where it cannot read `src` itself (syntax
    /// newer than the grammar, blanked byte for byte so that lines and offsets stay);
    /// `None` when there is nothing to repair. Tried only after a parse failed.
    fn repair(&self, _src: &str) -> Option<String> {
        None
    }

    /// Each constraint of `old` that `new` loosens or removes. A format whose versions
    /// are only understood together (SQL templates) may still refuse here.
    fn compare(&self, path: &str, old: &Self::Inventory, new: &Self::Inventory)
    -> Result<Vec<RawFinding>, DetectError>;
}

/// A detector built on a tree-sitter grammar: it builds an inventory from a tree, and
/// [`tree_pair`] does the parsing.
pub(crate) trait Grammar: Sync {
    /// Stored by blob id ([`stored`]) when built from a whole version.
    type Inventory: Send + serde::Serialize + serde::de::DeserializeOwned + 'static;

    /// The rules this detector can report.
    fn rules(&self) -> &'static [RuleDef];

    /// As [`Detector::added_may_fire`].
    fn added_may_fire(&self, _after: &str) -> bool {
        false
    }

    /// As [`Detector::compare`]; a tree-sitter detector's comparison never refuses.
    fn compare(&self, old: &Self::Inventory, new: &Self::Inventory) -> Vec<RawFinding>;

    /// The grammar for a path (TypeScript, TSX and JavaScript differ).
    fn grammar(&self, path: &str) -> tree_sitter::Language;

    /// The tree, or why it cannot be used (a tree with syntax errors is refused, so a
    /// half-parsed file never yields findings built on a guess).
    fn refuse(&self, tree: Option<Tree>, path: &str, side: &'static str) -> Result<Tree, DetectError> {
        syntax::refuse(tree, side, path)
    }

    /// The inventory of a whole tree (or of the window's part of one).
    fn build(&self, tree: &Tree, src: &str) -> Self::Inventory;

    /// Both inventories after an incremental reparse: by default each tree is walked
    /// whole; detectors that can take an unchanged declaration's part from the new
    /// version instead of walking it again override this.
    fn build_pair(
        &self,
        old: &Tree,
        before: &str,
        new: &Tree,
        after: &str,
        _unchanged: &Unchanged,
    ) -> (Self::Inventory, Self::Inventory) {
        (self.build(old, before), self.build(new, after))
    }

    /// As [`Detector::repair`].
    fn repair(&self, _src: &str) -> Option<String> {
        None
    }

    /// The lexer that finds the change window in this path, if the detector has one.
    fn window(&self, _path: &str) -> Option<window::Lexer> {
        None
    }

    /// How the function bodies a parse may leave out are found ([`super::elide`]);
    /// `None` when the detector reads every body.
    fn elide(&self, _path: &str) -> Option<elide::Elision> {
        None
    }

    /// Whether `block` (the node of a `{` left out by [`elide`], under `parent`) is what
    /// the lexer took it for: a function's body or a test module's block. Checked for
    /// every block left out, so that a lexer's mistake means a whole parse, never a
    /// wrong inventory.
    fn left_out_block(&self, _block: tree_sitter::Node, _parent: Option<tree_sitter::Node>) -> bool {
        false
    }

    /// Of the `texts` left out of inventories (bodies the same in both versions, test
    /// modules with `skip_tests`), those that could make the comparison differ from
    /// the whole files' (outside test code, with `skip_tests`); by default all.
    fn shared_conflicts<'t>(
        &self,
        _old: &Self::Inventory,
        _new: &Self::Inventory,
        _skip_tests: bool,
        texts: &[&'t str],
    ) -> Vec<&'t str> {
        texts.to_vec()
    }

    /// Whether the window's inventories compare exactly as the whole files' would,
    /// given the text outside the window (the same in both versions).
    fn stands_alone(&self, _old: &Self::Inventory, _new: &Self::Inventory, _outside: &window::Outside) -> bool {
        false
    }
}

/// `f` with this thread's parser for `lang` ([`syntax::with_parser`]).
fn parsing<R>(
    lang: &tree_sitter::Language,
    path: &str,
    f: impl FnOnce(&mut Parser) -> Result<R, DetectError>,
) -> Result<R, DetectError> {
    syntax::with_parser(lang, f).unwrap_or_else(|| Err(DetectError(format!("{path}: cannot load the grammar"))))
}

/// One version parsed from scratch and refused if it has errors.
pub(in crate::widen) fn tree_of<G: Grammar>(
    g: &G,
    path: &str,
    src: &str,
    side: &'static str,
) -> Result<Tree, DetectError> {
    parsing(&g.grammar(path), path, |parser| g.refuse(parser.parse(src, None), path, side))
}

/// Both versions' inventories for a [`Grammar`] detector; see the module comment.
pub(in crate::widen) fn tree_pair<G: Grammar>(
    g: &G,
    path: &str,
    before: &str,
    after: &str,
    parse: Parse,
    known: Option<Known>,
) -> Result<(G::Inventory, G::Inventory, bool), DetectError> {
    if parse.window
        && !before.is_empty()
        && let Some(lexer) = g.window(path)
        && let Some((old, new)) = windowed(g, lexer, path, before, after)
    {
        return Ok((old, new, false));
    }
    // The inventory store ([`stored`]), never with the reference parse
    // (`PREMERGE_SCAN_WINDOW=0`): the old version's inventory is taken from it when a
    // scan before stored it. The answer says whether the new version was read whole,
    // for the caller to store it (a new version is the next change's old one; the
    // window's and the shared bodies' partial inventories are not stored).
    let known = known.filter(|_| parse.window && !before.is_empty());
    let stored_old: Option<G::Inventory> =
        known.and_then(|k| stored::decode(&k.store.get(&stored::kind(path), k.old?)?));
    let e = g.elide(path).filter(|_| parse.window && !before.is_empty());
    if let Some(old) = stored_old {
        // The old version read before: the new one alone, unless leaving out the
        // bodies both versions share keeps less of the two than the new one's whole
        // inventory needs (that elision's first try is then not made again).
        let alone = e.as_ref().and_then(|e| elide::whole(e, after));
        let kept_alone = after.len() - alone.as_ref().map_or(0, elide::Elided::bytes);
        if let Some(e) = &e
            && let Some(first) = elide::find(e, before, after, Some(&Default::default()), parse.skip_tests)
            && before.len() + after.len() - first.0.bytes() - first.1.bytes() < kept_alone
            && let Some(pair) = elided(g, e, path, before, after, parse.skip_tests, Some(first))
        {
            return Ok(pair);
        }
        return Ok((old, version(g, path, after, "new", alone)?, true));
    }
    if let Some(e) = &e
        && let Some(pair) = elided(g, e, path, before, after, parse.skip_tests, None)
    {
        return Ok(pair);
    }
    let (old, new) = if syntax::rewritten(before, after) {
        side_by_side(g, path, before, after)
    } else {
        incremental(g, path, before, after)
    }?;
    Ok((old, new, known.is_some()))
}

/// One version's whole inventory, as the store keeps it: parsed with its trigger-free
/// bodies and comments left out (`alone`, [`elide::whole`]) where
/// the tree shows them to be bodies (the walk skips such a body, so its inventory is
/// the whole version's: `an_inventory_is_the_same_without_its_trigger_free_bodies`
/// checks it on every fixture), else parsed whole.
fn version<G: Grammar>(
    g: &G,
    path: &str,
    src: &str,
    side: &'static str,
    alone: Option<elide::Elided>,
) -> Result<G::Inventory, DetectError> {
    let whole = 0..src.len();
    match alone.and_then(|left| leaving_out(g, &g.grammar(path), src, std::slice::from_ref(&whole), &left)) {
        Some(tree) => Ok(g.build(&tree, src)),
        None => tree_of(g, path, src, side).map(|tree| g.build(&tree, src)),
    }
}

/// `ranges` of `src` parsed with what `left` leaves out of them (bodies, test modules,
/// comments); `None` when it leaves nothing out, the parse fails, or the tree does not
/// show the texts left out to be bodies ([`blocks_are_bodies`]).
fn leaving_out<G: Grammar>(
    g: &G,
    lang: &tree_sitter::Language,
    src: &str,
    ranges: &[std::ops::Range<usize>],
    left: &elide::Elided,
) -> Option<Tree> {
    if left.inside.is_empty() && left.comments.is_empty() {
        return None;
    }
    let tree = window::parse_ranges(lang, src, &left.kept_within(ranges))?;
    blocks_are_bodies(g, &tree, left).then_some(tree)
}

/// `src` parsed for a pass that reads no function body (the Rust declared constraints,
/// [`rust_decl`]): every function body's inside left out of the parse where the tree
/// shows the texts left out to be bodies ([`blocks_are_bodies`]), else parsed whole;
/// `None` when it does not parse cleanly. Comments stay (such a pass may read them as
/// items). With the window off (`PREMERGE_SCAN_WINDOW=0`, the reference parse) always
/// whole. A pass beside the detector parsed each version whole; most of a source file
/// is bodies (jj `HEAD~300`: 11.6% of the scan's CPU was that parse, issue 30 part 5).
pub(in crate::widen) fn without_bodies<G: Grammar>(g: &G, path: &str, src: &str, window: bool) -> Option<Tree> {
    let lang = g.grammar(path);
    if window && let Some(e) = g.elide(path) {
        // Every body, whatever it holds: the pass never reads one.
        let every = elide::Elision { triggers: |_| false, ..e };
        if let Some(left) = elide::whole(&every, src).map(|left| elide::Elided { comments: Vec::new(), ..left })
            && let Some(tree) = leaving_out(g, &lang, src, std::slice::from_ref(&(0..src.len())), &left)
        {
            return Some(tree);
        }
    }
    let tree = syntax::with_parser(&lang, |p| p.parse(src, None)).flatten()?;
    (!tree.root_node().has_error()).then_some(tree)
}

/// Both inventories, each version parsed and walked whole on its own thread: for a
/// rewritten file, where an incremental parse would reuse little.
pub(in crate::widen) fn side_by_side<G: Grammar>(
    g: &G,
    path: &str,
    before: &str,
    after: &str,
) -> Result<(G::Inventory, G::Inventory), DetectError> {
    syntax::side_by_side(before, after, |src, side| tree_of(g, path, src, side).map(|tree| g.build(&tree, src)))
}

/// Both inventories, the new version parsed incrementally from the old tree (the
/// unchanged declarations walked once where the detector can).
pub(in crate::widen) fn incremental<G: Grammar>(
    g: &G,
    path: &str,
    before: &str,
    after: &str,
) -> Result<(G::Inventory, G::Inventory), DetectError> {
    let (old, new, unchanged) = parsing(&g.grammar(path), path, |parser| {
        let old = g.refuse(parser.parse(before, None), path, "old")?;
        let (new, unchanged) = syntax::reparse_tracking(parser, &old, before, after).unzip();
        let new = g.refuse(new, path, "new")?;
        Ok((old, new, unchanged.expect("a new tree comes with what it left unchanged")))
    })?;
    Ok(g.build_pair(&old, before, &new, after, &unchanged))
}

/// The inventories of the declarations the edit touches alone, when they stand alone.
pub(in crate::widen) fn windowed<G: Grammar>(
    g: &G,
    lexer: window::Lexer,
    path: &str,
    before: &str,
    after: &str,
) -> Option<(G::Inventory, G::Inventory)> {
    let w = window::find(lexer, before, after)?;
    let outside = window::Outside::of(before, &w);
    let lang = g.grammar(path);
    // The window's declarations, without their trigger-free bodies and comments
    // where the detector has a body lexer (and the tree shows them to be bodies).
    let parse = |src: &str, ranges: &[std::ops::Range<usize>]| -> Option<Tree> {
        (g.elide(path).and_then(|e| elide::within(&e, src, ranges)))
            .and_then(|left| leaving_out(g, &lang, src, ranges, &left))
            .or_else(|| window::parse_ranges(&lang, src, ranges))
    };
    let old = g.build(&parse(before, &w.old)?, before);
    // What the old version's window alone already meets outside refuses the window
    // (the test asks of both inventories together): no need to parse the new one.
    if !g.stands_alone(&old, &old, &outside) {
        return None;
    }
    let new = g.build(&parse(after, &w.new)?, after);
    g.stands_alone(&old, &new, &outside).then_some((old, new))
}

/// Both inventories, each version parsed with the function bodies [`elide::find`]
/// leaves out (and its test modules, with `skip_tests`). First with the bodies both
/// versions share left out too; a shared body or test module the detector says could
/// matter ([`Grammar::shared_conflicts`]) is then parsed after all, in one more try; last,
/// the trigger-free bodies (and test modules) alone. `None` (parse whole) when little
/// would be left out or a version does not parse so. With the inventories, whether
/// the new one is a whole version's (it left out no shared body and no test module: a
/// version that leaves out only trigger-free bodies is whole, see `version`). `first`:
/// the first try's bodies (shared ones included), when the caller already found them.
pub(in crate::widen) fn elided<G: Grammar>(
    g: &G,
    e: &elide::Elision,
    path: &str,
    before: &str,
    after: &str,
    skip_tests: bool,
    mut first: Option<(elide::Elided, elide::Elided)>,
) -> Option<(G::Inventory, G::Inventory, bool)> {
    let lang = g.grammar(path);
    let build = |src: &str, elided: &elide::Elided| -> Option<G::Inventory> {
        let tree = leaving_out(g, &lang, src, std::slice::from_ref(&(0..src.len())), elided)?;
        Some(g.build(&tree, src))
    };
    let mut refused = std::collections::BTreeSet::new();
    for attempt in 0..3 {
        let share = match attempt {
            0 => Some(&refused),
            1 if !refused.is_empty() => Some(&refused),
            1 => continue,
            _ => None,
        };
        let found = match first.take() {
            Some(found) => Some(found),
            None => elide::find(e, before, after, share, skip_tests),
        };
        let Some((o, n)) = found else { continue };
        let (old, new) = rayon::join(|| build(before, &o), || build(after, &n));
        let (old, new) = (old?, new?);
        let tests = (o.tests.iter().map(|r| &before[r.clone()])).chain(n.tests.iter().map(|r| &after[r.clone()]));
        let left_out: Vec<&str> = (o.shared.iter().map(|r| &before[r.clone()])).chain(tests).collect();
        let matter = g.shared_conflicts(&old, &new, skip_tests, &left_out);
        if matter.is_empty() {
            return Some((old, new, n.shared.is_empty() && n.tests.is_empty()));
        }
        refused.extend(matter);
    }
    None
}

/// Whether the `{` before each text left out opens a block the detector expects
/// ([`Grammar::left_out_block`]): one walk of the tree, into the nodes that hold one.
fn blocks_are_bodies<G: Grammar>(g: &G, tree: &Tree, elided: &elide::Elided) -> bool {
    let mut cursor = tree.walk();
    // The nodes the cursor went down from, so that a `{`'s block and the block's parent
    // are at hand (`Node::parent` searches from the root each time).
    let mut above: Vec<tree_sitter::Node> = Vec::new();
    elided.inside.iter().all(|r| {
        let at = r.start - 1;
        // Forward (on to later siblings, up when there is none) to a node that holds
        // `at`: the braces are in order, so the walk never goes back.
        loop {
            let node = cursor.node();
            if node.end_byte() > at {
                if node.start_byte() > at {
                    return false;
                }
                break;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return false;
                }
                above.pop();
            }
        }
        // Down to the token at `at`, straight to the child that holds it.
        loop {
            let node = cursor.node();
            if node.start_byte() == at && node.end_byte() == at + 1 && !node.is_named() {
                return match above.as_slice() {
                    [.., parent, block] => g.left_out_block(*block, Some(*parent)),
                    [block] => g.left_out_block(*block, None),
                    [] => false,
                };
            }
            if cursor.goto_first_child_for_byte(at).is_none() {
                return false;
            }
            above.push(node);
        }
    })
}

/// Every [`Grammar`] is a [`Detector`] whose parsing is [`tree_pair`]'s.
impl<G: Grammar> Detector for G {
    type Inventory = <G as Grammar>::Inventory;

    fn rules(&self) -> &'static [RuleDef] {
        Grammar::rules(self)
    }

    fn added_may_fire(&self, after: &str) -> bool {
        Grammar::added_may_fire(self, after)
    }

    fn parse(&self, path: &str, src: &str, side: &'static str) -> Result<Self::Inventory, DetectError> {
        tree_of(self, path, src, side).map(|tree| self.build(&tree, src))
    }

    fn pair(
        &self,
        path: &str,
        before: &str,
        after: &str,
        parse: Parse,
        known: Option<Known>,
    ) -> Result<(Self::Inventory, Self::Inventory, bool), DetectError> {
        tree_pair(self, path, before, after, parse, known)
    }

    fn keep(&self, inventory: Self::Inventory) -> Option<Encode> {
        Some(Box::new(move || stored::encode(&inventory)))
    }

    fn repair(&self, src: &str) -> Option<String> {
        Grammar::repair(self, src)
    }

    fn compare(
        &self,
        _path: &str,
        old: &Self::Inventory,
        new: &Self::Inventory,
    ) -> Result<Vec<RawFinding>, DetectError> {
        Ok(Grammar::compare(self, old, new))
    }
}

/// A format read whole and judged by one function of both texts: SQL migrations
/// ([`sql::detect`], whose two versions are read together because a template's control
/// flow decides whether either is SQL) and JSON Schema and OpenAPI documents
/// ([`schema::detect`], which resolves references across the whole document). No tree,
/// no window; an added file may fire (`ALTER ... DROP NOT NULL` arrives in a new
/// migration).
pub(crate) struct WholeText<F> {
    rules: &'static [RuleDef],
    detect: F,
}

/// The judge of one whole-text format: `(path, before, after)` to findings.
type Judge = fn(&str, &str, &str) -> Result<Vec<RawFinding>, DetectError>;

const SQL: WholeText<Judge> = WholeText { rules: sql::RULES, detect: sql::detect };
const SCHEMA: WholeText<Judge> = WholeText { rules: schema::RULES, detect: schema::detect };
const PRISMA: WholeText<Judge> = WholeText { rules: prisma::RULES, detect: prisma::detect };

impl<F: Fn(&str, &str, &str) -> Result<Vec<RawFinding>, DetectError> + Sync> Detector for WholeText<F> {
    type Inventory = String;
    fn rules(&self) -> &'static [RuleDef] {
        self.rules
    }
    fn added_may_fire(&self, _after: &str) -> bool {
        true
    }
    fn parse(&self, _path: &str, src: &str, _side: &'static str) -> Result<String, DetectError> {
        Ok(src.to_string())
    }
    fn compare(&self, path: &str, old: &String, new: &String) -> Result<Vec<RawFinding>, DetectError> {
        (self.detect)(path, old, new)
    }
}

/// Every detector's rules, in the catalogue's order, with the heading `docs/rules.md`
/// gives them.
pub(crate) fn modules() -> [(&'static str, &'static [RuleDef]); 20] {
    [
        ("Rust", Detector::rules(&rust::RustDetector)),
        ("TypeScript and JavaScript", Detector::rules(&ts::ScriptDetector)),
        ("Python", Detector::rules(&python::PythonDetector)),
        ("Go", Detector::rules(&go::GoDetector)),
        ("SQL", SQL.rules()),
        ("JSON Schema (JSON, YAML, OpenAPI)", SCHEMA.rules()),
        ("TypeScript and JavaScript: zod schemas", zod::RULES),
        ("Go: validation struct tags", go_tags::RULES),
        ("TypeScript and JavaScript: class-validator decorators", ts_class_validator::RULES),
        ("Prisma schemas", PRISMA.rules()),
        ("Rust: serde defaults and validator attributes", rust_decl::RULES),
        ("Python: pydantic models", py_pydantic::RULES),
        ("Python: Django models and migrations", py_django::RULES),
        ("Python: SQLAlchemy models and alembic revisions", py_sqlalchemy::RULES),
        ("Python: marshmallow schemas", py_marshmallow::RULES),
        ("Rust: diesel schema declarations", rust_diesel::RULES),
        ("TypeScript and JavaScript: yup schemas", ts_yup::RULES),
        ("TypeScript and JavaScript: valibot schemas", ts_valibot::RULES),
        ("Go: ozzo-validation rules", go_ozzo::RULES),
        ("Python: attrs validators", py_attrs::RULES),
    ]
}

/// Whether a file with no old version can yield a finding in `lang`.
pub(crate) fn added_may_fire(lang: Language, after: &str) -> bool {
    match lang {
        Language::Rust => Detector::added_may_fire(&rust::RustDetector, after),
        Language::Typescript | Language::Javascript => Detector::added_may_fire(&ts::ScriptDetector, after),
        Language::Python => {
            Detector::added_may_fire(&python::PythonDetector, after)
                || py_django::added_may_fire(after)
                || py_sqlalchemy::added_may_fire(after)
        }
        Language::Go => Detector::added_may_fire(&go::GoDetector, after),
        Language::Sql => SQL.added_may_fire(after),
        Language::JsonSchema => SCHEMA.added_may_fire(after),
        // Every Prisma rule loosens a declaration the old version held.
        Language::Prisma => false,
    }
}

/// The findings of one file in `lang`, sorted and deduplicated; a parse failure, or a
/// panic inside the detector, is the file's error.
#[cfg(test)]
pub(crate) fn run(
    lang: Language,
    path: &str,
    before: &str,
    after: &str,
    parse: impl Into<Parse>,
) -> Result<Vec<RawFinding>, DetectError> {
    run_known(lang, path, before, after, parse.into(), None)
}

/// [`run`], with the versions' inventories taken from and kept in the inventory store
/// where `known` names them.
pub(crate) fn run_known(
    lang: Language,
    path: &str,
    before: &str,
    after: &str,
    parse: Parse,
    known: Option<Known>,
) -> Result<Vec<RawFinding>, DetectError> {
    caught(lang, path, || match lang {
        Language::Rust => {
            let found = run_with(&rust::RustDetector, path, before, after, parse, known)?;
            let found = also(
                found,
                rust_decl::may_hold(before, after).then(|| rust_decl::detect_with(before, after, parse.window)),
            )?;
            also(found, rust_diesel::may_hold(before, after).then(|| rust_diesel::detect(before, after)))
        }
        Language::Typescript | Language::Javascript => {
            let found = run_with(&ts::ScriptDetector, path, before, after, parse, known)?;
            // Declared constraints: a pass of their own, only where a file mentions them.
            let found =
                also(found, zod::may_hold(before, after).then(|| zod::detect_with(path, before, after, parse.window)))?;
            let cv = ts_class_validator::may_hold(before, after);
            let found = also(found, cv.then(|| ts_class_validator::detect(path, before, after)))?;
            let found = also(found, ts_yup::may_hold(before, after).then(|| ts_yup::detect(path, before, after)))?;
            also(found, ts_valibot::may_hold(before, after).then(|| ts_valibot::detect(path, before, after)))
        }
        Language::Python => {
            let found = run_with(&python::PythonDetector, path, before, after, parse, known)?;
            let found = also(found, py_pydantic::may_hold(before, after).then(|| py_pydantic::detect(before, after)))?;
            let found = also(found, py_django::may_hold(before, after).then(|| py_django::detect(before, after)))?;
            let found =
                also(found, py_marshmallow::may_hold(before, after).then(|| py_marshmallow::detect(before, after)))?;
            let found = also(found, py_attrs::may_hold(before, after).then(|| py_attrs::detect(before, after)))?;
            also(
                found,
                py_sqlalchemy::may_hold(path, before, after).then(|| py_sqlalchemy::detect(path, before, after)),
            )
        }
        Language::Go => {
            let found = run_with(&go::GoDetector, path, before, after, parse, known)?;
            let found = also(found, go_tags::may_hold(before, after).then(|| go_tags::detect(before, after)))?;
            also(found, go_ozzo::may_hold(before, after).then(|| go_ozzo::detect(before, after)))
        }
        Language::Sql => run_with(&SQL, path, before, after, parse, None),
        Language::JsonSchema => run_with(&SCHEMA, path, before, after, parse, None),
        Language::Prisma => run_with(&PRISMA, path, before, after, parse, None),
    })
}

/// [`run_known`] for a Python file that is a Django migration, its `AlterField`s and
/// the like judged against the app's earlier migrations (`py_django::detect_after`).
pub(crate) fn run_python_after(
    path: &str,
    before: &str,
    after: &str,
    parse: Parse,
    known: Option<Known>,
    earlier: &[&str],
) -> Result<Vec<RawFinding>, DetectError> {
    caught(Language::Python, path, || {
        let found = run_with(&python::PythonDetector, path, before, after, parse, known)?;
        let found = also(found, py_pydantic::may_hold(before, after).then(|| py_pydantic::detect(before, after)))?;
        let django = py_django::may_hold(before, after).then(|| py_django::detect_after(before, after, earlier));
        let found = also(found, django)?;
        let found =
            also(found, py_marshmallow::may_hold(before, after).then(|| py_marshmallow::detect(before, after)))?;
        also(found, py_sqlalchemy::may_hold(path, before, after).then(|| py_sqlalchemy::detect(path, before, after)))
    })
}

/// A language's findings with those of a declared-constraint pass (`None`: the pass's
/// prefilter found nothing to read), sorted and deduplicated as one answer.
fn also(
    mut found: Vec<RawFinding>,
    more: Option<Result<Vec<RawFinding>, DetectError>>,
) -> Result<Vec<RawFinding>, DetectError> {
    if let Some(more) = more {
        found.extend(more?);
        return Ok(syntax::finish(found));
    }
    Ok(found)
}

/// `detect`, with a panic inside it turned into the file's error.
fn caught(
    lang: Language,
    path: &str,
    detect: impl FnOnce() -> Result<Vec<RawFinding>, DetectError>,
) -> Result<Vec<RawFinding>, DetectError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(detect)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        Err(DetectError(format!("{path}: the {} detector failed on this file: {why}", lang.as_str())))
    })
}

/// [`run`] for a SQL migration judged after the earlier migrations of its sequence
/// (`sql::detect_after`), with the same per-file panic guard.
pub(crate) fn run_sql_after(
    path: &str,
    before: &str,
    after: &str,
    earlier: &[&str],
) -> Result<Vec<RawFinding>, DetectError> {
    let d = WholeText { rules: sql::RULES, detect: |p: &str, b: &str, a: &str| sql::detect_after(p, b, a, earlier) };
    caught(Language::Sql, path, || run_with(&d, path, before, after, Parse::from(false), None))
}

fn run_with<D: Detector>(
    d: &D,
    path: &str,
    before: &str,
    after: &str,
    parse: Parse,
    known: Option<Known>,
) -> Result<Vec<RawFinding>, DetectError> {
    let (old, new, whole) = match d.pair(path, before, after, parse, known) {
        Ok(pair) => pair,
        Err(e) => {
            // Syntax the grammar does not know yet: read the repaired texts, or report
            // the first error.
            let (b, a) = (d.repair(before), d.repair(after));
            if b.is_none() && a.is_none() {
                return Err(e);
            }
            let (b, a) = (b.as_deref().unwrap_or(before), a.as_deref().unwrap_or(after));
            // A repaired text is not the blob the store would name: not stored.
            let (old, new, _) = d.pair(path, b, a, parse, None).map_err(|_| e)?;
            (old, new, false)
        }
    };
    let found = syntax::finish(d.compare(path, &old, &new)?);
    if whole
        && let Some(k) = known
        && let Some(oid) = k.new
        && let Some(encode) = d.keep(new)
    {
        k.store.put(&stored::kind(path), oid, path, encode);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A detector that panics on one file gives that file an error naming the file,
    /// the detector and the panic; the caller (the engine) notes it and goes on.
    #[test]
    fn a_panic_is_the_files_error() {
        let cut = String::from("é");
        let boom = || -> Result<Vec<RawFinding>, DetectError> {
            Ok(vec![RawFinding {
                line: 1,
                rule: crate::widen::RuleId::RustIntegerWidened,
                symbol: cut[1..].to_string(),
                before: String::new(),
                after: String::new(),
                in_test: false,
            }])
        };
        let err = caught(Language::Rust, "src/a.rs", boom).unwrap_err();
        assert!(err.0.starts_with("src/a.rs: the rust detector failed on this file: "), "{err}");
        assert!(err.0.contains("char boundary"), "{err}");
        assert_eq!(caught(Language::Go, "a.go", || Ok(Vec::new())), Ok(Vec::new()));
    }

    /// Every fixture text of `g`'s language, read as the store keeps a version
    /// ([`version`]) and read whole: the same inventory, byte for byte once encoded; and
    /// the encoding reads back to the same inventory. Returns how many texts had
    /// trigger-free bodies left out.
    fn stored_as_whole<G: Grammar>(g: &G, prefix: &str, exts: &[&str]) -> usize {
        let mut left_out = 0;
        let mut texts = 0;
        for (ext, before, after) in crate::widen::testing::pairs(prefix, exts) {
            let path = format!("src/fixture.{ext}");
            for text in [before, after].iter().filter(|t| !t.is_empty()) {
                let Ok(tree) = tree_of(g, &path, text, "new") else { continue };
                let whole = stored::encode(&g.build(&tree, text)).expect("an inventory encodes");
                let alone = g.elide(&path).and_then(|e| elide::whole(&e, text));
                left_out += usize::from(alone.as_ref().is_some_and(|a| !a.inside.is_empty()));
                let kept = stored::encode(&version(g, &path, text, "new", alone).unwrap()).unwrap();
                assert_eq!(kept, whole, "{path}: the stored inventory differs from the whole one:\n{text}");
                let back: G::Inventory = stored::decode(&whole).expect("an encoded inventory decodes");
                assert_eq!(stored::encode(&back).unwrap(), whole, "{path}: a round trip changed the inventory");
                texts += 1;
            }
        }
        assert!(texts > 20, "{prefix}: fixture texts read: {texts}");
        left_out
    }

    /// The premise of the inventory store: a version's inventory is the same whether
    /// its trigger-free bodies were parsed or not, and survives being stored.
    #[test]
    fn an_inventory_is_the_same_without_its_trigger_free_bodies() {
        let rust = stored_as_whole(&rust::RustDetector, "rust-", &["rs"]);
        let ts = stored_as_whole(&ts::ScriptDetector, "ts-", &["ts", "tsx", "js", "mjs", "cjs", "jsx", "mts", "cts"]);
        assert!(rust > 10 && ts > 3, "texts with bodies left out: rust {rust}, ts {ts}");
        stored_as_whole(&python::PythonDetector, "py-", &["py", "pyi"]);
        stored_as_whole(&go::GoDetector, "go-", &["go"]);
    }

    /// An inventory store in memory, counting what it was asked.
    #[derive(Default)]
    struct Mem {
        rows: std::sync::Mutex<std::collections::BTreeMap<(String, String), Vec<u8>>>,
        gets: std::sync::atomic::AtomicUsize,
        hits: std::sync::atomic::AtomicUsize,
    }

    impl InventoryCache for Mem {
        fn get(&self, kind: &str, oid: &str) -> Option<Vec<u8>> {
            use std::sync::atomic::Ordering::Relaxed;
            self.gets.fetch_add(1, Relaxed);
            let found = self.rows.lock().unwrap().get(&(kind.to_string(), oid.to_string())).cloned();
            self.hits.fetch_add(usize::from(found.is_some()), Relaxed);
            found
        }
        fn put(&self, kind: &str, oid: &str, _path: &str, encode: Encode) {
            if let Some(body) = encode() {
                self.rows.lock().unwrap().insert((kind.to_string(), oid.to_string()), body);
            }
        }
    }

    /// Three versions of a Rust file whose changes the window cannot take alone (a
    /// check reworded to the text of one that stands outside the change, in `h`), each
    /// widening a parameter; long enough for bodies to be left out.
    fn three_versions() -> [String; 3] {
        let filler: String =
            (0..40).map(|i| format!("pub fn plain{i}(v: &[u8]) -> usize {{\n    v.len() + {i}\n}}\n\n")).collect();
        let version = |f: &str, g: &str| {
            format!("{filler}{f}\n\n{g}\n\npub fn h(n: u8) -> u8 {{\n    assert!(n < 100);\n    n + 2\n}}\n")
        };
        [
            version(
                "pub fn f(n: u8) -> u8 {\n    assert!(n > 0);\n    n\n}",
                "pub fn g(n: u8) -> u8 {\n    assert!(n > 0);\n    n + 1\n}",
            ),
            version(
                "pub fn f(n: u16) -> u16 {\n    assert!(n < 100);\n    n\n}",
                "pub fn g(n: u8) -> u8 {\n    assert!(n > 0);\n    n + 1\n}",
            ),
            version(
                "pub fn f(n: u16) -> u16 {\n    assert!(n < 100);\n    n\n}",
                "pub fn g(n: u32) -> u32 {\n    assert!(n < 100);\n    n + 1\n}",
            ),
        ]
    }

    /// A pair whose old version is in the store is compared against the stored
    /// inventory (the old text is not read for it) and gives the whole files'
    /// findings; the new version is stored in turn, so the next change finds it.
    #[test]
    fn a_stored_old_version_serves_the_next_pair() {
        use std::sync::atomic::Ordering::Relaxed;
        let g = rust::RustDetector;
        let [a, b, c] = three_versions();
        let path = "src/query.rs";
        let parse = Parse { window: true, skip_tests: false };
        let whole = |x: &str, y: &str| run(Language::Rust, path, x, y, false).unwrap();
        let scan = |x: &str, y: &str, known| run_known(Language::Rust, path, x, y, parse, known).unwrap();
        let key = |oid: &str| ("rust.rs".to_string(), oid.to_string());
        for (x, y) in [(&a, &b), (&b, &c)] {
            let lexer = Grammar::window(&g, path).unwrap();
            assert!(windowed(&g, lexer, path, x, y).is_none(), "the window must refuse these changes");
        }
        // `a` stored as a scan would have stored it.
        let mem = Mem::default();
        let alone = elide::whole(&Grammar::elide(&g, path).unwrap(), &a);
        let a_inv = version(&g, path, &a, "old", alone).unwrap();
        mem.put("rust.rs", "a", path, Box::new(move || stored::encode(&a_inv)));
        let known = |old, new| Some(Known { store: &mem, old: Some(old), new: Some(new) });

        let first = scan(&a, &b, known("a", "b"));
        assert_eq!(mem.hits.load(Relaxed), 1, "the old version was found");
        assert_eq!(first, whole(&a, &b));
        assert!(first.iter().any(|f| f.rule == crate::widen::RuleId::RustIntegerWidened), "{first:?}");
        assert!(mem.rows.lock().unwrap().contains_key(&key("b")), "the new version is stored in turn");

        let second = scan(&b, &c, known("b", "c"));
        assert_eq!(mem.hits.load(Relaxed), 2);
        assert_eq!(second, whole(&b, &c));
        assert!(mem.rows.lock().unwrap().contains_key(&key("c")));

        // The stored inventory is what the comparison used: `a`'s inventory stored
        // under `b`'s id makes the pair report what `a` to `c` loosens.
        let a_inv = mem.rows.lock().unwrap()[&key("a")].clone();
        mem.rows.lock().unwrap().insert(key("b"), a_inv);
        let poisoned = scan(&b, &c, known("b", "c"));
        assert_eq!(poisoned, whole(&a, &c));
        assert_ne!(poisoned, second);

        // A damaged row is a miss: the old text is read again.
        mem.rows.lock().unwrap().insert(key("b"), b"garbage".to_vec());
        assert_eq!(scan(&b, &c, known("b", "c")), second);

        // With the window off (the reference parse) the store is neither read nor written.
        let mem = Mem::default();
        let off = Parse { window: false, skip_tests: false };
        let known = Some(Known { store: &mem, old: Some("a"), new: Some("b") });
        assert_eq!(run_known(Language::Rust, path, &a, &b, off, known).unwrap(), whole(&a, &b));
        assert_eq!(mem.gets.load(Relaxed), 0);
        assert!(mem.rows.lock().unwrap().is_empty());
    }

    /// Damaged or foreign bytes never read as an inventory.
    #[test]
    fn a_damaged_stored_inventory_is_a_miss() {
        let src = "pub struct S { pub a: u8 }\nfn f(x: u8) { assert!(x > 1); }\n";
        let g = rust::RustDetector;
        let inv = g.build(&tree_of(&g, "a.rs", src, "new").unwrap(), src);
        let good = stored::encode(&inv).unwrap();
        assert!(stored::decode::<<rust::RustDetector as Grammar>::Inventory>(&good).is_some());
        for i in [0, 3, 8, good.len() / 2, good.len() - 1] {
            let mut bad = good.clone();
            bad[i] ^= 0x20;
            assert!(stored::decode::<<rust::RustDetector as Grammar>::Inventory>(&bad).is_none(), "byte {i} flipped");
        }
        for bad in [&good[..good.len() - 1], &good[..4], &[][..]] {
            assert!(stored::decode::<<rust::RustDetector as Grammar>::Inventory>(bad).is_none());
        }
        // Bytes after a whole inventory, or another detector's inventory (sound bytes,
        // checksum and all, of another shape).
        let mut extra = good.clone();
        extra.extend_from_slice(b"x");
        assert!(stored::decode::<<rust::RustDetector as Grammar>::Inventory>(&extra).is_none());
        let ts_src = "export interface User { id?: string; kind: 'a' | 'b' }\nexport function f(x: number) { if (x < 0) { throw new Error('x'); } }\n";
        let t = ts::ScriptDetector;
        let foreign = stored::encode(&t.build(&tree_of(&t, "a.ts", ts_src, "new").unwrap(), ts_src)).unwrap();
        assert!(stored::decode::<<rust::RustDetector as Grammar>::Inventory>(&foreign).is_none());
    }
}
