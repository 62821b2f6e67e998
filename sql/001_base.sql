-- 001_base: bookkeeping shared by every area.
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS counters (
    name  TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL DEFAULT 0 CHECK (value >= 0)
) STRICT;
