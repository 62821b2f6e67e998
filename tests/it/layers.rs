//! Across layers (issue 30 part 3): a field declared in SQL, OpenAPI, zod and a
//! TypeScript interface; a change loosening one layer reports one finding that lists
//! the other layers' sites still holding the old constraint, with a guard memory for
//! each. Real repositories, the real binary.

use serde_json::{Value, json};

use crate::common::TestRepo;

const SQL: &str =
    "CREATE TABLE users (\n  id BIGINT PRIMARY KEY,\n  name VARCHAR(255) NOT NULL,\n  email TEXT NOT NULL\n);\n";

const OPENAPI: &str = "openapi: 3.0.3
info:
  title: users
  version: '1'
paths: {}
components:
  schemas:
    User:
      type: object
      required: [name]
      properties:
        name:
          type: string
          maxLength: 255
";

const TS: &str = "export interface User {\n  id: number;\n  name: string;\n}\n";

fn zod(max: u32) -> String {
    format!(
        "import {{ z }} from \"zod\";\n\nexport const UserSchema = z.object({{\n  name: z.string().min(1).max({max}),\n  email: z.string().email(),\n}});\n"
    )
}

/// The four layers at base; `change` applied and committed as head.
fn repo(extra: &[(&str, &str)], change: &[(&str, &str)]) -> TestRepo {
    let mut r = TestRepo::new();
    // Linking is opt-in (its cost, docs/scan.md "Across layers"): on for these tests.
    r.env.push(("PREMERGE_SCAN_LAYERS".into(), "1".into()));
    r.write("db/migrations/001_users.sql", SQL);
    r.write("api/openapi.yaml", OPENAPI);
    r.write("web/src/types.ts", TS);
    r.write("web/src/schema.ts", zod(255));
    for (p, t) in extra {
        r.write(p, t);
    }
    r.commit_all("the user, in four layers");
    for (p, t) in change {
        r.write(p, t);
    }
    r.commit_all("change");
    r
}

fn scan(r: &TestRepo, extra: &[&str]) -> Value {
    let mut a = vec!["scan", "--base", "HEAD~1", "--head", "HEAD", "--format", "json"];
    a.extend_from_slice(extra);
    r.premerge(&a).expect_code(0).json()
}

fn findings(v: &Value) -> Vec<Value> {
    v["findings"].as_array().unwrap().clone()
}

#[test]
fn a_raised_zod_bound_is_one_finding_listing_the_column_and_the_property() {
    let r = repo(&[], &[("web/src/schema.ts", &zod(1000))]);
    let v = scan(&r, &["--issue", "30"]);
    let fs = findings(&v);
    assert_eq!(fs.len(), 1, "{v:#}");
    let f = &fs[0];
    assert_eq!((f["rule"].as_str(), f["symbol"].as_str()), (Some("ts-zod-bound-loosened"), Some("UserSchema.name")));
    assert_eq!(
        f["linked"],
        json!([
            {"constraint": "maxLength: 255", "layer": "json-schema", "line": 14, "path": "api/openapi.yaml",
             "symbol": "#/components/schemas/User/properties/name"},
            {"constraint": "name VARCHAR(255) NOT NULL", "layer": "sql", "line": 3,
             "path": "db/migrations/001_users.sql", "symbol": "users.name"}
        ]),
        "the interface states no length: it is not a site of a length bound"
    );
    // One memory for the finding, one for each site.
    assert_eq!(v["memories_written"], 3, "{v:#}");
    let m = r.premerge(&["memory", "search", "--file", "db/migrations/001_users.sql"]).expect_code(0).stdout.clone();
    assert!(m.contains("users.name"), "{m}");
    assert!(m.contains("VARCHAR(255)"), "{m}");
    assert!(m.contains("web/src/schema.ts `UserSchema.name`"), "{m}");
    // Text shows each site; SARIF carries them as related locations.
    let t = r.premerge(&["scan", "--base", "HEAD~1", "--head", "HEAD", "--no-memory"]).expect_code(0).stdout.clone();
    assert!(
        t.contains("    still held at db/migrations/001_users.sql:3 users.name (sql): name VARCHAR(255) NOT NULL\n"),
        "{t}"
    );
    let s = r.premerge(&["scan", "--base", "HEAD~1", "--head", "HEAD", "--no-memory", "--format", "sarif"]);
    let sarif = s.expect_code(0).json();
    let related = &sarif["runs"][0]["results"][0]["relatedLocations"];
    assert_eq!(related.as_array().map(Vec::len), Some(2), "{sarif:#}");
    assert_eq!(related[1]["physicalLocation"]["artifactLocation"]["uri"], "db/migrations/001_users.sql");
    assert_eq!(related[1]["physicalLocation"]["region"]["startLine"], 3);
    let gh = r.premerge(&["scan", "--base", "HEAD~1", "--head", "HEAD", "--no-memory", "--format", "github"]);
    assert!(gh.stdout.contains("other layers still hold the old constraint"), "{}", gh.stdout);
}

