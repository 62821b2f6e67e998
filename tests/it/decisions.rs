//! The decision code's outputs that callers print or count, pinned through the public
//! API (written to kill the mutants cargo-mutants found surviving the lib tests; see
//! docs/reliability.md).

use std::collections::HashSet;

use premerge::waves::carry::{PathCheck, decide};
use serde_json::json;

#[test]
fn carry_counts_and_summarises_every_dropped_row() {
    let rows = vec![
        json!(3),
        json!({"file": "../x", "from_file": "src/a.rs", "reason": "r"}),
        json!({"file": "src/b.rs", "from_file": "src/a.rs", "reason": "r"}),
        json!({"file": "src/b.rs", "from_file": "src/a.rs", "reason": "again"}),
        json!({"file": "src/owned.rs", "from_file": "src/a.rs", "reason": "r"}),
    ];
    let owned: HashSet<String> = ["src/owned.rs".to_string()].into();
    let out = decide(&rows, &owned, 4, &mut |_| PathCheck::Regular);
    assert_eq!(out.admitted.len(), 1);
    assert_eq!(out.dropped_total(), 4);
    assert_eq!(
        out.summary().as_deref(),
        Some("dropped 4 blocked-on row(s): already_owned=1 duplicate=1 not_object=1 parent_component=1")
    );
    let clean = decide(&rows[2..3], &owned, 4, &mut |_| PathCheck::Regular);
    assert_eq!((clean.dropped_total(), clean.summary()), (0, None), "nothing dropped: no summary line");
}
