-- The shared journal (issue 40): each collection's write-ahead log, when the index's
-- WAL is kept on PostgreSQL so every node of a cluster serves every collection
-- (quarry_index::journal). A record's LSN is taken from its collection's head row in
-- the appending transaction, whose row lock orders appenders: LSNs commit in order and
-- without gaps, so a reader that sees LSN n has every record before it.
CREATE TABLE quarry_journal_heads (
    collection text COLLATE "C" PRIMARY KEY,
    -- The last LSN appended (0: none).
    lsn bigint NOT NULL DEFAULT 0,
    -- The generation of the manifest published in object storage (0: none yet), and
    -- the lease epoch it was published under: together they name its object, so a
    -- node whose lease lapsed never overwrites the manifest another node published.
    manifest bigint NOT NULL DEFAULT 0,
    publisher bigint NOT NULL DEFAULT 0,
    -- Records up to this LSN are in that manifest's segments and dropped from here.
    covered bigint NOT NULL DEFAULT 0
);
CREATE TABLE quarry_journal (
    collection text COLLATE "C" NOT NULL,
    lsn bigint NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (collection, lsn)
);