#[test]
fn a_column_made_nullable_lists_the_types_that_still_promise_a_value() {
    let migration = "ALTER TABLE users ALTER COLUMN name DROP NOT NULL;\n";
    let r = repo(&[], &[("db/migrations/002_name_optional.sql", migration)]);
    let v = scan(&r, &["--no-memory"]);
    let fs = findings(&v);
    assert_eq!(fs.len(), 1, "{v:#}");
    assert_eq!(fs[0]["rule"], "sql-not-null-dropped");
    let sites: Vec<(&str, &str)> = fs[0]["linked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["path"].as_str().unwrap(), l["layer"].as_str().unwrap()))
        .collect();
    assert_eq!(
        sites,
        [("api/openapi.yaml", "json-schema"), ("web/src/schema.ts", "zod"), ("web/src/types.ts", "ts-type")]
    );
}

#[test]
fn the_same_field_name_on_another_entity_is_no_link() {
    // `Post.name` and `posts.name` are other entities' fields named alike.
    let post = "export interface Post {\n  name: string;\n}\n";
    let r = TestRepo::new();
    r.write("db/migrations/001_users.sql", SQL);
    r.write(
        "db/migrations/002_posts.sql",
        "CREATE TABLE posts (\n  id BIGINT PRIMARY KEY,\n  name VARCHAR(80) NOT NULL\n);\n",
    );
    r.write("web/src/post.ts", post);
    r.commit_all("users and posts");
    r.write("db/migrations/003_users_name.sql", "ALTER TABLE users ALTER COLUMN name DROP NOT NULL;\n");
    r.commit_all("users.name nullable");
    let v = scan(&r, &["--no-memory"]);
    let fs = findings(&v);
    assert_eq!(fs.len(), 1, "{v:#}");
    assert!(fs[0].get("linked").is_none(), "no site may be linked: {v:#}");
}

#[test]
fn two_candidate_entities_link_nothing() {
    // Two `User` interfaces: which one the table feeds cannot be told.
    let r = repo(
        &[("admin/src/types.ts", TS)],
        &[("db/migrations/002_n.sql", "ALTER TABLE users ALTER COLUMN name DROP NOT NULL;\n")],
    );
    let v = scan(&r, &["--no-memory"]);
    let linked: Vec<&str> =
        v["findings"][0]["linked"].as_array().unwrap().iter().map(|l| l["layer"].as_str().unwrap()).collect();
    assert_eq!(linked, ["json-schema", "zod"], "the interface layer is ambiguous and left out: {v:#}");
}

#[test]
fn a_scan_without_a_linkable_finding_reads_no_other_file() {
    // A finding of a rule no layer shares (a Rust assert removed) is reported as
    // before: no `linked` key, no note, and the same bytes as with the layers absent.
    let r = repo(
        &[("src/lib.rs", "pub fn f(n: u8) -> u8 {\n    assert!(n < 10);\n    n\n}\n")],
        &[("src/lib.rs", "pub fn f(n: u8) -> u8 {\n    n\n}\n")],
    );
    let out = r.premerge(&["scan", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", "--no-memory"]);
    out.expect_code(0);
    assert!(!out.stdout.contains("linked"), "{}", out.stdout);
    assert!(!out.stderr.contains("across layers"), "{}", out.stderr);
}

#[test]
fn without_the_switch_no_links_are_made() {
    let mut r = repo(&[], &[("web/src/schema.ts", &zod(1000))]);
    r.env.retain(|(k, _)| k != "PREMERGE_SCAN_LAYERS");
    let v = scan(&r, &["--no-memory"]);
    assert_eq!(findings(&v).len(), 1, "{v:#}");
    assert!(findings(&v)[0].get("linked").is_none(), "{v:#}");
}

#[test]
fn the_kill_switch_leaves_the_links_out() {
    let mut r = repo(&[], &[("web/src/schema.ts", &zod(1000))]);
    r.env.push(("PREMERGE_SCAN_LAYERS".into(), "0".into()));
    let v = scan(&r, &["--no-memory"]);
    assert_eq!(findings(&v).len(), 1, "{v:#}");
    assert!(findings(&v)[0].get("linked").is_none(), "{v:#}");
}

/// The shape found on elie222/inbox-zero `51565fd5`: one file holds a zod schema for a
/// partial settings update (`reminderConfigSchema`) and the TypeScript type the update
/// is resolved into (`ReminderConfig`). The schema's fields go from `.optional()` to
/// `.nullish()`; the type's required `boolean` is listed, its `string | null` fields
/// are not (they promise no value), and neither is the schema's own layer.
#[test]
fn a_zod_field_made_nullish_lists_the_type_it_resolves_into_in_the_same_file() {
    let file = |modifier: &str| {
        format!(
            "import {{ z }} from \"zod\";\n\nconst reminderConfigSchema = z.object({{\n  enabled: z.boolean().{modifier}(),\n  \
             note: z.string().max(400).{modifier}(),\n}});\n\ntype ReminderConfig = {{\n  enabled: boolean;\n  \
             note: string | null;\n}};\n\nexport function merge(c: ReminderConfig) {{\n  return c;\n}}\n"
        )
    };
    let mut r = TestRepo::new();
    r.env.push(("PREMERGE_SCAN_LAYERS".into(), "1".into()));
    r.write("apps/web/utils/settings.ts", file("optional"));
    r.commit_all("optional fields");
    r.write("apps/web/utils/settings.ts", file("nullish"));
    r.commit_all("nullish fields");
    let v = scan(&r, &[]);
    let fs = findings(&v);
    let got: Vec<(&str, &str)> =
        fs.iter().map(|f| (f["rule"].as_str().unwrap(), f["symbol"].as_str().unwrap())).collect();
    assert_eq!(
        got,
        [
            ("ts-zod-optional-added", "reminderConfigSchema.enabled"),
            ("ts-zod-optional-added", "reminderConfigSchema.note")
        ],
        "{v:#}"
    );
    assert_eq!(
        fs[0]["linked"],
        json!([{"constraint": "enabled: boolean", "layer": "ts-type", "line": 9, "path": "apps/web/utils/settings.ts",
                "symbol": "ReminderConfig.enabled"}]),
        "{v:#}"
    );
    assert!(fs[1].get("linked").is_none(), "{v:#}");
}
