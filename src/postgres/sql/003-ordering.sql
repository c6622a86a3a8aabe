-- Migration 003: the ordering tables and functions of the Postgres store (DESIGN §3.4): reorder
-- checkpoints, version gates, snowflake clocks and leases. Each store operation is one call of one
-- function here (one statement, one round trip, atomic), mirroring ordering-checkpoint.lua,
-- version-gate.lua, snowflake-clock.lua and snowflake-lease.lua; the memory store
-- (memoryOrderingOps) is the model every answer is tested against.
--
-- Names, gates and keys are `text COLLATE "C"`: equality is then byte equality whatever the
-- database's collation, and the primary-key btrees compare with memcmp (no locale rules on the
-- hot path). Values and checkpoint data are `bytea` holding the caller's string as UTF-8: `text`
-- cannot hold U+0000, and the store keeps every string it is given byte for byte.
--
-- Concurrency under READ COMMITTED: every write is INSERT ... ON CONFLICT DO UPDATE ... WHERE, or
-- an UPDATE whose WHERE is the rule itself. ON CONFLICT locks the conflicting row even when its
-- WHERE is false, and an UPDATE re-checks its WHERE on the newest version of a row another
-- transaction changed meanwhile, so no decision is ever made on a row read before another writer
-- changed it (no read-then-write race).

CREATE TABLE __schema__.ordering_checkpoint (
  name text COLLATE "C" PRIMARY KEY,
  -- A safe integer (the store refuses others before any SQL): bigint holds it exactly.
  revision bigint NOT NULL,
  data bytea NOT NULL
);

-- Saves a checkpoint iff its revision is above the stored one, or it is the very save stored
-- (revision and data equal: a client re-sending a command whose reply it lost). One SQL
-- statement: the re-sent save rewrites the same row (a rare case, so a needless tuple there
-- costs less than a second statement on every save).
CREATE FUNCTION __schema__.checkpoint_save(p_name text, p_revision bigint, p_data bytea)
RETURNS boolean
LANGUAGE sql VOLATILE AS $$
  WITH saved AS (
    INSERT INTO __schema__.ordering_checkpoint AS c (name, revision, data)
    VALUES (p_name, p_revision, p_data)
    ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, data = excluded.data
    WHERE c.revision < excluded.revision OR (c.revision = excluded.revision AND c.data = excluded.data)
    RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM saved)
$$;

CREATE TABLE __schema__.version_gate (
  gate text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  -- Versions are integers of any size (an LSN, a snowflake id, a bigint): numeric compares them
  -- exactly, and prints an integer back in the canonical form it was given.
  version numeric NOT NULL,
  value bytea NOT NULL,
  PRIMARY KEY (gate, key)
);

-- Stores the value iff the version is above the stored one. plpgsql, two statements in one call:
-- a stale upsert must answer the stored version, which RETURNING cannot give when the row is not
-- updated; the second statement reads it under the lock the first one took (ON CONFLICT locks
-- the row whatever its WHERE said), so nothing changed in between. A duplicate or stale upsert
-- writes nothing.
CREATE FUNCTION __schema__.version_upsert(
  p_gate text, p_key text, p_version numeric, p_value bytea,
  OUT outcome text, OUT stored text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v numeric;
BEGIN
  INSERT INTO __schema__.version_gate AS g (gate, key, version, value)
  VALUES (p_gate, p_key, p_version, p_value)
  ON CONFLICT (gate, key) DO UPDATE SET version = excluded.version, value = excluded.value
  WHERE g.version < excluded.version;
  IF FOUND THEN
    outcome := 'applied';
    stored := p_version::text;
    RETURN;
  END IF;
  SELECT g.version INTO v FROM __schema__.version_gate AS g WHERE g.gate = p_gate AND g.key = p_key;
  outcome := CASE WHEN v = p_version THEN 'duplicate' ELSE 'stale' END;
  stored := v::text;
END
$$;

CREATE TABLE __schema__.snowflake_lease (
  name text COLLATE "C" PRIMARY KEY,
  -- The generator's persisted last timestamp (ms, a safe integer; -1 for none).
  ms bigint NOT NULL,
  -- The run holding the lease; '' when timestampAdvance wrote it last (as snowflake-clock.lua,
  -- whose SET drops the run).
  run text COLLATE "C" NOT NULL
);

-- Raises the persisted last timestamp (never lowers it) and returns it; a negative `ms` only reads
-- (-1 when none). The raise is one INSERT ... ON CONFLICT: when it did not raise (the stored one
-- is at least `ms`), the stored one is read under the lock it took.
CREATE FUNCTION __schema__.timestamp_advance(p_name text, p_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v bigint;
BEGIN
  IF p_ms >= 0 THEN
    INSERT INTO __schema__.snowflake_lease AS s (name, ms, run) VALUES (p_name, p_ms, '')
    ON CONFLICT (name) DO UPDATE SET ms = excluded.ms, run = ''
    WHERE s.ms < excluded.ms;
    IF FOUND THEN
      RETURN p_ms;
    END IF;
  END IF;
  SELECT s.ms INTO v FROM __schema__.snowflake_lease AS s WHERE s.name = p_name;
  RETURN coalesce(v, -1);
END
$$;

-- Takes or renews a generator's lease (OrderingStoreOps.leaseRenew, snowflake-lease.lua): held
-- when `p_run` holds it, or when `p_takeover` is given and the stored lease is at most it; then
-- raised to `p_ms` (never lowered) and held by `p_run`. A missing row is a lease of -1 held by ''.
-- When a missing row would be held the write is an INSERT ... ON CONFLICT (racing takers: the
-- first inserts, the others are judged on its row under its lock); when it would not, an UPDATE
-- alone, so a refused call never creates a row.
CREATE FUNCTION __schema__.lease_renew(
  p_name text, p_run text, p_ms bigint, p_takeover bigint,
  OUT held boolean, OUT ms bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v bigint;
BEGIN
  IF p_run = '' OR p_takeover >= -1 THEN
    INSERT INTO __schema__.snowflake_lease AS s (name, ms, run) VALUES (p_name, greatest(p_ms, -1), p_run)
    ON CONFLICT (name) DO UPDATE SET ms = greatest(s.ms, excluded.ms), run = excluded.run
    WHERE s.run = p_run OR s.ms <= p_takeover
    RETURNING s.ms INTO v;
  ELSE
    UPDATE __schema__.snowflake_lease AS s SET ms = greatest(s.ms, p_ms), run = p_run
    WHERE s.name = p_name AND (s.run = p_run OR s.ms <= p_takeover)
    RETURNING s.ms INTO v;
  END IF;
  IF FOUND THEN
    held := true;
    ms := v;
    RETURN;
  END IF;
  SELECT s.ms INTO v FROM __schema__.snowflake_lease AS s WHERE s.name = p_name;
  held := false;
  ms := coalesce(v, -1);
END
$$;
