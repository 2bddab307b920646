-- The records store's tables, one per shape of kv table (core/src/store/kv/mod.rs); each
-- holds every table of its shape, told apart by `tbl`. Keys compare in "C" (byte
-- order), as the embedded backend's do, so scans and ranges read in the same order.
-- `chars` is what a row or entry holds in characters (what an account is charged for),
-- kept so a replace or delete knows what it takes away without reading the value back.
CREATE TABLE kv_rows (
    tbl text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value bytea NOT NULL,
    chars bigint NOT NULL,
    PRIMARY KEY (tbl, key)
);
CREATE TABLE kv_names (
    tbl text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (tbl, key)
);
-- A u64 as the bigint of the same bits.
CREATE TABLE kv_counts (
    tbl text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value bigint NOT NULL,
    PRIMARY KEY (tbl, key)
);
CREATE TABLE kv_sets (
    tbl text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    member text COLLATE "C" NOT NULL,
    PRIMARY KEY (tbl, key, member)
);
CREATE TABLE kv_logs (
    tbl text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    data text NOT NULL,
    chars bigint NOT NULL,
    PRIMARY KEY (tbl, key, seq)
);
