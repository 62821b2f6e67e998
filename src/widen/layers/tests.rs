use super::*;
use crate::widen::{Language, Severity};

#[test]
fn names_fold_case_snake_camel_plural_and_role_suffixes() {
    for (name, key) in [
        ("users", "user"),
        ("User", "user"),
        ("UserSchema", "user"),
        ("user_accounts", "useraccount"),
        ("UserAccount", "useraccount"),
        ("UserAccountModel", "useraccount"),
        ("categories", "category"),
        ("addresses", "address"),
        ("Narrow", "narrow"),
        ("Schema", "schema"),
        ("CreateUserRequest", "user"),
        ("SysUserInsertReq", "sysuser"),
        ("sys_user", "sysuser"),
        ("UpdateSysUserStatusReq", "sysuserstatu"),
        ("NewsItem", "newsitem"),
        ("Create", "create"),
        ("UserNew", "user"),
        ("status", "statu"),
        ("Status", "statu"),
    ] {
        assert_eq!(entity_key(name), key, "{name}");
    }
    for (name, key) in [("created_at", "createdat"), ("createdAt", "createdat"), ("CreatedAt", "createdat")] {
        assert_eq!(field_key(name), key, "{name}");
    }
}

fn finding(rule: &str, file: &str, symbol: &str) -> Finding {
    Finding {
        after: String::new(),
        before: String::new(),
        file: file.into(),
        language: Language::for_path(file).unwrap_or(Language::Typescript),
        line: 1,
        linked: Vec::new(),
        message: String::new(),
        rule: rule.into(),
        severity: Severity::Medium,
        symbol: symbol.into(),
    }
}

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
}

const SQL: &str =
    "CREATE TABLE users (\n  id BIGINT PRIMARY KEY,\n  name VARCHAR(255) NOT NULL,\n  role TEXT NOT NULL\n);\n";
const ZOD: &str = "import { z } from \"zod\";\nexport const UserSchema = z.object({\n  name: z.string().max(1000),\n  role: z.enum([\"admin\", \"member\", \"guest\"]),\n});\n";
const OPENAPI: &str = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n    User:\n      type: object\n      required: [name, role]\n      properties:\n        name:\n          type: string\n          maxLength: 255\n        role:\n          type: string\n          enum: [admin, member]\n";
const TS: &str = "export interface User {\n  name: string;\n  role: 'admin' | 'member';\n  nick?: string;\n}\n";

#[test]
fn a_raised_zod_bound_links_the_column_and_the_property_still_at_the_old_one() {
    let index = Index::build(&files(&[
        ("api/openapi.yaml", OPENAPI),
        ("migrations/001_users.sql", SQL),
        ("src/schema.ts", ZOD),
        ("src/types.ts", TS),
    ]));
    let sites = index.sites(&finding("ts-zod-bound-loosened", "src/schema.ts", "UserSchema.name"));
    let got: Vec<(&str, u32, &str, Layer, &str)> =
        sites.iter().map(|l| (l.path.as_str(), l.line, l.symbol.as_str(), l.layer, l.constraint.as_str())).collect();
    assert_eq!(
        got,
        [
            ("api/openapi.yaml", 12, "#/components/schemas/User/properties/name", Layer::JsonSchema, "maxLength: 255"),
            ("migrations/001_users.sql", 3, "users.name", Layer::Sql, "name VARCHAR(255) NOT NULL"),
        ]
    );
    // The enum gained `guest`: the property's set and the interface's union still refuse it.
    let sites = index.sites(&finding("ts-zod-enum-widened", "src/schema.ts", "UserSchema.role"));
    let layers: Vec<Layer> = sites.iter().map(|l| l.layer).collect();
    assert_eq!(layers, [Layer::JsonSchema, Layer::TsType], "{sites:?}");
}

