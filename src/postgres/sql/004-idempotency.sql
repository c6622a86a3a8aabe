-- Migration 004: the idempotency records of the Postgres store (DESIGN §3.6, §3.7): seed 002's
-- idempotency table, one row per (name, key), and one function per store operation (one
-- statement, one round trip, atomic), mirroring idempotency-*.lua; the memory store
-- (MemoryIdempotencyRecords) is the model every answer is tested against.
--
-- Time is the database's clock, in whole ms since the Unix epoch: clock_timestamp() (the time of
-- the call, not of the transaction's start, so a call inside a long caller transaction judges
-- leases by the real time). Times are bigint ms, as the store contract speaks them
-- (leaseExpiresAt, now, retryAfterMs): exact integer arithmetic, no timestamp conversion on the
-- hot path, whatever PostgreSQL version.
--
-- The primary key is (name, key), two columns, not one composite text: no encoding to get
-- injective (a name 'a:b' with key 'c' and a name 'a' with key 'b:c' are apart by construction),
-- and an operator reads the name and the key as they are. Both are `text COLLATE "C"`: byte
-- equality whatever the database's collation, and memcmp btree comparisons.
--
-- Concurrency under READ COMMITTED: begin answers a live record from a plain read, inserts a
-- missing one with ON CONFLICT DO NOTHING, and locks a dead one (SELECT ... FOR UPDATE) before
-- it takes it over; renew, complete and release are one UPDATE or DELETE whose WHERE is the
-- fencing rule, which PostgreSQL re-checks on the newest version of a row another transaction
-- changed meanwhile.

CREATE TABLE __schema__.idempotency (
  name text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  -- The payload's hash ('' when payloads are not hashed): another hash is a mismatch.
  event_hash text COLLATE "C" NOT NULL,
  status text NOT NULL CHECK (status IN ('in-progress', 'completed')),
  -- The lease owner token while in progress (it fences renew, complete and release); the token
  -- that completed the record after.
  token text COLLATE "C" NOT NULL,
  -- The serialized value once completed (NULL while in progress), the caller's string as UTF-8:
  -- `text` cannot hold U+0000, and a value is kept byte for byte.
  value bytea,
  created_at bigint NOT NULL,
  -- While in progress: the lease's end; the record is live while now < lease_expires_at.
  -- NULL once completed.
  lease_expires_at bigint,
  -- When the row may be deleted (cleanup). Completed: its ttl's end, and it is live while
  -- now < expires_at. In progress: the lease's end plus one more lease, as the Redis store keeps
  -- it (idempotency-batch.lua): a caller that retries an `in-progress` after its retryAfterMs, as
  -- it is told to, finds the dead record and is told `takeover: true`, while an abandoned key
  -- holds a row for at most two leases (plus the cleanup period).
  expires_at bigint NOT NULL,
  PRIMARY KEY (name, key),
  CHECK ((status = 'in-progress') = (lease_expires_at IS NOT NULL AND value IS NULL))
);

-- Cleanup walks expired rows oldest first.
CREATE INDEX idempotency_expires_at ON __schema__.idempotency (expires_at);

-- Reads the record of (name, key) and takes it when no live record is there, in one call
-- (IdempotencyStoreOps.idempotencyBegin). plpgsql: the answer depends on the record (live or
-- not, its state, its hash). A live record is answered from a plain read, without a row lock: a
-- live record changes only by its holder's renew, complete or release, and this answer is the
-- record as it was before any of those committed (a replay, the common repeat, writes nothing,
-- as on Redis). No row: INSERT ... ON CONFLICT DO NOTHING (one write for a new key); when a racing
-- begin inserted first, the insert waits for that one's transaction and does nothing, and the
-- next round judges the racer's row. A dead record is locked, judged again (a racer may have
-- taken it meanwhile), then taken. A row can vanish between two statements (released or cleaned
-- up meanwhile): at most three rounds, then a serialization failure, which the store retries
-- (context.ts).
CREATE FUNCTION __schema__.idempotency_begin(
  p_name text, p_key text, p_hash text, p_token text, p_lease_ms bigint,
  OUT outcome text, OUT now_ms bigint, OUT lease_expires_ms bigint, OUT takeover boolean,
  OUT retry_after_ms bigint, OUT stored_value bytea)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  r record;
