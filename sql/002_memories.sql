-- 002_memories: guard memories written by the widening scan.
-- One row per (cycle, file, symbol): the UNIQUE constraint is the dedupe, so a rerun
-- of the scan in the same cycle can never write a second memory for a symbol.
CREATE TABLE IF NOT EXISTS memories (
    id          INTEGER PRIMARY KEY,
    cycle       TEXT NOT NULL,
    file        TEXT NOT NULL,
    symbol      TEXT NOT NULL,
    rule        TEXT NOT NULL,
    language    TEXT NOT NULL,
    line        INTEGER NOT NULL CHECK (line >= 0),
    before_text TEXT NOT NULL,
    after_text  TEXT NOT NULL,
    issue       INTEGER CHECK (issue IS NULL OR issue >= 0),
    commit_oid  TEXT,
    content     TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    -- embedded | sent | failed: <why>
    backend     TEXT NOT NULL DEFAULT 'embedded',
    UNIQUE (cycle, file, symbol)
) STRICT;

CREATE INDEX IF NOT EXISTS memories_by_file ON memories (file, symbol);

-- Full-text index of the memories (rowid = memories.id), written in the same
-- transaction as the row it indexes.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (content, file, symbol, rule);