#[test]
fn a_column_made_nullable_links_the_types_that_still_promise_a_value() {
    let sql_after = "CREATE TABLE users (\n  id BIGINT PRIMARY KEY,\n  name VARCHAR(255) NOT NULL,\n  role TEXT NOT NULL\n);\nALTER TABLE users ALTER COLUMN name DROP NOT NULL;\n";
    let go = "package m\n\ntype UserModel struct {\n\tName string `json:\"name\" binding:\"required,max=255\"`\n\tBio *string\n}\n";

    let rs = "pub struct User {\n    pub name: String,\n    pub bio: Option<String>,\n}\n";
    let index = Index::build(&files(&[
        ("migrations/001_users.sql", sql_after),
        ("models/user.go", go),
        ("src/user.rs", rs),
        ("src/types.ts", TS),
    ]));
    let sites = index.sites(&finding("sql-not-null-dropped", "migrations/001_users.sql", "users.name"));
    let layers: Vec<(Layer, &str)> = sites.iter().map(|l| (l.layer, l.path.as_str())).collect();
    assert_eq!(
        layers,
        [
            (Layer::GoTag, "models/user.go"),
            (Layer::GoType, "models/user.go"),
            (Layer::TsType, "src/types.ts"),
            (Layer::RustType, "src/user.rs"),
        ],
        "{sites:?}"
    );
}

#[test]
fn no_link_without_the_same_entity_or_with_two_candidates() {
    // `Post.name` is another entity's field of the same name.
    let post = "export interface Post {\n  name: string;\n}\n";
    let index = Index::build(&files(&[("migrations/001_users.sql", SQL), ("src/post.ts", post)]));
    let f = finding("sql-not-null-dropped", "migrations/001_users.sql", "users.name");
    assert!(index.sites(&f).is_empty());
    // Two interfaces named User in two files: which one the table feeds cannot be told.
    let index =
        Index::build(&files(&[("migrations/001_users.sql", SQL), ("web/types.ts", TS), ("admin/types.ts", TS)]));
    assert!(index.sites(&f).is_empty());
    // A site that is no stricter (the column admits NULL too) is no link.
    let loose = "export interface User {\n  name?: string;\n}\n";
    let nullable = "CREATE TABLE users (\n  id BIGINT PRIMARY KEY,\n  name VARCHAR(255)\n);\n";
    let f = finding("ts-property-made-optional", "src/types.ts", "User.name");
    let index = Index::build(&files(&[("migrations/001_users.sql", nullable), ("src/types.ts", loose)]));
    assert!(index.sites(&f).is_empty());
    let index = Index::build(&files(&[("migrations/001_users.sql", SQL), ("src/types.ts", loose)]));
    let layers: Vec<Layer> = index.sites(&f).iter().map(|l| l.layer).collect();
    assert_eq!(layers, [Layer::Sql]);
}

#[test]
fn a_rule_of_another_family_or_language_links_nothing() {
    assert!(!linkable("rust-unsafe-introduced"));
    assert!(!linkable("py-optional-widened"));
    assert!(linkable("sql-varchar-widened"));
    assert!(linkable("ts-zod-optional-added"));
}

#[test]
fn a_go_value_type_is_no_site_of_a_validation_tag_s_required() {
    let req = "package dto\n\ntype UserInsertReq struct {\n\tName string `binding:\"max=64\"`\n}\n";
    let model = "package models\n\ntype User struct {\n\tName string `binding:\"required\"`\n}\n";
    let sql = "CREATE TABLE users (\n  name VARCHAR(64) NOT NULL\n);\n";
    let index = Index::build(&files(&[("dto/user.go", req), ("models/user.go", model), ("schema.sql", sql)]));
    let f = finding("go-tag-required-removed", "dto/user.go", "UserInsertReq.Name");
    let sites = index.sites(&f);
    let sites: Vec<(Layer, &str)> = sites.iter().map(|l| (l.layer, l.path.as_str())).collect();
    assert_eq!(sites, [(Layer::Sql, "schema.sql")]);
}

#[test]
fn go_nullable_wrappers_promise_no_value() {
    // openapi-generator's `NullableString` and `database/sql`'s `NullString` (svix c7a8154f).
    let client = "package c\n\ntype User struct {\n\tName NullableString\n\tEmail sql.NullString\n}\n";
    let sql = "CREATE TABLE users (\n  name TEXT,\n  email TEXT\n);\n";
    let index = Index::build(&files(&[("client/user.go", client), ("schema.sql", sql)]));
    for symbol in ["users.name", "users.email"] {
        assert!(index.sites(&finding("sql-not-null-dropped", "schema.sql", symbol)).is_empty(), "{symbol}");
    }
}