BEGIN
  now_ms := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  FOR attempt IN 1..3 LOOP
    SELECT i.status, i.event_hash, i.value, i.lease_expires_at, i.expires_at INTO r
    FROM __schema__.idempotency AS i WHERE i.name = p_name AND i.key = p_key;
    IF NOT FOUND THEN
      INSERT INTO __schema__.idempotency
        (name, key, event_hash, status, token, value, created_at, lease_expires_at, expires_at)
      VALUES (p_name, p_key, p_hash, 'in-progress', p_token, NULL, now_ms, now_ms + p_lease_ms,
              now_ms + 2 * p_lease_ms)
      ON CONFLICT (name, key) DO NOTHING;
      IF FOUND THEN
        outcome := 'acquired';
        takeover := false;
        lease_expires_ms := now_ms + p_lease_ms;
        RETURN;
      END IF;
      CONTINUE;
    END IF;
    IF NOT ((r.status = 'completed' AND now_ms < r.expires_at)
            OR (r.status = 'in-progress' AND now_ms < r.lease_expires_at)) THEN
      -- Dead as read: locked and read again, since a racer may have begun it meanwhile.
      SELECT i.status, i.event_hash, i.value, i.lease_expires_at, i.expires_at INTO r
      FROM __schema__.idempotency AS i WHERE i.name = p_name AND i.key = p_key FOR UPDATE;
      CONTINUE WHEN NOT FOUND;
      IF NOT ((r.status = 'completed' AND now_ms < r.expires_at)
              OR (r.status = 'in-progress' AND now_ms < r.lease_expires_at)) THEN
        -- Taken over when a holder's lease ran out, begun afresh when its ttl did.
        UPDATE __schema__.idempotency AS i
        SET event_hash = p_hash, status = 'in-progress', token = p_token, value = NULL,
            created_at = now_ms, lease_expires_at = now_ms + p_lease_ms,
            expires_at = now_ms + 2 * p_lease_ms
        WHERE i.name = p_name AND i.key = p_key;
        outcome := 'acquired';
        takeover := r.status = 'in-progress';
        lease_expires_ms := now_ms + p_lease_ms;
        RETURN;
      END IF;
    END IF;
    -- Live.
    IF r.event_hash <> p_hash THEN
      outcome := 'mismatch';
    ELSIF r.status = 'completed' THEN
      outcome := 'completed';
      stored_value := r.value;
    ELSE
      outcome := 'in-progress';
      retry_after_ms := r.lease_expires_at - now_ms;
    END IF;
    RETURN;
  END LOOP;
  RAISE EXCEPTION 'idempotency_begin: the record of % kept changing under this call', p_key
    USING ERRCODE = 'serialization_failure';
END
$$;

-- Extends the holder's lease to now + leaseMs, iff `p_token` holds a live lease on the record.
CREATE FUNCTION __schema__.idempotency_renew(p_name text, p_key text, p_token text, p_lease_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
  UPDATE __schema__.idempotency AS i
  SET lease_expires_at = now_ms + p_lease_ms, expires_at = now_ms + 2 * p_lease_ms
  WHERE i.name = p_name AND i.key = p_key AND i.status = 'in-progress' AND i.token = p_token
    AND now_ms < i.lease_expires_at;
  RETURN FOUND;
END
$$;

-- Turns the in-progress record held by `p_token` into a completed one holding the value until
-- now + ttlMs, iff `p_token` holds a live lease on it (fencing: a lease that ran out is lost
-- whether or not another caller took the key yet).
CREATE FUNCTION __schema__.idempotency_complete(
  p_name text, p_key text, p_token text, p_value bytea, p_ttl_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
  UPDATE __schema__.idempotency AS i
  SET status = 'completed', value = p_value, lease_expires_at = NULL, expires_at = now_ms + p_ttl_ms
  WHERE i.name = p_name AND i.key = p_key AND i.status = 'in-progress' AND i.token = p_token
    AND now_ms < i.lease_expires_at;
  RETURN FOUND;
END
$$;

-- Deletes the in-progress record held by `p_token` (its fn failed), iff it holds a live lease.
CREATE FUNCTION __schema__.idempotency_release(p_name text, p_key text, p_token text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
  DELETE FROM __schema__.idempotency AS i
  WHERE i.name = p_name AND i.key = p_key AND i.status = 'in-progress' AND i.token = p_token
    AND now_ms < i.lease_expires_at;
  RETURN FOUND;
END
$$;

-- Deletes at most `p_limit` rows past their expires_at, oldest first, and returns how many.
-- SKIP LOCKED: a row a begin or a renew holds is live or about to be rewritten, and two cleanups
-- running at once share the work instead of queueing on each other's rows. The lock taken in the
-- subquery holds to the DELETE, and READ COMMITTED re-checks `expires_at <= now` on a row changed
-- meanwhile, so a record renewed or begun again is never deleted.
CREATE FUNCTION __schema__.idempotency_cleanup(p_limit int)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  n bigint;
BEGIN
  DELETE FROM __schema__.idempotency AS i
  WHERE (i.name, i.key) IN (
    SELECT e.name, e.key FROM __schema__.idempotency AS e
    WHERE e.expires_at <= now_ms
    ORDER BY e.expires_at
    LIMIT p_limit
    FOR UPDATE SKIP LOCKED);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$$;
